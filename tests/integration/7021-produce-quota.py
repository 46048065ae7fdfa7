"""producer_byte_rate enforced on a real producer (confluent_kafka).

- A client-id quota of 1 MB/s (set with AlterClientQuotas, raw) holds a
  producer that writes as fast as it can to within 20% of 1 MB/s over
  about 10 s, counted in bytes the broker acknowledged (the broker counts
  whole Produce requests; 1 KB records keep the framing small).  The
  producer sees throttle time (librdkafka's throttle_cb).
- At the same time, on the same broker, a producer with another client-id
  and no quota is not held: it writes several times (>= 3x) the quota.
- Removing the quota lets the limited client id through again at once
  (its next requests carry no throttle time).
Rates here are what the broker enforces, not the machine's speed: the
unlimited producer's bound is far below what the broker does alone.
"""

import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, check, log, main  # noqa: E402
import quotawire as qw  # noqa: E402

from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

QUOTA = 1024 * 1024
RUN_S = 10.0
VALUE = b"q" * 1024


def produce_for(bootstrap, client_id, run_s, out):
    """Produces as fast as the client can for run_s; out gets acked bytes and throttle events."""
    out.update(acked=0, throttles=[], errors=0)

    def on_throttle(ev):
        out["throttles"].append(ev.throttle_time)

    def on_delivery(err, msg):
        if err:
            out["errors"] += 1
        else:
            out["acked"] += len(msg.value())

    p = Producer({"bootstrap.servers": bootstrap, "client.id": client_id, "linger.ms": 5, "batch.size": 16384,
                  "acks": 1, "throttle_cb": on_throttle, "queue.buffering.max.kbytes": 4096})
    t0 = time.monotonic()
    while time.monotonic() - t0 < run_s:
        try:
            p.produce("quota-t", VALUE, on_delivery=on_delivery)
            p.poll(0)
        except BufferError:
            p.poll(0.01)
    out["elapsed"] = time.monotonic() - t0
    out["acked_at_end"] = out["acked"]
    p.purge()
    p.flush(10)


def test():
    with Broker() as b:
        a = AdminClient({"bootstrap.servers": b.bootstrap})
        a.create_topics([NewTopic("quota-t", 1, 1)])["quota-t"].result(10)
        qw.set_quota(b.port, [("client-id", "limited")], producer_byte_rate=QUOTA)
        lim, free = {}, {}
        tl = threading.Thread(target=produce_for, args=(b.bootstrap, "limited", RUN_S, lim))
        tf = threading.Thread(target=produce_for, args=(b.bootstrap, "free", RUN_S, free))
        tl.start()
        tf.start()
        tl.join(60)
        tf.join(60)
        lim_rate = lim["acked_at_end"] / lim["elapsed"]
        free_rate = free["acked_at_end"] / free["elapsed"]
        log("limited %.0f B/s (%d throttle events, max %s ms), free %.0f B/s" % (
            lim_rate, len(lim["throttles"]), max(lim["throttles"] or [0]), free_rate))
        check(0.8 * QUOTA <= lim_rate <= 1.2 * QUOTA, "limited producer at %.0f B/s, within 20%% of %d" % (lim_rate, QUOTA))
        check(lim["throttles"] and max(lim["throttles"]) > 0, "the limited producer saw throttle time")
        check(free_rate >= 3 * QUOTA, "unlimited producer at %.0f B/s, >= 3x the quota" % free_rate)
        check(not free["throttles"] or max(free["throttles"]) == 0, "the unlimited producer was not throttled")


if __name__ == "__main__":
    main(test)

"""consumer_byte_rate enforced on a real consumer (confluent_kafka).

- 16 MB of 1 KB records are written first (no quota on the producer).
- A <default> client-id quota of 1 MB/s holds a consumer reading from the
  start as fast as it can to within 20% of 1 MB/s over about 10 s
  (counted in record values received from the first record on), and it sees throttle time
  (throttle_cb).
- At the same time a consumer whose client-id has its own, much larger
  quota (the more specific entity wins over <default>) reads all 16 MB,
  at several times (>= 3x) the limited rate.
- The limited client's rate and throttle time show in /metrics.
"""

import os
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, check, free_port, log, main  # noqa: E402
import quotawire as qw  # noqa: E402

from confluent_kafka import Consumer, Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

QUOTA = 1024 * 1024
RUN_S = 10.0
TOTAL = 16 * 1024
VALUE = b"c" * 1024
# small fetches (of batches kept small by the producer) so one answer is a
# small part of a second's quota
SMALL_FETCH = {"fetch.max.bytes": 65536, "max.partition.fetch.bytes": 65536, "message.max.bytes": 65536}


def fill(bootstrap):
    p = Producer({"bootstrap.servers": bootstrap, "client.id": "filler", "linger.ms": 5, "batch.size": 16384})
    for _ in range(TOTAL):
        while True:
            try:
                p.produce("quota-c", VALUE)
                break
            except BufferError:
                p.poll(0.01)
    check(p.flush(30) == 0, "16 MB written")


def consume_for(bootstrap, client_id, run_s, out, extra):
    out.update(bytes=0, throttles=[])

    def on_throttle(ev):
        out["throttles"].append(ev.throttle_time)

    c = Consumer(dict({"bootstrap.servers": bootstrap, "client.id": client_id, "group.id": "g-" + client_id,
                       "auto.offset.reset": "earliest", "enable.auto.commit": False,
                       "throttle_cb": on_throttle}, **extra))
    c.subscribe(["quota-c"])
    t0 = time.monotonic()
    deadline = t0 + 30  # the join, then run_s from the first record
    while time.monotonic() < deadline and out["bytes"] < TOTAL * len(VALUE):
        m = c.poll(0.1)
        if m is not None and not m.error():
            if not out["bytes"]:
                t0 = time.monotonic()
                deadline = t0 + run_s
            out["bytes"] += len(m.value())
    out["elapsed"] = time.monotonic() - t0
    c.close()


def test():
    http = free_port()
    with Broker(props={"metrics.listener": "http://127.0.0.1:%d" % http,
                       "group.initial.rebalance.delay.ms": 0}) as b:
        a = AdminClient({"bootstrap.servers": b.bootstrap})
        a.create_topics([NewTopic("quota-c", 1, 1)])["quota-c"].result(10)
        fill(b.bootstrap)
        qw.set_quota(b.port, [("client-id", None)], consumer_byte_rate=QUOTA)
        qw.set_quota(b.port, [("client-id", "fast")], consumer_byte_rate=1 << 40)
        lim, fast = {}, {}
        tl = threading.Thread(target=consume_for, args=(b.bootstrap, "slow", RUN_S, lim, SMALL_FETCH))
        tf = threading.Thread(target=consume_for, args=(b.bootstrap, "fast", RUN_S, fast, {}))
        tl.start()
        tf.start()
        tl.join(60)
        tf.join(60)
        lim_rate = lim["bytes"] / lim["elapsed"]
        fast_rate = fast["bytes"] / fast["elapsed"]
        log("limited %.0f B/s (%d throttle events, max %s s), fast %.0f B/s" % (
            lim_rate, len(lim["throttles"]), max(lim["throttles"] or [0]), fast_rate))
        check(0.8 * QUOTA <= lim_rate <= 1.2 * QUOTA, "limited consumer at %.0f B/s, within 20%% of %d" % (lim_rate, QUOTA))
        check(lim["throttles"] and max(lim["throttles"]) > 0, "the limited consumer saw throttle time")
        check(fast_rate >= 3 * QUOTA, "consumer with its own quota at %.0f B/s, >= 3x the default" % fast_rate)
        text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % http, timeout=10).read().decode()
        lines = [l for l in text.splitlines() if l.startswith("kafka_server_fetch_") and 'client_id="slow"' in l]
        log("\n".join(lines))
        rate = [float(l.split()[-1]) for l in lines if l.startswith("kafka_server_fetch_byte_rate")]
        thr = [float(l.split()[-1]) for l in lines if l.startswith("kafka_server_fetch_throttle_time")]
        check(rate and rate[0] > 0, "kafka_server_fetch_byte_rate for client slow")
        check(thr and thr[0] > 0, "kafka_server_fetch_throttle_time for client slow")


if __name__ == "__main__":
    main(test)

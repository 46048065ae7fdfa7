"""Kafka's relaxed flush policy: the high watermark is the LEO, and a rolled segment is flushed.

With log.flush.interval.ms set (10 minutes here) Gregor behaves as Kafka:
acks=all is answered from the page cache and consumers see the log end
offset at once (ListOffsets latest right after the answer). Unflushed data
waits for the interval, except that a segment is flushed when it rolls:
after 60 acks=1 batches of ~1 KiB over 16 KiB segments, every sealed
segment's .log has been synced in full (the LD_PRELOAD shim,
tests/lib/syncshim.c, records each sync) within a few seconds, while a
record appended to the active segment afterwards is not synced yet (nothing is flushed
before one interval has passed since start-up).
"""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, check, eq, log, main, wait_until  # noqa: E402
import idemwire as iw  # noqa: E402
from syncshim import SyncShim  # noqa: E402

TOPIC = "itest-relaxed"


def test():
    shim = SyncShim()
    overrides = {"num.partitions": "1", "log.flush.interval.ms": "600000", "log.segment.bytes": "16384"}
    with Broker(overrides=overrides, env=shim.env()) as b:
        c = iw.Client(b.port)
        eq(c.produce(TOPIC, 0, iw.batch(1, value=b"first"), acks=-1), (0, 0), "acks=all produce")
        eq(c.list_offset(TOPIC, 0), 1, "ListOffsets latest right after the answer")
        time.sleep(2)  # past the first housekeeping pass: nothing is flushed before the interval
        for i in range(60):
            eq(c.produce(TOPIC, 0, iw.batch(1, value=b"x" * 1000), acks=1)[0], 0, "acks=1 produce %d" % i)
        c.close()
        d = b.partition_dir(TOPIC)
        logs = sorted(f for f in os.listdir(d) if f.endswith(".log"))
        check(len(logs) >= 3, "the batches span at least 3 segments (%d)" % len(logs))
        sealed = [os.path.realpath(os.path.join(d, f)) for f in logs[:-1]]
        log("%d sealed segments; waiting for their flush" % len(sealed))

        def unflushed():
            synced = shim.synced_sizes()
            return [p for p in sealed if synced.get(p, -1) != os.path.getsize(p)]
        wait_until(lambda: not unflushed(), 5, "every sealed segment synced in full")
        c = iw.Client(b.port)
        eq(c.produce(TOPIC, 0, iw.batch(1, value=b"tail"), acks=1)[0], 0, "a small acks=1 produce (no roll)")
        c.close()
        eq(sorted(f for f in os.listdir(d) if f.endswith(".log")), logs, "segments after the small produce")
        time.sleep(1.5)
        active = os.path.realpath(os.path.join(d, logs[-1]))
        check(shim.synced_sizes().get(active, -1) < os.path.getsize(active),
              "the active segment's tail waits for log.flush.interval.ms")


main(test)

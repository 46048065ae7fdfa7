"""log.flush.offset.checkpoint.interval.ms decides when the recovery point is checkpointed.

With the interval at 10 minutes, 7 s of acks=all traffic (every record synced,
so the recovery point moves) must leave recovery-point-offset-checkpoint
unwritten; a clean shutdown still writes it, with the LEO.
"""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, eq, log, main  # noqa: E402

from confluent_kafka import Producer  # noqa: E402

TOPIC = "itest-ckpt-interval"


def checkpoint(b):
    """{(topic, partition): offset} of the checkpoint file, None if there is none."""
    try:
        with open(os.path.join(b.data_dir, "recovery-point-offset-checkpoint")) as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return None
    return {(t, int(p)): int(o) for t, p, o in (line.split() for line in lines[2:])}


def test():
    overrides = {"num.partitions": "1", "log.flush.offset.checkpoint.interval.ms": "600000"}
    with Broker(overrides=overrides) as b:
        p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all", "linger.ms": 1})
        t0 = time.monotonic()
        n = 0
        while time.monotonic() - t0 < 7:
            p.produce(TOPIC, value=b"m%d" % n, partition=0)
            n += 1
            p.flush(10)
            time.sleep(0.05)
        log("%d records acknowledged over 7 s" % n)
        ck = checkpoint(b)
        eq(ck.get((TOPIC, 0)) if ck else None, None, "checkpointed recovery point before the interval passed")
        eq(b.stop(), 0, "exit status")
        eq(checkpoint(b).get((TOPIC, 0)), n, "checkpoint written at the clean shutdown")


main(test)

"""The recovery-point checkpoint is written off the event loop.

The fsyncs of recovery-point-offset-checkpoint are held (LD_PRELOAD shim,
tests/lib/syncshim.c), as a slow disk would hold them with a checkpoint of
thousands of partitions.  The checkpoint interval is 1 s, so a write starts
and hangs; meanwhile acks=all produce requests (which need the event loop
and a sync round of the .log) must still be answered.  Once the hold is
released the checkpoint lands with the log end, and a clean shutdown still
writes the final one.
"""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, eq, log, main, wait_until  # noqa: E402
from syncshim import SyncShim  # noqa: E402

from confluent_kafka import Producer  # noqa: E402

TOPIC = "itest-ckpt-offloop"
CKPT = "recovery-point-offset-checkpoint"


def checkpoint(b):
    try:
        with open(os.path.join(b.data_dir, CKPT)) as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return {}
    return {(t, int(p)): int(o) for t, p, o in (line.split() for line in lines[2:])}


def test():
    shim = SyncShim()
    overrides = {"num.partitions": "1", "log.flush.offset.checkpoint.interval.ms": "1000"}
    with Broker(overrides=overrides, env=shim.env()) as b:
        p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all", "linger.ms": 1,
                      "message.timeout.ms": 8000})
        p.produce(TOPIC, value=b"first", partition=0)
        eq(p.flush(10), 0, "first record acknowledged")
        shim.hold(CKPT)
        wait_until(lambda: os.path.exists(os.path.join(b.data_dir, CKPT + ".tmp")), 10,
                   "a checkpoint write started (and hangs in its fsync)")
        log("checkpoint write hangs in fsync; producing meanwhile")
        acked = []
        t0 = time.monotonic()
        for i in range(20):
            p.produce(TOPIC, value=b"m%d" % i, partition=0,
                      on_delivery=lambda err, msg: acked.append(err is None))
            p.flush(5)
            if time.monotonic() - t0 > 15:
                break
        log("%d acks=all records answered in %.1fs while the checkpoint hangs" % (acked.count(True), time.monotonic() - t0))
        eq(acked.count(True), 20, "acks=all records acknowledged while the checkpoint fsync hangs")
        shim.release()
        eq(p.flush(15), 0, "records left unacknowledged")
        wait_until(lambda: checkpoint(b).get((TOPIC, 0)) == 21, 15, "checkpoint reaches the log end")
        eq(b.stop(), 0, "exit status")
        eq(checkpoint(b).get((TOPIC, 0)), 21, "checkpoint written at the clean shutdown")


main(test)

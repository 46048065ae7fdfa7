"""A parked acks=all produce is answered REQUEST_TIMED_OUT after its TimeoutMs.

The LD_PRELOAD shim (tests/lib/syncshim.c) holds every sync of a .log file,
so acks=all produces cannot complete. Two pipelined produces of an
idempotent producer with TimeoutMs 1000 and 1500 must be answered, in
order, with REQUEST_TIMED_OUT (7) within a few seconds instead of waiting
for the sync. Once syncs run again, the producer's retry of the timed-out
batch is answered like its original (a duplicate, at its offset), and a
new batch succeeds.
"""

import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, check, eq, log, main  # noqa: E402
import idemwire as iw  # noqa: E402
from syncshim import SyncShim  # noqa: E402

TOPIC = "itest-produce-timeout"
TIMED_OUT = 7


def test():
    shim = SyncShim()
    with Broker(overrides={"num.partitions": "1"}, env=shim.env()) as b:
        c = iw.Client(b.port)
        pid, epoch = c.init_pid()
        eq(c.produce(TOPIC, 0, iw.batch(1, pid, epoch, 0)), (0, 0), "first batch")

        shim.hold(".log")
        release = threading.Timer(8.0, shim.release)  # the old behaviour: answered only when the sync ends
        release.start()
        try:
            first, second = iw.batch(1, pid, epoch, 1, value=b"a"), iw.batch(1, pid, epoch, 2, value=b"b")
            t0 = time.monotonic()
            c1 = c.send_produce(TOPIC, 0, first, timeout_ms=1000)
            c2 = c.send_produce(TOPIC, 0, second, timeout_ms=1500)
            eq(c.recv_produce(c1, TOPIC, 0)[0], TIMED_OUT, "produce with TimeoutMs 1000 while the sync hangs")
            eq(c.recv_produce(c2, TOPIC, 0)[0], TIMED_OUT, "pipelined produce with TimeoutMs 1500")
            took = time.monotonic() - t0
            log("both answered REQUEST_TIMED_OUT after %.1f s" % took)
            check(took < 6, "answered before the sync ended (%.1f s)" % took)
        finally:
            release.cancel()
            shim.release()
        eq(c.produce(TOPIC, 0, first), (0, 1), "retry of the timed-out batch: its original offset")
        eq(c.produce(TOPIC, 0, iw.batch(1, pid, epoch, 3, value=b"c")), (0, 3), "a new batch")
        c.close()


main(test)

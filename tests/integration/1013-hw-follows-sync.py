"""Consumers never see what a power cut could take back.

Under the default (durable) policy the high watermark - what Fetch serves,
what ListOffsets latest returns, what bounds the LSO - is the offset the last
completed fdatasync covered. The LD_PRELOAD shim (tests/lib/syncshim.c)
holds every sync while two acks=1 records are produced: both are
acknowledged (acks=1 does not wait for a sync), but ListOffsets latest
(read_uncommitted and read_committed) stays at 1 and a consumer reads only
the first record. Once syncs run again the syncer syncs the partition
without any further produce, and the records become visible.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, eq, log, main, wait_until  # noqa: E402
import idemwire as iw  # noqa: E402
import kwire as kw  # noqa: E402
from syncshim import SyncShim, read_values  # noqa: E402

TOPIC = "itest-hw-sync"


def latest(port, isolation):
    """ListOffsets v2 latest -> offset (error must be 0)."""
    c = iw.Client(port)
    try:
        body = kw.i32(-1) + kw.i8(isolation) + kw.array([TOPIC], lambda t: kw.string(t) + kw.array(
            [0], lambda p: kw.i32(p) + kw.i64(-1)))
        r = c.call(2, 2, body)
        r.i32()  # throttle
        topics = r.array(lambda r: (r.string(), r.array(lambda r: (r.i32(), r.i16(), r.i64(), r.i64()))))
        _, err, _, off = topics[0][1][0]
        eq(err, 0, "ListOffsets error")
        return off
    finally:
        c.close()


def test():
    shim = SyncShim()
    with Broker(overrides={"num.partitions": "1"}, env=shim.env()) as b:
        c = iw.Client(b.port)
        eq(c.produce(TOPIC, 0, iw.batch(1, value=b"r0"), acks=1), (0, 0), "first acks=1 produce")
        wait_until(lambda: latest(b.port, 0) == 1, 10, "high watermark 1 once synced")

        shim.hold(".log")
        eq(c.produce(TOPIC, 0, iw.batch(1, value=b"r1"), acks=1), (0, 1), "acks=1 produce while syncs are held")
        eq(c.produce(TOPIC, 0, iw.batch(1, value=b"r2"), acks=1), (0, 2), "second acks=1 produce")
        eq(latest(b.port, 0), 1, "ListOffsets latest while unsynced")
        eq(latest(b.port, 1), 1, "ListOffsets latest read_committed while unsynced")
        eq(read_values(b.bootstrap, TOPIC, idle_s=1.5), [b"r0-0"], "records a consumer reads while unsynced")

        shim.release()
        log("syncs released: the records must become visible without another produce")
        wait_until(lambda: latest(b.port, 0) == 3, 10, "high watermark 3 after the sync")
        eq(read_values(b.bootstrap, TOPIC), [b"r0-0", b"r1-0", b"r2-0"], "records after the sync")
        c.close()


main(test)

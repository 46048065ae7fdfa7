"""A failed fdatasync takes the log directory offline; nothing is acknowledged after it.

On Linux a failed fdatasync may drop the dirty pages it could not write and a
later sync of the same file then succeeds without them (PostgreSQL's
"fsyncgate"), so the broker must never acknowledge anything after one. The
LD_PRELOAD shim (tests/lib/syncshim.c) holds every sync, three acks=all
produces park (two idempotent producers, one plain), then the held sync of
the .log fails with EIO:

- all three parked producers get KAFKA_STORAGE_ERROR (56);
- the idempotent producer's retry of the same batch is not answered as a
  "duplicate" success, and neither is anything later: acks=all and acks=1
  produces, a new batch, ListOffsets all answer KAFKA_STORAGE_ERROR, while
  syncs work again (the shim fails only one call);
- a SIGTERM does not mark the shutdown clean, and the next start recovers:
  the record acknowledged before the failure is there.
"""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, check, eq, log, main, wait_until  # noqa: E402
import idemwire as iw  # noqa: E402
import kwire as kw  # noqa: E402
from syncshim import SyncShim  # noqa: E402

TOPIC = "itest-sync-fail"
STORAGE = 56


def list_offsets(port, topic):
    """ListOffsets v1 latest -> (error_code, offset)."""
    c = iw.Client(port)
    try:
        body = kw.i32(-1) + kw.array([topic], lambda t: kw.string(t) + kw.array(
            [0], lambda p: kw.i32(p) + kw.i64(-1)))
        r = c.call(2, 1, body)
        topics = r.array(lambda r: (r.string(), r.array(lambda r: (r.i32(), r.i16(), r.i64(), r.i64()))))
        _, err, _, off = topics[0][1][0]
        return err, off
    finally:
        c.close()


def test():
    shim = SyncShim()
    with Broker(overrides={"num.partitions": "1"}, env=shim.env()) as b:
        a, a2, plain = iw.Client(b.port), iw.Client(b.port), iw.Client(b.port)
        pid, epoch = a.init_pid()
        pid2, epoch2 = a2.init_pid()
        eq(a.produce(TOPIC, 0, iw.batch(2, pid, epoch, 0, value=b"before")), (0, 0), "first batch, synced")

        shim.hold(".log")
        shim.fail_next(".log")
        lost = iw.batch(3, pid, epoch, 2, value=b"lost")
        corr = a.send_produce(TOPIC, 0, lost)
        corr2 = a2.send_produce(TOPIC, 0, iw.batch(1, pid2, epoch2, 0, value=b"lost2"))
        corr3 = plain.send_produce(TOPIC, 0, iw.batch(1, value=b"lost3"))
        time.sleep(0.5)  # all three are appended and parked behind the held sync
        shim.release()
        eq(a.recv_produce(corr, TOPIC, 0)[0], STORAGE, "parked idempotent produce after the failed sync")
        eq(a2.recv_produce(corr2, TOPIC, 0)[0], STORAGE, "second parked idempotent produce")
        eq(plain.recv_produce(corr3, TOPIC, 0)[0], STORAGE, "parked plain acks=all produce")
        check(not shim.fail_pending(), "the shim's failure was used")
        b.wait_log("is offline after a failed sync")

        eq(a.produce(TOPIC, 0, lost)[0], STORAGE, "retry of the lost batch (not a duplicate success)")
        eq(a.produce(TOPIC, 0, iw.batch(1, pid, epoch, 5, value=b"later"))[0], STORAGE, "a later acks=all batch")
        eq(plain.produce(TOPIC, 0, iw.batch(1, value=b"acks1"), acks=1)[0], STORAGE, "an acks=1 produce")
        eq(list_offsets(b.port, TOPIC)[0], STORAGE, "ListOffsets of the offline partition")
        for c in (a, a2, plain):
            c.close()

        log("stopping: the shutdown must not be marked clean")
        eq(b.stop(), 0, "exit status after SIGTERM")
        check(not os.path.exists(os.path.join(b.data_dir, ".kafka_cleanshutdown")),
              "no clean-shutdown marker after a failed sync")
        b.start()
        b.wait_log("recovered after an unclean shutdown")
        err, end = wait_until(lambda: (lambda r: r if r[0] == 0 else None)(list_offsets(b.port, TOPIC)), 10,
                              "ListOffsets after the restart")
        check(end >= 2, "the record acknowledged before the failure is there (LEO %d)" % end)
        c = iw.Client(b.port)
        pid3, epoch3 = c.init_pid()
        err, off = c.produce(TOPIC, 0, iw.batch(1, pid3, epoch3, 0, value=b"after"))
        eq((err, off), (0, end), "a new producer after the restart")
        c.close()


main(test)

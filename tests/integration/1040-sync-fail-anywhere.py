#!/usr/bin/python3
"""1040: a failed sync of any file in the log dir takes the whole dir offline.

A failed fsync is final (docs/durability.md, "When a sync fails"), not only
in the rounds that sync segments for acks=all: the producer snapshot a
segment roll writes, the recovery-point checkpoint, any file or directory
the broker syncs.  The broker runs under tests/lib/syncshim.so; four runs:

- checkpoint: the fsync of recovery-point-offset-checkpoint.tmp fails
  (written every log.flush.offset.checkpoint.interval.ms).  Afterwards an
  acks=all produce answers KAFKA_STORAGE_ERROR (56), an OffsetCommit
  answers an error and OffsetFetch does not show the offset it carried,
  and SIGTERM leaves no clean-shutdown marker; the next start recovers
  with the offset committed before the failure.
- snapshot: the fsync of the .snapshot.tmp a segment roll writes fails
  (log.segment.bytes tiny); the produce that rolled, and every later one,
  answers KAFKA_STORAGE_ERROR.
- offsets: the sync round of an OffsetCommit's __consumer_offsets append
  fails; the commit answers an error and OffsetFetch must not serve the
  appended but never synced offset.
- close: the syncfs of the log dir's file system at SIGTERM fails (it
  makes the producer snapshots written just before durable); the
  shutdown must not be marked clean.
Runtime ~10 s.
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, check, eq, log, main, wait_until  # noqa: E402
import idemwire as iw  # noqa: E402
import kwire as kw  # noqa: E402
from syncshim import SyncShim  # noqa: E402

TOPIC = "itest-1040"
GROUP = "itest-1040-g"
STORAGE = 56
MARKER = ".kafka_cleanshutdown"


def commit_body(offset):
    """OffsetCommit v2 of TOPIC-0 for GROUP (no member: a simple consumer)."""
    return (kw.string(GROUP) + kw.i32(-1) + kw.string("") + kw.i64(-1) + kw.array(
        [TOPIC], lambda t: kw.string(t) + kw.array([0], lambda p: kw.i32(p) + kw.i64(offset) + kw.string(""))))


def parse_commit(r):
    topics = r.array(lambda r: (r.string(), r.array(lambda r: (r.i32(), r.i16()))))
    return topics[0][1][0][1]


def commit(c, offset):
    """OffsetCommit v2 -> the partition's error code."""
    return parse_commit(c.call(8, 2, commit_body(offset)))


def fetch_offset(c):
    """OffsetFetch v3 of TOPIC-0 -> (group error, partition error, offset)."""
    body = kw.string(GROUP) + kw.array([TOPIC], lambda t: kw.string(t) + kw.array([0], kw.i32))
    r = c.call(9, 3, body)
    r.i32()
    topics = r.array(lambda r: (r.string(), r.array(lambda r: (r.i32(), r.i64(), r.string(), r.i16()))))
    err = r.i16()
    parts = [p for _, ps in topics for p in ps]
    return (err, parts[0][3], parts[0][1]) if parts else (err, 0, -1)


def run_checkpoint(shim):
    over = {"num.partitions": "1", "log.flush.offset.checkpoint.interval.ms": "100"}
    with Broker(overrides=over, env=shim.env()) as b:
        c = iw.Client(b.port)
        eq(c.produce(TOPIC, 0, iw.batch(3, value=b"before"))[0], 0, "acks=all produce before the failure")
        kw.wait_coordinator(b.port, GROUP)  # __consumer_offsets is made off the event loop
        eq(commit(c, 2), 0, "OffsetCommit before the failure")
        eq(fetch_offset(c), (0, 0, 2), "OffsetFetch before the failure")

        shim.fail_next("recovery-point-offset-checkpoint.tmp")
        wait_until(lambda: not shim.fail_pending(), 15, "the checkpoint's fsync failed")
        time.sleep(0.3)
        eq(c.produce(TOPIC, 0, iw.batch(1, value=b"after"))[0], STORAGE, "acks=all produce after the failure")
        check(commit(c, 3) != 0, "OffsetCommit after the failed checkpoint sync answers an error")
        got = fetch_offset(c)
        check(got[2] != 3, "OffsetFetch must not show the commit that failed (got %r)" % (got,))
        c.close()
        b.wait_log("is offline after a failed sync")

        log("SIGTERM: the shutdown must not be marked clean")
        eq(b.stop(), 0, "exit status after SIGTERM")
        check(not os.path.exists(os.path.join(b.data_dir, MARKER)), "no clean-shutdown marker")
        b.start()
        b.wait_log("recovered after an unclean shutdown")
        c = iw.Client(b.port)
        got = wait_until(lambda: (lambda f: f if f[0] == 0 else None)(fetch_offset(c)), 10, "OffsetFetch")
        eq(got, (0, 0, 2), "the offset committed before the failure, after the restart")
        eq(c.produce(TOPIC, 0, iw.batch(1, value=b"later"))[0], 0, "produce after the restart")
        c.close()


def run_snapshot(shim):
    over = {"num.partitions": "1", "log.segment.bytes": "400"}
    with Broker(overrides=over, env=shim.env()) as b:
        c = iw.Client(b.port)
        eq(c.produce(TOPIC, 0, iw.batch(1, value=b"x" * 100))[0], 0, "first produce")
        shim.fail_next(".snapshot.tmp")
        errs = []
        for i in range(20):
            errs.append(c.produce(TOPIC, 0, iw.batch(1, value=b"y" * 100))[0])
            if not shim.fail_pending():
                break
        check(not shim.fail_pending(), "a segment roll wrote a producer snapshot")
        eq(errs[-1], STORAGE, "the produce whose roll's snapshot sync failed")
        check(all(e == 0 for e in errs[:-1]), "produces before the failure succeeded: %r" % errs)
        eq(c.produce(TOPIC, 0, iw.batch(1, value=b"z"))[0], STORAGE, "a later acks=all produce")
        c.close()
        eq(b.stop(), 0, "exit status after SIGTERM")
        check(not os.path.exists(os.path.join(b.data_dir, MARKER)), "no clean-shutdown marker")


def run_close(shim):
    with Broker(overrides={"num.partitions": "1"}, env=shim.env()) as b:
        c = iw.Client(b.port)
        pid, epoch = c.init_pid()
        eq(c.produce(TOPIC, 0, iw.batch(2, pid, epoch, 0, value=b"m"))[0], 0, "idempotent produce")
        c.close()
        shim.fail_next_syncfs()
        eq(b.stop(), 0, "exit status after SIGTERM")
        check(not os.path.exists(shim._path("fail-syncfs")), "the shutdown synced the log dir's file system")
        check(any(f.endswith(".snapshot") for f in os.listdir(b.partition_dir(TOPIC, 0))),
              "the shutdown wrote a producer snapshot")
        check(not os.path.exists(os.path.join(b.data_dir, MARKER)),
              "no clean-shutdown marker after the syncfs covering the snapshot failed at close")


def run_offsets(shim):
    with Broker(overrides={"num.partitions": "1"}, env=shim.env()) as b:
        c = iw.Client(b.port)
        eq(c.produce(TOPIC, 0, iw.batch(3, value=b"m"))[0], 0, "produce")
        kw.wait_coordinator(b.port, GROUP)  # __consumer_offsets is made off the event loop
        eq(commit(c, 1), 0, "first OffsetCommit")
        shim.hold("__consumer_offsets")
        shim.fail_next("__consumer_offsets")
        _corr = iw._corr
        _corr[0] += 1
        corr = _corr[0]
        c.sock.sendall(kw.request(8, 2, corr, commit_body(9), client_id="idem-itest"))
        time.sleep(0.5)  # appended, parked behind the held sync
        shim.release()
        got, resp = kw.recv_response(c.sock)
        eq(got, corr, "correlation id")
        check(parse_commit(kw.Reader(resp)) != 0, "the OffsetCommit whose sync failed answers an error")
        check(not shim.fail_pending(), "the shim's failure was used")
        got = fetch_offset(c)
        check(got[2] != 9, "OffsetFetch must not serve an offset whose sync failed (got %r)" % (got,))
        c.close()


def test():
    run_checkpoint(SyncShim())
    run_snapshot(SyncShim())
    run_offsets(SyncShim())
    run_close(SyncShim())


main(test)

"""Idempotent producer, raw protocol: every answer of the sequence check and
of InitProducerId, byte for byte, with a tiny hand-built client (idemwire.py).

A. InitProducerId v0 -> new id, epoch 0; v4 with the id/epoch -> same id,
   epoch + 1 (KIP-360); exhausted epoch -> new id; only one of id/epoch set
   -> INVALID_REQUEST (42); TransactionalId "" -> 42.  (A non-empty
   transactional id goes to the transaction coordinator: 4xxx tests.)
B. Produce v3 with idempotent batches: in-sequence appends; a retried batch
   (any of the last 5) -> success with its ORIGINAL base offset, nothing
   appended; gap -> OUT_OF_ORDER_SEQUENCE_NUMBER (45); a batch older than
   the 5-batch window -> 45; stale epoch after a bump -> INVALID_PRODUCER_EPOCH
   (47); unknown producer id with sequence != 0 -> UNKNOWN_PRODUCER_ID (59),
   with sequence 0 -> appended; two batches of one producer in one request ->
   CORRUPT_MESSAGE (2, INVALID_RECORD from v8); producerId -1 with sequence 0
   (sarama) -> no checks, appended twice.
C. The state survives a clean restart (snapshot files) and kill -9 (rebuilt
   from a roll snapshot + the log tail): duplicates still get their original
   offsets, the next sequence still appends; producer ids stay unique.
D. Expiry (producer.id.expiration.ms) and DeleteRecords forget a producer:
   its next non-zero sequence -> UNKNOWN_PRODUCER_ID, sequence 0 -> appended.
Every scenario ends with another connection succeeding.
"""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, eq, check, log, main  # noqa: E402
import idemwire as iw  # noqa: E402

TOPIC = "idem-raw"


def part_a(b):
    c = iw.Client(b.port)
    pid, ep = c.init_pid(version=0)
    eq(ep, 0, "epoch of a new producer id")
    check(pid >= 0, "producer id %d >= 0" % pid)
    pid2, ep2 = c.init_pid(version=1)
    check(pid2 != pid, "second InitProducerId gives a different id (%d, %d)" % (pid, pid2))
    eq(c.init_pid(version=4, producer_id=pid, epoch=0), (pid, 1), "KIP-360 bump v4")
    eq(c.init_pid(version=3, producer_id=pid, epoch=1), (pid, 2), "KIP-360 bump v3")
    npid, nep = c.init_pid(version=4, producer_id=pid, epoch=32766)
    check(npid not in (pid, pid2, -1) and nep == 0, "exhausted epoch -> new id, epoch 0 (got %d/%d)" % (npid, nep))
    npid, nep = c.init_pid(version=4, producer_id=10 ** 15, epoch=3)
    check(npid < 10 ** 15 and nep == 0, "never-issued id -> new id (got %d/%d)" % (npid, nep))
    eq(c.init_pid(version=4, producer_id=pid, epoch=-1, want_err=42), (-1, -1), "only ProducerId set")
    eq(c.init_pid(version=2, txn_id="", want_err=42), (-1, -1), "empty TransactionalId")
    c.close()
    log("A: InitProducerId answers ok")
    return pid2


def part_b(b, pid):
    c = iw.Client(b.port)
    # the topic is auto-created by a first plain produce
    eq(c.produce(TOPIC, 0, iw.batch(3, pid=-1, seq=0)), (0, 0), "sarama-style non-idempotent batch")
    eq(c.produce(TOPIC, 0, iw.batch(3, pid=-1, seq=0)), (0, 3), "same again: no checks, appended")
    offs = []
    seq = 0
    for n in (2, 3, 1, 4, 2, 5, 1):
        err, off = c.produce(TOPIC, 0, iw.batch(n, pid=pid, epoch=0, seq=seq))
        eq(err, 0, "in-sequence batch seq %d" % seq)
        offs.append((seq, n, off))
        seq += n
    eq([o for _, _, o in offs], [6, 8, 11, 12, 16, 18, 23], "offsets of the in-sequence batches")
    leo = 24
    # duplicates of the last 5 batches: original offsets, nothing appended
    for s, n, off in offs[-5:]:
        eq(c.produce(TOPIC, 0, iw.batch(n, pid=pid, epoch=0, seq=s)), (0, off), "duplicate of seq %d" % s)
    eq(c.list_offset(TOPIC, 0), leo, "LEO after duplicates")
    # older than the window (batch 1 of 7), and a gap
    s, n, _ = offs[1]
    eq(c.produce(TOPIC, 0, iw.batch(n, pid=pid, epoch=0, seq=s))[0], 45, "batch older than the 5-batch window")
    eq(c.produce(TOPIC, 0, iw.batch(1, pid=pid, epoch=0, seq=seq + 1))[0], 45, "sequence gap")
    # same first sequence, different length: not a duplicate, out of order
    s, n, _ = offs[-1]
    eq(c.produce(TOPIC, 0, iw.batch(n + 1, pid=pid, epoch=0, seq=s))[0], 45, "overlapping batch")
    # two batches in one request from an idempotent producer
    blob = iw.batch(1, pid=pid, epoch=0, seq=seq) + iw.batch(1, pid=pid, epoch=0, seq=seq + 1)
    eq(c.produce(TOPIC, 0, blob)[0], 2, "two idempotent batches in one partition's records")
    eq(c.list_offset(TOPIC, 0), leo, "LEO after rejections")
    # epoch bump: sequence restarts at 0, old epoch fenced
    eq(c.init_pid(version=4, producer_id=pid, epoch=0), (pid, 1), "bump")
    eq(c.produce(TOPIC, 0, iw.batch(2, pid=pid, epoch=1, seq=5))[0], 45, "new epoch must start at sequence 0")
    eq(c.produce(TOPIC, 0, iw.batch(2, pid=pid, epoch=1, seq=0)), (0, leo), "new epoch, sequence 0")
    eq(c.produce(TOPIC, 0, iw.batch(1, pid=pid, epoch=0, seq=seq))[0], 47, "stale epoch")
    eq(c.produce(TOPIC, 0, iw.batch(1, pid=pid, epoch=1, seq=2)), (0, leo + 2), "epoch 1 continues")
    # unknown producer id
    eq(c.produce(TOPIC, 0, iw.batch(1, pid=pid + 777, epoch=0, seq=7))[0], 59, "unknown producer, seq 7")
    eq(c.produce(TOPIC, 0, iw.batch(1, pid=pid + 777, epoch=0, seq=0)), (0, leo + 3), "unknown producer, seq 0")
    # another partition keeps its own state
    eq(c.produce(TOPIC + "-b", 0, iw.batch(1, pid=pid, epoch=1, seq=3))[0], 59, "another partition does not know the producer")
    c.close()
    c = iw.Client(b.port)  # another connection still works
    eq(c.list_offset(TOPIC, 0), leo + 4, "LEO at the end of B")
    c.close()
    log("B: sequence checks ok")
    return leo + 4


def resend_checks(b, pid, leo, what):
    """After a restart: duplicates keep their offsets, the next batch appends."""
    c = iw.Client(b.port)
    eq(c.produce(TOPIC, 0, iw.batch(2, pid=pid, epoch=1, seq=0)), (0, leo - 4), "%s: duplicate of epoch 1 seq 0" % what)
    eq(c.produce(TOPIC, 0, iw.batch(1, pid=pid, epoch=1, seq=2)), (0, leo - 2), "%s: duplicate of epoch 1 seq 2" % what)
    eq(c.produce(TOPIC, 0, iw.batch(1, pid=pid, epoch=0, seq=99))[0], 47, "%s: stale epoch" % what)
    eq(c.produce(TOPIC, 0, iw.batch(1, pid=pid, epoch=1, seq=4))[0], 45, "%s: gap" % what)
    c.close()


def part_c(b, pid, leo):
    c = iw.Client(b.port)
    before = c.init_pid()[0]
    c.close()
    b.restart()
    snaps = [f for f in os.listdir(b.partition_dir(TOPIC, 0)) if f.endswith(".snapshot")]
    check("%020d.snapshot" % leo in snaps, "snapshot at the LEO %d after a clean shutdown: %r" % (leo, snaps))
    resend_checks(b, pid, leo, "after clean restart")
    b.kill9()
    for f in snaps:  # force the rebuild from the log
        os.remove(os.path.join(b.partition_dir(TOPIC, 0), f))
    b.start()
    resend_checks(b, pid, leo, "after kill -9, no snapshot")
    c = iw.Client(b.port)
    after = c.init_pid()[0]
    check(after > before, "producer id after restarts (%d) above the one before (%d)" % (after, before))
    # rolls write snapshots; kill -9 then rebuilds from the newest roll snapshot + the tail
    p2, _ = c.init_pid()
    offs = []
    for s in range(40):
        err, off = c.produce("idem-roll", 0, iw.batch(3, pid=p2, epoch=0, seq=3 * s, value=b"x" * 200))
        eq(err, 0, "idem-roll seq %d" % (3 * s))
        offs.append(off)
    c.close()
    snaps = sorted(f for f in os.listdir(b.partition_dir("idem-roll", 0)) if f.endswith(".snapshot"))
    check(len(snaps) == 2, "two newest roll snapshots kept, got %r" % snaps)
    b.kill9()
    since = b.log_size()
    b.start()
    c = iw.Client(b.port)
    for s in range(35, 40):
        eq(c.produce("idem-roll", 0, iw.batch(3, pid=p2, epoch=0, seq=3 * s, value=b"x" * 200)), (0, offs[s]),
           "after kill -9: duplicate seq %d" % (3 * s))
    eq(c.produce("idem-roll", 0, iw.batch(3, pid=p2, epoch=0, seq=120, value=b"x" * 200)), (0, 120),
       "after kill -9: next batch")
    c.close()
    b.wait_log("idem-roll-0': producer state of 1 producer(s) from the snapshot at", since=since)
    log("C: restart, kill -9 and roll snapshots ok")


def part_d():
    props = {"producer.id.expiration.ms": "1500", "log.retention.check.interval.ms": "200"}
    with Broker(props=props, name="3001-expiry") as b:
        c = iw.Client(b.port)
        pid, _ = c.init_pid()
        eq(c.produce("idem-exp", 0, iw.batch(1, pid=pid, epoch=0, seq=0)), (0, 0), "first batch")
        eq(c.produce("idem-exp", 0, iw.batch(1, pid=pid, epoch=0, seq=1)), (0, 1), "second batch")
        time.sleep(3.5)
        eq(c.produce("idem-exp", 0, iw.batch(1, pid=pid, epoch=0, seq=2))[0], 59, "after expiry")
        eq(c.produce("idem-exp", 0, iw.batch(1, pid=pid, epoch=0, seq=0)), (0, 2), "after expiry, seq 0")
        # DeleteRecords past the producer's last batch forgets it
        pid2, _ = c.init_pid()
        eq(c.produce("idem-del", 0, iw.batch(2, pid=pid2, epoch=0, seq=0)), (0, 0), "idem-del first")
        eq(c.produce("idem-del", 0, iw.batch(1, pid=-1, seq=0)), (0, 2), "idem-del plain")
        eq(c.delete_records("idem-del", 0, 2), (0, 2), "DeleteRecords to 2")
        eq(c.produce("idem-del", 0, iw.batch(1, pid=pid2, epoch=0, seq=2))[0], 59, "after DeleteRecords")
        c.close()
        b.restart()
        c = iw.Client(b.port)
        eq(c.produce("idem-del", 0, iw.batch(1, pid=pid2, epoch=0, seq=2))[0], 59, "after DeleteRecords + restart")
        eq(c.produce("idem-del", 0, iw.batch(1, pid=pid2, epoch=0, seq=0)), (0, 3), "sequence 0 accepted")
        c.close()
    log("D: expiry and DeleteRecords ok")


def test():
    with Broker(props={"log.segment.bytes": "4000"}) as b:
        pid = part_a(b)
        leo = part_b(b, pid)
        part_c(b, pid, leo)
    part_d()


main(test)

#!/usr/bin/python3
"""4012: completing a transaction is ordered for power loss, and a marker
that cannot be written is retried, never dropped.

The broker runs with tests/lib/fsyncfail.c preloaded: fdatasync of files
under a chosen partition fails with EIO while a flag file exists.

  A. fsync of the data partition fails during commit_transaction: the id
     stays in PrepareCommit (DescribeTransactions), never CompleteCommit,
     while the marker is not durable; the broker retries; once the fault
     is cleared it completes, the producer's commit succeeds, and
     read_committed sees the record.
  B. Same fault, then kill -9 and the data partition's log cut back to
     its last synced length (a power loss taking the unsynced marker):
     after the restart the coordinator re-sends the marker, the id
     reaches CompleteCommit and read_committed sees the record.  The
     stored marker carries the coordinator epoch: the leader epoch of
     __transaction_state-0, one more at each start.
  C. A transaction over two partitions, one of them offline at restart
     (its segment replaced by a directory, as 9004): the other gets its
     marker, the id stays PrepareCommit and the broker keeps retrying;
     once the partition is back (restart with its files restored) it gets
     its marker and the id completes.
Runtime ~25 s.
"""
import os
import shutil
import struct
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import idemwire as iw  # noqa: E402
from gregor import REPO_ROOT, Broker, check, eq, log, main, wait_until  # noqa: E402

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

PROPS = {"num.partitions": "1", "transaction.state.log.num.partitions": "1"}


def build_shim(tmp):
    so = os.path.join(tmp, "fsyncfail.so")
    subprocess.run(["gcc", "-shared", "-fPIC", "-O1", "-o", so, os.path.join(REPO_ROOT, "tests/lib/fsyncfail.c"),
                    "-ldl"], check=True)
    return so


def txn_state(b, txn_id):
    cl = iw.Client(b.port)
    try:
        err, state = cl.describe_txn(txn_id)
        eq(err, 0, "DescribeTransactions error")
        return state
    finally:
        cl.close()


def create(b, *topics):
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    for t, f in admin.create_topics([NewTopic(t, num_partitions=1, replication_factor=1) for t in topics]).items():
        f.result(30)


def start_txn(b, txn_id, records):
    p = Producer({"bootstrap.servers": b.bootstrap, "transactional.id": txn_id, "linger.ms": 0})
    errors = []
    p.init_transactions(30)
    p.begin_transaction()
    for topic, value in records:
        p.produce(topic, value=value, partition=0, on_delivery=lambda err, msg: errors.append(err))
    eq(p.flush(30), 0, "records acknowledged")
    eq(errors, [None] * len(records), "delivery reports")
    return p


def commit_in_background(p):
    out = {}

    def run():
        try:
            p.commit_transaction(60)
            out["ok"] = True
        except Exception as e:  # noqa: BLE001 - reported by the caller
            out["error"] = e
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, out


def read_committed(b, topic, n, timeout_s=15):
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "rc-" + topic, "isolation.level": "read_committed"})
    c.assign([TopicPartition(topic, 0, 0)])
    vals, deadline = [], time.time() + timeout_s
    while len(vals) < n and time.time() < deadline:
        m = c.poll(0.2)
        if m is not None and not m.error():
            vals.append(m.value())
    c.close()
    return vals


def stays(pred, seconds, what):
    deadline = time.time() + seconds
    while time.time() < deadline:
        check(pred(), what)
        time.sleep(0.1)


def segment(b, topic):
    return os.path.join(b.partition_dir(topic, 0), "%020d.log" % 0)


def markers(path):
    """[(base offset, commit, coordinator epoch)] of the control batches in a segment file."""
    out, data, pos = [], open(path, "rb").read(), 0
    while pos + 61 <= len(data):
        base, size = struct.unpack(">qi", data[pos:pos + 12])
        attrs = struct.unpack(">h", data[pos + 21:pos + 23])[0]
        if attrs & 0x20:
            rec = iw.kw.Reader(data[pos + 61:pos + 12 + size])
            rec_len = rec.take(1)  # varint length (< 64)
            del rec_len
            rec.take(1)  # attributes
            rec.take(1)  # timestamp delta 0
            rec.take(1)  # offset delta 0
            rec.take(1)  # key length 4 (varint 8)
            rec.i16()
            kind = rec.i16()
            rec.take(1)  # value length 6 (varint 12)
            rec.i16()
            out.append((base, kind == 1, rec.i32()))
        pos += 12 + size
    return out


def leader_epoch(b, topic):
    lines = open(os.path.join(b.partition_dir(topic, 0), "leader-epoch-checkpoint")).read().split("\n")
    return int(lines[2 + int(lines[1]) - 1].split()[0])


def scenario_a(b, flag):
    create(b, "dura")
    p = start_txn(b, "ta", [("dura", b"a1")])
    open(flag, "w").close()
    t, out = commit_in_background(p)
    wait_until(lambda: txn_state(b, "ta") == "PrepareCommit", 10, "PrepareCommit")
    stays(lambda: txn_state(b, "ta") == "PrepareCommit", 2, "no CompleteCommit while the marker is not durable")
    check("fdatasync failed" in b.log_text(), "the failed fsync was logged")
    os.unlink(flag)
    wait_until(lambda: txn_state(b, "ta") == "CompleteCommit", 10, "CompleteCommit once the marker is synced")
    t.join(30)
    eq(out, {"ok": True}, "commit_transaction result")
    eq(read_committed(b, "dura", 1), [b"a1"], "A: read_committed")
    eq([m[1:] for m in markers(segment(b, "dura"))], [(True, leader_epoch(b, "__transaction_state"))],
       "A: one COMMIT marker with the coordinator epoch")
    p.flush(5)


def scenario_b(b, flag):
    create(b, "durb")
    p = start_txn(b, "tb", [("durb", b"b1")])
    synced = os.path.getsize(segment(b, "durb"))
    open(flag, "w").close()
    t, out = commit_in_background(p)
    wait_until(lambda: txn_state(b, "tb") == "PrepareCommit" and os.path.getsize(segment(b, "durb")) > synced,
               10, "PrepareCommit with the marker appended")
    epoch_before = leader_epoch(b, "__transaction_state")
    b.kill9()
    with open(segment(b, "durb"), "r+b") as f:
        f.truncate(synced)  # the marker was never synced: a power cut takes it
    os.unlink(flag)
    b.start()
    wait_until(lambda: txn_state(b, "tb") == "CompleteCommit", 15, "B: completed after the restart")
    eq(read_committed(b, "durb", 1), [b"b1"], "B: read_committed after power loss")
    epoch = leader_epoch(b, "__transaction_state")
    eq(epoch, epoch_before + 1, "B: coordinator epoch bumped by the restart")
    eq([m[1:] for m in markers(segment(b, "durb"))], [(True, epoch)], "B: the re-sent marker and its epoch")
    t.join(1)


def scenario_c(b, flag):
    create(b, "okc", "offc")
    p = start_txn(b, "tc", [("okc", b"c-ok"), ("offc", b"c-off")])
    open(flag, "w").close()
    t, out = commit_in_background(p)
    wait_until(lambda: txn_state(b, "tc") == "PrepareCommit", 10, "C: PrepareCommit")
    b.kill9()
    os.unlink(flag)
    pdir = b.partition_dir("offc", 0)
    saved = pdir + ".saved"
    shutil.move(pdir, saved)
    os.makedirs(os.path.join(pdir, "%020d.log" % 0))  # offline at start
    since = b.log_size()
    b.start()
    b.wait_log("cannot write the COMMIT marker to 'offc-0'", 10, since=since)
    eq(read_committed(b, "okc", 1), [b"c-ok"], "C: the online partition got its marker")
    stays(lambda: txn_state(b, "tc") == "PrepareCommit", 1.5, "C: PrepareCommit while a partition is offline")
    since = b.log_size()
    time.sleep(1.2)
    check(b.log_text()[since:].count("cannot write the COMMIT marker to 'offc-0'") >= 1, "C: marker retried")
    b.stop()
    shutil.rmtree(pdir)
    shutil.move(saved, pdir)
    b.start()
    wait_until(lambda: txn_state(b, "tc") == "CompleteCommit", 15, "C: completed once the partition is back")
    eq(read_committed(b, "offc", 1), [b"c-off"], "C: read_committed on the partition that was offline")
    t.join(1)


def test():
    with Broker(props=PROPS, start=False) as b:
        flag = os.path.join(b.tmp, "fsync-fail")
        os.environ["LD_PRELOAD"] = build_shim(b.tmp)
        os.environ["ASAN_OPTIONS"] = os.environ.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0"
        os.environ["GREGOR_FSYNC_FAIL_FLAG"] = flag
        os.environ["GREGOR_FSYNC_FAIL_PATH"] = "/dur"
        b.start()
        scenario_a(b, flag)
        log("A: ok")
        scenario_b(b, flag)
        log("B: ok")
        os.environ["GREGOR_FSYNC_FAIL_PATH"] = "/offc-0/"
        b.restart()
        scenario_c(b, flag)
        log("C: ok")
        b.stop()


main(test)

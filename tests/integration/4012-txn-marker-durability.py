#!/usr/bin/python3
"""4012: completing a transaction is ordered for power loss, and a marker
that cannot be written is retried, never dropped.

The broker runs with tests/lib/syncshim.c preloaded (tests/lib/syncshim.py):
it makes one fdatasync of a chosen partition fail with EIO, and records
what each sync covered for a power cut. A failed sync is final for the log
directory until a restart (docs/durability.md).

  A. The data partition's fdatasync fails while commit_transaction waits
     for its COMMIT marker: the log dir goes offline and the id stays in
     PrepareCommit (DescribeTransactions): no CompleteCommit is written,
     EndTxn is not answered with success (commit_transaction times out),
     read_committed sees nothing; the failed retries are logged as errors
     once (debug "txn" lines show them going on every 500 ms). After a
     restart the Prepare* record is replayed and the marker re-sent: the
     id reaches CompleteCommit, the producer's retried commit succeeds and
     read_committed sees the record exactly once.
  B. Same fault, then kill -9 and a power cut (every log cut back to its
     last synced length: the unsynced marker is gone): after the restart
     the coordinator re-sends the marker, the id reaches CompleteCommit
     and read_committed sees the record. The stored marker carries the
     coordinator epoch: the leader epoch of __transaction_state-0, one
     more at each start.
  C. A transaction over two partitions, one of them offline at restart
     (its segment replaced by a directory, as 9004): the other gets its
     marker, the id stays PrepareCommit and the broker keeps retrying;
     once the partition is back (restart with its files restored) it gets
     its marker and the id completes.
Runtime ~35 s.
"""
import os
import shutil
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import idemwire as iw  # noqa: E402
from eos import read_committed  # noqa: E402
from gregor import Broker, check, eq, log, main, wait_until  # noqa: E402
from syncshim import SyncShim, read_values  # noqa: E402

from confluent_kafka import KafkaException, Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

PROPS = {"num.partitions": "1", "transaction.state.log.num.partitions": "1", "log.debug": "txn"}
RETRY_LOG_S = 10  # TXN_RETRY_LOG_MS: a transaction's failing retries are logged as errors at most this often


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


def error_lines(text, needle):
    return [line for line in text.splitlines() if " ERROR " in line and needle in line]


def scenario_a(b, shim):
    create(b, "dura")
    p = start_txn(b, "ta", [("dura", b"a1")])
    shim.fail_next("/dura-0/")
    since = b.log_size()
    try:
        p.commit_transaction(6)
        check(False, "A: commit_transaction succeeded after a failed fsync of its marker")
    except KafkaException as e:
        err = e.args[0]
        log("A: commit_transaction while the log dir is offline: %s" % err)
        check(err.retriable() and not err.fatal() and not err.txn_requires_abort(), "A: a retriable error")
    check(not shim.fail_pending(), "A: the armed fdatasync failure happened")
    text = b.log_text()[since:]
    eq(text.count("fdatasync failed"), 1, "A: the failed fsync logged once")
    check("is offline after a failed sync" in text, "A: the log dir went offline")
    eq(txn_state(b, "ta"), "PrepareCommit", "A: no CompleteCommit while the marker is not durable")
    retries = text.count("'ta': cannot write the COMMIT marker to 'dura-0'")
    check(retries >= 4, "A: the marker retried every 500 ms (%d debug lines)" % retries)
    eq(len(error_lines(text, "'ta':")), 1, "A: the failing retries logged as an error once in %d s" % RETRY_LOG_S)
    eq(read_committed(b, "dura", 1, timeout_s=2), [], "A: read_committed sees nothing")
    stays(lambda: txn_state(b, "ta") == "PrepareCommit", 1, "A: PrepareCommit until a restart")
    b.restart()
    wait_until(lambda: txn_state(b, "ta") == "CompleteCommit", 15, "A: CompleteCommit after the restart")
    p.commit_transaction(30)  # the retry of the commit that timed out: answered as complete
    eq(read_values(b.bootstrap, "dura", isolation="read_committed"), [b"a1"], "A: read_committed, exactly once")
    ms = markers(segment(b, "dura"))
    check(ms, "A: a COMMIT marker stored")
    eq(set(m[1] for m in ms), {True}, "A: only COMMIT markers")
    eq(ms[-1][2], leader_epoch(b, "__transaction_state"), "A: the re-sent marker has the new coordinator epoch")


def scenario_b(b, shim):
    create(b, "durb")
    p = start_txn(b, "tb", [("durb", b"b1")])
    synced = os.path.getsize(segment(b, "durb"))
    shim.fail_next("/durb-0/")
    t, out = commit_in_background(p)
    wait_until(lambda: txn_state(b, "tb") == "PrepareCommit" and os.path.getsize(segment(b, "durb")) > synced
               and not shim.fail_pending(), 10, "PrepareCommit with the marker appended, its fsync failed")
    epoch_before = leader_epoch(b, "__transaction_state")
    b.kill9()
    cut = shim.power_cut(b.data_dir)  # the marker was never synced: a power cut takes it
    eq(os.path.getsize(segment(b, "durb")), synced, "B: the power cut took the marker")
    check(segment(b, "durb") in cut, "B: the data partition's log was cut")
    b.start()
    wait_until(lambda: txn_state(b, "tb") == "CompleteCommit", 15, "B: completed after the restart")
    eq(read_committed(b, "durb", 1), [b"b1"], "B: read_committed after power loss")
    epoch = leader_epoch(b, "__transaction_state")
    eq(epoch, epoch_before + 1, "B: coordinator epoch bumped by the restart")
    eq([m[1:] for m in markers(segment(b, "durb"))], [(True, epoch)], "B: the re-sent marker and its epoch")
    t.join(1)


def scenario_c(b, shim):
    create(b, "okc", "offc")
    p = start_txn(b, "tc", [("okc", b"c-ok"), ("offc", b"c-off")])
    shim.fail_next("/offc-0/")
    t, out = commit_in_background(p)
    wait_until(lambda: txn_state(b, "tc") == "PrepareCommit" and not shim.fail_pending(), 10, "C: PrepareCommit")
    b.kill9()
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
    time.sleep(2)  # retried every 500 ms, logged at debug level between the once-per-10-s errors
    check(b.log_text()[since:].count("cannot write the COMMIT marker to 'offc-0'") >= 2, "C: marker retried")
    b.stop()
    shutil.rmtree(pdir)
    shutil.move(saved, pdir)
    b.start()
    wait_until(lambda: txn_state(b, "tc") == "CompleteCommit", 15, "C: completed once the partition is back")
    eq(read_committed(b, "offc", 1), [b"c-off"], "C: read_committed on the partition that was offline")
    t.join(1)


def test():
    shim = SyncShim()
    with Broker(props=PROPS, env=shim.env()) as b:
        scenario_a(b, shim)
        log("A: ok")
        scenario_b(b, shim)
        log("B: ok")
        scenario_c(b, shim)
        log("C: ok")
        b.stop()


main(test)

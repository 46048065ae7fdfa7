"""Hanging transactions found and ended with gregor-transactions.

Two transactions whose coordinator state is lost: "lost" (3 records at
hang-0, timestamps an hour old) and "lost2" (2 records at hang-1, epoch 1)
are opened over the raw protocol (InitProducerId, AddPartitionsToTxn,
transactional Produce), a plain record follows on hang-0, then the broker is
stopped and __transaction_state deleted: the partitions still hold the open
transactions, no coordinator will ever end them, and read_committed stops
at their first offsets.  After the restart a confluent_kafka
producer opens a transaction ("alive", topic live, 10-minute timeout) and is
SIGKILLed: its coordinator still tracks it, so it is not hanging.

gregor-transactions then must:
  list                   the live id only, with Kafka's columns
  describe               the live id's state and partitions; the lost id ->
                         exit 1 TRANSACTIONAL_ID_NOT_FOUND
  describe-producers     hang-0's producer: epoch, coordinator epoch -1,
                         last sequence 2, timestamp, start offset 0
  find-hanging           hang-0 (Duration 60 min) and hang-1 with
                         --broker-id 0, only hang-0 with --topic hang
                         --partition 0; not the live transaction even past a
                         0-minute timeout (its coordinator has the partition)
  abort --start-offset   ends hang-0: the LSO reaches the log end and a
                         read_committed consumer reads the plain record only;
                         a second try exits 1 (no open transaction there)
  abort --producer-id    with a stale epoch -> exit 1 INVALID_PRODUCER_EPOCH;
                         with the right one ends hang-1
after which find-hanging lists nothing, also after a kill -9 and restart.
"""

import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, build_bin, check, eq, log, main, run, wait_until  # noqa: E402
import idemwire as iw  # noqa: E402
import txnwire as tw  # noqa: E402
from eos import end_offset  # noqa: E402

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

TOOL = build_bin("gregor-transactions")
HOUR_MS = 3600 * 1000


def tool(b, *args, rc=0):
    p = run([TOOL, "--bootstrap-server", b.bootstrap] + list(args), timeout_s=60, check_rc=False)
    out, err = p.stdout.decode(), p.stderr.decode()
    eq(p.returncode, rc, "exit status of %s (stderr: %s)" % (" ".join(args), err.strip()))
    return out, err


def table(out, header):
    """Kafka's prettyPrintTable: every cell padded to its column and followed by a tab."""
    lines = out.split("\n")
    eq(lines[-1], "", "output ends with a newline")
    rows = []
    for line in lines[:-1]:
        cells = line.split("\t")
        eq(cells[-1], "", "each row ends with a tab: %r" % line)
        rows.append(cells[:-1])
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    for r in rows:
        eq([len(c) for c in r], widths, "cells padded to the column width: %r" % r)
    rows = [[c.rstrip() for c in r] for r in rows]
    eq(rows[0], header, "header")
    return rows[1:]


def open_lost_transactions(b):
    c = tw.Client(b.port)
    old = int(time.time() * 1000) - HOUR_MS
    pid, ep = c.init_pid(txn_id="lost")
    eq(c.add_partitions("lost", pid, ep, "hang", [0]), {0: 0}, "AddPartitionsToTxn lost")
    eq(c.produce_txn("lost", "hang", 0, iw.batch(3, pid, ep, 0, ts=old, transactional=True)), (0, 0), "lost: records 0-2")
    c.init_pid(txn_id="lost2")
    pid2, ep2 = c.init_pid(txn_id="lost2")
    eq(c.add_partitions("lost2", pid2, ep2, "hang", [1]), {1: 0}, "AddPartitionsToTxn lost2")
    eq(c.produce_txn("lost2", "hang", 1, iw.batch(2, pid2, ep2, 0, ts=old, transactional=True)), (0, 0), "lost2: records 0-1")
    c.close()
    p = Producer({"bootstrap.servers": b.bootstrap})
    p.produce("hang", value=b"plain", partition=0)
    eq(p.flush(10), 0, "plain record delivered")
    return (pid, ep, old), (pid2, ep2)


def forget_coordinator(b):
    b.stop()
    gone = [d for d in os.listdir(b.data_dir) if d.startswith("__transaction_state-")]
    check(gone, "__transaction_state exists")
    for d in gone:
        shutil.rmtree(os.path.join(b.data_dir, d))
    b.start()


def check_views(b, lost, alive_pid):
    pid, ep, old = lost
    rows = table(tool(b, "list")[0], ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"])
    eq(rows, [["alive", "0", str(alive_pid), "Ongoing"]], "list")
    rows = table(tool(b, "describe", "--transactional-id", "alive")[0],
                 ["CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
                  "TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs",
                  "TopicPartitions"])
    eq(len(rows), 1, "describe: one row")
    r = rows[0]
    eq(r[:6] + r[8:], ["0", "alive", str(alive_pid), "0", "Ongoing", "600000", "live-0"], "describe alive")
    check(0 <= int(r[7]) < 60000 and abs(int(r[6]) - time.time() * 1000) < 60000, "start/duration %r" % r[6:8])
    _, err = tool(b, "describe", "--transactional-id", "lost", rc=1)
    check("Failed to describe transaction state of transactional-id `lost`: TRANSACTIONAL_ID_NOT_FOUND" in err,
          "describe lost: %r" % err)
    rows = table(tool(b, "describe-producers", "--topic", "hang", "--partition", "0")[0],
                 ["ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence", "LastTimestamp",
                  "CurrentTransactionStartOffset"])
    eq(rows, [[str(pid), str(ep), "-1", "2", str(old), "0"]], "describe-producers hang-0")
    _, err = tool(b, "describe-producers", "--topic", "nope", "--partition", "0", rc=1)
    check("UNKNOWN_TOPIC_OR_PARTITION" in err, "describe-producers of an unknown topic: %r" % err)


HANG_HDR = ["Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch", "StartOffset", "LastTimestamp",
            "Duration(min)"]


def check_find_hanging(b, lost, lost2):
    pid, ep, old = lost
    row0 = ["hang", "0", str(pid), str(ep), "-1", "0", str(old), "60"]
    out = tool(b, "find-hanging", "--broker-id", "0")[0]
    log("find-hanging --broker-id 0:\n" + out)
    rows = table(out, HANG_HDR)
    eq(sorted(rows), [row0, ["hang", "1", str(lost2[0]), str(lost2[1]), "-1", "0", str(old), "60"]],
       "find-hanging --broker-id 0")
    eq(table(tool(b, "find-hanging", "--topic", "hang", "--partition", "0")[0], HANG_HDR), [row0],
       "find-hanging --topic hang --partition 0")
    time.sleep(0.1)
    eq(table(tool(b, "find-hanging", "--topic", "live", "--max-transaction-timeout", "0")[0], HANG_HDR), [],
       "the live transaction is not hanging")


def check_abort(b, lost, lost2):
    eq(end_offset(b, "hang", 0), 0, "LSO of hang-0 held by the lost transaction")
    out, _ = tool(b, "abort", "--topic", "hang", "--partition", "0", "--start-offset", "0")
    eq(out, "", "abort prints nothing")
    eq(end_offset(b, "hang", 0), 5, "LSO of hang-0 at the log end (records 0-2, plain 3, marker 4)")
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "rc", "isolation.level": "read_committed",
                  "enable.partition.eof": True})
    c.assign([TopicPartition("hang", 0, 0)])
    vals, eof = [], False
    deadline = time.time() + 15
    while time.time() < deadline and not eof:
        m = c.poll(0.5)
        if m is not None and m.error():
            eof = True
        elif m is not None:
            vals.append(m.value())
    c.close()
    eq((vals, eof), ([b"plain"], True), "read_committed reads past the aborted transaction")
    _, err = tool(b, "abort", "--topic", "hang", "--partition", "0", "--start-offset", "0", rc=1)
    check("Could not find any open transactions starting at offset 0 on partition hang-0" in err, repr(err))

    pid2, ep2 = lost2
    common = ["abort", "--topic", "hang", "--partition", "1", "--producer-id", str(pid2), "--coordinator-epoch", "-1"]
    _, err = tool(b, *(common + ["--producer-epoch", str(ep2 - 1)]), rc=1)
    check("Failed to abort transaction AbortTransactionSpec(topicPartition=hang-1, producerId=%d, producerEpoch=%d, "
          "coordinatorEpoch=0): INVALID_PRODUCER_EPOCH" % (pid2, ep2 - 1) in err, repr(err))
    eq(end_offset(b, "hang", 1), 0, "a refused abort changes nothing")
    tool(b, *(common + ["--producer-epoch", str(ep2)]))
    eq(end_offset(b, "hang", 1), 3, "LSO of hang-1 past its marker")
    eq(table(tool(b, "find-hanging", "--broker-id", "0")[0], HANG_HDR), [], "nothing hangs any more")


ALIVE = '''
import sys, time
from confluent_kafka import Producer
p = Producer({"bootstrap.servers": sys.argv[1], "transactional.id": "alive", "transaction.timeout.ms": 600000})
p.init_transactions(30)
p.begin_transaction()
p.produce("live", value=b"open", partition=0)
assert p.flush(10) == 0
print("ready", flush=True)
time.sleep(600)
'''


def kill_mid_transaction(b):
    """A confluent_kafka producer SIGKILLed inside a transaction with a 10-minute timeout."""
    p = subprocess.Popen([sys.executable, "-c", ALIVE, b.bootstrap], stdout=subprocess.PIPE)
    try:
        eq(p.stdout.readline(), b"ready\n", "the producer opened its transaction")
    finally:
        p.kill()
        p.wait(10)


def test():
    props = {"transaction.state.log.num.partitions": "1"}
    with Broker(props=props) as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        for t, n in (("hang", 2), ("live", 1)):
            admin.create_topics([NewTopic(t, num_partitions=n, replication_factor=1)])[t].result(30)
        lost, lost2 = open_lost_transactions(b)
        forget_coordinator(b)
        kill_mid_transaction(b)
        alive_pid = [r for r in tw.Client(b.port).list_transactions()[2] if r[0] == "alive"][0][1]
        check_views(b, lost, alive_pid)
        check_find_hanging(b, lost, lost2)
        check_abort(b, lost, lost2)
        wait_until(lambda: end_offset(b, "live", 0) == 0, 5, "the live transaction still holds its LSO")
        b.kill9()
        b.start()
        eq((end_offset(b, "hang", 0), end_offset(b, "hang", 1)), (5, 3), "after kill -9 the markers still end both")
        eq(table(tool(b, "find-hanging", "--broker-id", "0")[0], HANG_HDR), [], "nothing hangs after kill -9")
        log("hanging transactions found and aborted")


main(test)

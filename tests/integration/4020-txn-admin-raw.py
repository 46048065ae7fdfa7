"""The transaction-operator APIs over the raw protocol (txnwire.py): what
each answers, field by field, and every error code.

A. ApiVersions advertises DescribeProducers 0, DescribeTransactions 0,
   ListTransactions 0-1 and WriteTxnMarkers 0-1.
B. A transaction of "tx-a" (InitProducerId twice: epoch 1) holding 3 records
   at offsets 0-2 of txa-0:
   DescribeTransactions: Ongoing, producer id/epoch, timeout, start time,
   partitions {txa: [0]}; an unknown id -> TRANSACTIONAL_ID_NOT_FOUND (105),
   "" -> INVALID_REQUEST (42).
   ListTransactions v0/v1: the id with its producer id and state; state,
   producer id and (v1) duration filters; an unknown state filter is
   reported in UnknownStateFilters.
   DescribeProducers: txa-0 has the producer (epoch 1, last sequence 2,
   the batch's timestamp, transaction start offset 0), txa-1 has none, an
   unknown partition or topic -> UNKNOWN_TOPIC_OR_PARTITION (3), an invalid
   topic name -> INVALID_TOPIC_EXCEPTION (17).
C. WriteTxnMarkers v0 and v1, per partition: a stale epoch ->
   INVALID_PRODUCER_EPOCH (47) and nothing appended, unknown partition or
   topic -> 3, producer id -1 -> 42; an ABORT with the producer's epoch ->
   0, the marker lands at offset 3, the partition's producer no longer has
   an open transaction and the LSO reaches the log end.
D. Transactional offsets staged by TxnOffsetCommit (OffsetFetch v7
   RequireStable -> UNSTABLE_OFFSET_COMMIT, 88) are dropped by an ABORT
   marker written to __consumer_offsets and made visible by a COMMIT one.
Ends with a fresh connection succeeding.
"""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, eq, check, log, main  # noqa: E402
import idemwire as iw  # noqa: E402
import kwire as kw  # noqa: E402
import txnwire as tw  # noqa: E402
from eos import end_offset  # noqa: E402

from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

TOPIC = "txa"


def part_a(b):
    s = kw.connect(b.port)
    s.sendall(kw.request(18, 0, 1, kw.api_versions_v0_body()))
    _, body = kw.recv_response(s)
    s.close()
    err, keys, _ = kw.parse_api_versions_v0(body)
    eq(err, 0, "ApiVersions error")
    eq({k: keys.get(k) for k in (27, 61, 65, 66)}, {27: (0, 1), 61: (0, 0), 65: (0, 0), 66: (0, 1)},
       "advertised versions of WriteTxnMarkers, DescribeProducers, DescribeTransactions, ListTransactions")


def part_b(b, c):
    pid, ep = c.init_pid(version=0, txn_id="tx-a")
    pid2, ep = c.init_pid(version=0, txn_id="tx-a")
    eq((pid2, ep), (pid, 1), "second InitProducerId bumps the epoch")
    eq(c.add_partitions("tx-a", pid, ep, TOPIC, [0]), {0: 0}, "AddPartitionsToTxn")
    ts = int(time.time() * 1000) - 5000
    eq(c.produce_txn("tx-a", TOPIC, 0, iw.batch(3, pid, ep, 0, ts=ts, transactional=True)), (0, 0), "transactional produce")

    d = c.describe_transactions(["tx-a", "nope", ""])
    a = d["tx-a"]
    eq((a["error"], a["state"], a["producer_id"], a["epoch"], a["timeout_ms"], a["topics"]),
       (0, "Ongoing", pid, 1, 60000, {TOPIC: [0]}), "DescribeTransactions tx-a")
    check(abs(a["start_ms"] - time.time() * 1000) < 60000, "start time %d is recent" % a["start_ms"])
    eq(d["nope"]["error"], 105, "DescribeTransactions of an unknown id: TRANSACTIONAL_ID_NOT_FOUND")
    eq(d[""]["error"], 42, "DescribeTransactions of \"\": INVALID_REQUEST")

    mine = ("tx-a", pid, "Ongoing")
    err, unknown, txns = c.list_transactions()
    eq((err, unknown, mine in txns), (0, [], True), "ListTransactions v0 lists tx-a")
    err, unknown, txns = c.list_transactions(states=["Ongoing", "Bogus"])
    eq((err, unknown, txns), (0, ["Bogus"], [mine]), "state filter with an unknown state")
    eq(c.list_transactions(states=["Empty"])[2], [], "state filter Empty")
    eq(c.list_transactions(pids=[pid])[2], [mine], "producer id filter")
    eq(c.list_transactions(pids=[pid + 1000])[2], [], "producer id filter, another id")
    eq(c.list_transactions(duration=3600000, version=1)[2], [], "v1: open less than an hour")
    time.sleep(0.05)
    eq(c.list_transactions(duration=10, version=1)[2], [mine], "v1: open longer than 10 ms")
    eq(c.list_transactions(duration=-1, version=1)[2], [mine], "v1: no duration filter")

    p = c.describe_producers({TOPIC: [0, 1, 7], "nope": [0], "bad name!": [0]})
    eq(p[(TOPIC, 0)][0], 0, "DescribeProducers txa-0 error")
    eq(p[(TOPIC, 0)][2], [dict(producer_id=pid, epoch=1, last_sequence=2, last_timestamp=ts, coordinator_epoch=-1,
                               txn_start_offset=0)], "producers of txa-0")
    eq(p[(TOPIC, 1)], (0, None, []), "txa-1 has no producer")
    eq(p[(TOPIC, 7)][:2], (3, None), "unknown partition")
    eq(p[("nope", 0)][0], 3, "unknown topic")
    eq(p[("bad name!", 0)][0], 17, "invalid topic name")
    return pid, ep


def part_c(b, c, pid, ep):
    eq(end_offset(b, TOPIC), 0, "LSO held at the open transaction")
    for version in (0, 1):
        got = c.write_txn_markers([(pid, ep - 1, False, {TOPIC: [0, 7], "nope": [0]}, 0),
                                   (-1, 0, False, {TOPIC: [1]}, 0)], version=version)
        eq(got, {(pid, TOPIC, 0): 47, (pid, TOPIC, 7): 3, (pid, "nope", 0): 3, (-1, TOPIC, 1): 42},
           "WriteTxnMarkers v%d errors" % version)
    eq(c.list_offset(TOPIC, 0), 3, "nothing appended by refused markers")
    eq(c.write_txn_markers([(pid, ep, False, {TOPIC: [0]}, 0)]), {(pid, TOPIC, 0): 0}, "ABORT marker")
    eq(c.list_offset(TOPIC, 0), 4, "the marker is at offset 3")
    prods = c.describe_producers({TOPIC: [0]})[(TOPIC, 0)][2]
    eq([(x["producer_id"], x["epoch"], x["txn_start_offset"]) for x in prods], [(pid, 1, -1)],
       "no open transaction after the marker")
    eq(end_offset(b, TOPIC), 4, "LSO at the log end")


def part_d(b, c):
    """Markers on __consumer_offsets end staged transactional offsets: ABORT drops them, COMMIT shows them."""
    for txn_id, commit, want in (("tx-b", False, -1), ("tx-c", True, 2)):
        group = "g-" + txn_id
        pid, ep = c.init_pid(txn_id=txn_id)
        eq(c.add_offsets(txn_id, pid, ep, group), 0, "AddOffsetsToTxn %s" % txn_id)
        eq(c.txn_offset_commit(txn_id, group, pid, ep, TOPIC, 0, 2), 0, "TxnOffsetCommit %s" % txn_id)
        eq(c.offset_fetch_stable(group, TOPIC, 0), (88, -1), "staged offset: UNSTABLE_OFFSET_COMMIT")
        eq(c.write_txn_markers([(pid, ep, commit, {"__consumer_offsets": [0]}, 0)]),
           {(pid, "__consumer_offsets", 0): 0}, "%s marker on __consumer_offsets" % ("COMMIT" if commit else "ABORT"))
        eq(c.offset_fetch_stable(group, TOPIC, 0), (0, want), "committed offset after the marker")


def test():
    props = {"transaction.state.log.num.partitions": "1", "offsets.topic.num.partitions": "1"}
    with Broker(props=props) as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        admin.create_topics([NewTopic(TOPIC, num_partitions=2, replication_factor=1)])[TOPIC].result(30)
        part_a(b)
        c = tw.Client(b.port)
        pid, ep = part_b(b, c)
        part_c(b, c, pid, ep)
        part_d(b, c)
        c.close()
        part_a(b)
        log("transaction operator APIs answered as Kafka's")


main(test)

"""Cluster mode: __transaction_state is a replicated topic in ZooKeeper and a
transactional id's coordinator is the leader of its partition, which takes
the id's transactions over when its broker dies, as in Kafka.

ZooKeeper and three brokers in the chroot /gregor/c203, 3 s ZooKeeper
sessions; transaction.state.log.num.partitions 5.

  1. the first FindCoordinator of a transactional id answers
     COORDINATOR_NOT_AVAILABLE and writes /brokers/topics/__transaction_state:
     5 partitions of transaction.state.log.replication.factor (default 3)
     replicas, /config/topics/__transaction_state with cleanup.policy=compact
     and min.insync.replicas = transaction.state.log.min.isr (default 2)
  2. from every broker, FindCoordinator v1 of each id names the Metadata
     leader of partition abs(String.hashCode) % 5
  3. InitProducerId, AddPartitionsToTxn and EndTxn of an id sent to a broker
     that does not lead its partition answer NOT_COORDINATOR (16)
  4. a topic whose 3 partitions have the same replicas, in the same order,
     as the id's __transaction_state partition (so its leaders move with the
     coordinator): a confluent_kafka transactional producer commits, aborts
     and commits; read_committed sees the committed records only,
     read_uncommitted the aborted ones too
  5. with a transaction open (its records acknowledged), the coordinator's
     broker is killed with -9: another broker is named coordinator; the
     producer's commit either succeeds, or fails and the transaction is
     aborted (abortable) or the producer is fenced and replaced; the records
     are sent again then.  read_committed sees every committed record exactly
     once, and a new producer of the id initialises (the new coordinator
     has the id and no transaction left open)
"""

import json
import os
import signal
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from confluent_kafka import KafkaException  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

import kwire  # noqa: E402
from gregor import check, eq, log, main, wait_until  # noqa: E402
from eos import read_all, txn_producer  # noqa: E402
from zookeeper import running_cluster, wait_listed  # noqa: E402

CHROOT = "/gregor/c203"
NPARTS = 5
TXN_TOPIC = "__transaction_state"
TID = "tx-5203"
IDS = [TID, "polygenelubricants", "grüppe", "a", "txn-7"]
TOPIC = "t5203"
SETTINGS = {"zookeeper_session_timeout_ms": 3000, "zookeeper_connection_timeout_ms": 1000,
            "transaction_state_log_num_partitions": NPARTS, "offsets_topic_num_partitions": 3,
            "group_initial_rebalance_delay_ms": 0}


def txn_leaders(port):
    """Metadata v1 of __transaction_state -> {partition: leader}."""
    r = kwire.call(port, 3, 1, kwire.metadata_v1_body([TXN_TOPIC]))
    err, parts = kwire.parse_metadata_v1(r.d[r.p:])["topics"].get(TXN_TOPIC, (3, []))
    return {idx: leader for _e, idx, leader in parts} if err == 0 else {}


def init_pid(port, tid):
    """InitProducerId v1 -> error."""
    r = kwire.call(port, 22, 1, kwire.string(tid) + kwire.i32(60000))
    r.i32()
    return r.i16()


def add_partitions(port, tid):
    """AddPartitionsToTxn v1 of TOPIC-0 -> that partition's error."""
    body = (kwire.string(tid) + kwire.i64(0) + kwire.i16(0) +
            kwire.array([TOPIC], lambda t: kwire.string(t) + kwire.array([0], kwire.i32)))
    r = kwire.call(port, 24, 1, body)
    r.i32()
    res = r.array(lambda r: (r.string(), r.array(lambda r: (r.i32(), r.i16()))))
    return res[0][1][0][1]


def end_txn(port, tid):
    """EndTxn v1 (commit) -> error."""
    r = kwire.call(port, 26, 1, kwire.string(tid) + kwire.i64(0) + kwire.i16(0) + kwire.i8(1))
    r.i32()
    return r.i16()


def send(p, batch):
    p.begin_transaction()
    for i, v in enumerate(batch):
        p.produce(TOPIC, value=v.encode(), partition=i % 3)
    eq(p.flush(30), 0, "records left unsent")


def zk_setup(zc, brokers):
    """Steps 1-3."""
    wait_listed(brokers)  # the replication factor is clamped to the brokers live at the first request
    eq(kwire.find_coordinator(brokers[0].port, TID, 1)[0], 15, "the first FindCoordinator (COORDINATOR_NOT_AVAILABLE)")
    wait_until(lambda: zc.exists(CHROOT + "/brokers/topics/" + TXN_TOPIC), 10, "__transaction_state in ZooKeeper")
    assign = json.loads(zc.get(CHROOT + "/brokers/topics/" + TXN_TOPIC)[0])["partitions"]
    eq(sorted(int(p) for p in assign), list(range(NPARTS)), "partitions of __transaction_state")
    check(all(len(r) == 3 for r in assign.values()), "replication factor 3: %s" % assign)
    conf = json.loads(zc.get(CHROOT + "/config/topics/" + TXN_TOPIC)[0])["config"]
    eq((conf.get("cleanup.policy"), conf.get("min.insync.replicas")), ("compact", "2"), "topic config")
    for b in brokers:
        wait_until(lambda: all(kwire.find_coordinator(b.port, t, 1)[0] == 0 for t in IDS), 30,
                   "a coordinator for every id from " + b.bootstrap)
    leaders = txn_leaders(brokers[0].port)
    for b in brokers:
        for t in IDS:
            eq(kwire.find_coordinator(b.port, t, 1)[1], leaders[kwire.coordinator_partition(t, NPARTS)],
               "coordinator of '%s' named by %s" % (t, b.bootstrap))
    return leaders[kwire.coordinator_partition(TID, NPARTS)], assign[str(kwire.coordinator_partition(TID, NPARTS))]


def test():
    with running_cluster((1, 2, 3), CHROOT, **SETTINGS) as (zk, zc, brokers):
        bootstrap = ",".join(b.bootstrap for b in brokers)
        coord, replicas = zk_setup(zc, brokers)
        log("'%s': coordinator broker %d, replicas %s" % (TID, coord, replicas))
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for f in admin.create_topics([NewTopic(TOPIC, 3, replica_assignment=[replicas] * 3)]).values():
            f.result(30)
        for node, b in enumerate(brokers, 1):
            if node != coord:
                wait_until(lambda: init_pid(b.port, TID) == 16, 10, "NOT_COORDINATOR from " + b.bootstrap)
                eq((add_partitions(b.port, TID), end_txn(b.port, TID)), (16, 16),
                   "AddPartitionsToTxn, EndTxn at broker %d" % node)

        p = txn_producer(bootstrap, TID)
        committed = []
        for n, commit in ((1, True), (2, False), (3, True)):
            batch = ["b%d-%d" % (n, i) for i in range(30)]
            send(p, batch)
            if commit:
                p.commit_transaction(30)
                committed += batch
            else:
                p.abort_transaction(30)
        eq(sorted(read_all(bootstrap, TOPIC, 3, "read_committed", len(committed))), sorted(committed), "read_committed")
        eq(len(read_all(bootstrap, TOPIC, 3, "read_uncommitted", 90)), 90, "read_uncommitted sees the aborted too")
        log("commit, abort, commit at coordinator %d" % coord)

        batch = ["b4-%d" % i for i in range(30)]
        send(p, batch)
        victim = brokers[coord - 1]
        victim.proc.send_signal(signal.SIGKILL)
        victim.proc.wait(timeout=10)
        victim.proc = None
        others = [b for b in brokers if b is not victim]
        log("coordinator %d killed with -9, a transaction open" % coord)
        for b in others:
            wait_until(lambda: kwire.find_coordinator(b.port, TID, 1)[0] == 0 and
                       kwire.find_coordinator(b.port, TID, 1)[1] != coord,
                       30, "a new coordinator named by " + b.bootstrap)
        outcome = "committed"
        for attempt in range(5):
            try:
                p.commit_transaction(60)
                break
            except KafkaException as e:
                err = e.args[0]
                check(attempt < 4, "commit keeps failing: %s" % err)
                if err.txn_requires_abort():
                    outcome = "aborted, sent again"
                    p.abort_transaction(60)
                elif err.retriable():
                    continue
                else:
                    outcome = "fenced, a new producer sent again"
                    p = txn_producer(",".join(b.bootstrap for b in others), TID)
                send(p, batch)
        committed += batch
        log("the open transaction: %s" % outcome)
        got = read_all(",".join(b.bootstrap for b in others), TOPIC, 3, "read_committed", len(committed), 60)
        eq(sorted(got), sorted(committed), "read_committed after the kill: every committed record once")
        p2 = txn_producer(",".join(b.bootstrap for b in others), TID)
        p2.begin_transaction()
        p2.abort_transaction(30)
        log("the new coordinator has '%s', no transaction left open" % TID)


if __name__ == "__main__":
    main(test)

"""Cluster mode: a transaction's markers reach partitions led by every
broker (WriteTxnMarkers from the coordinator to each leader), and
sendOffsetsToTransaction works with a group coordinated on another broker.

ZooKeeper and three brokers in the chroot /gregor/c204, 3 s ZooKeeper
sessions; __transaction_state of 5 and __consumer_offsets of 3 partitions.

  1. a topic of 6 partitions (replication factor 3) whose leaders are on all
     three brokers; a group whose coordinator is not the transactional id's
  2. a confluent_kafka transactional producer writes 20 records to every
     partition and sends the group's offsets in each transaction: commit,
     abort, commit.  read_committed sees the committed records only,
     read_uncommitted the aborted ones too; the group's committed offset is
     the last committed transaction's, not the aborted one's
  3. a fourth transaction is left open (records acknowledged) and the
     coordinator's broker is killed with -9: the producer commits, or aborts
     (abortable) or is fenced and replaced and sends again; read_committed
     through the other brokers sees every committed record exactly once
"""

import os
import signal
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from confluent_kafka import Consumer, KafkaException, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

import kwire  # noqa: E402
from gregor import check, eq, log, main, wait_until  # noqa: E402
from eos import read_all, txn_producer  # noqa: E402
from zookeeper import running_cluster, wait_listed  # noqa: E402

CHROOT = "/gregor/c204"
TID = "tx-5204"
TOPIC = "t5204"
NPARTS = 6
PER_PART = 20
SETTINGS = {"zookeeper_session_timeout_ms": 3000, "zookeeper_connection_timeout_ms": 1000,
            "transaction_state_log_num_partitions": 5, "offsets_topic_num_partitions": 3,
            "group_initial_rebalance_delay_ms": 0}


def coordinator(brokers, key, key_type):
    wait_until(lambda: kwire.find_coordinator(brokers[0].port, key, key_type)[0] == 0, 30, "a coordinator for " + key)
    return kwire.find_coordinator(brokers[0].port, key, key_type)[1]


def leaders(port):
    r = kwire.call(port, 3, 1, kwire.metadata_v1_body([TOPIC]))
    err, parts = kwire.parse_metadata_v1(r.d[r.p:])["topics"][TOPIC]
    return {idx: leader for _e, idx, leader in parts} if err == 0 else {}


def send(p, n, meta=None):
    batch = ["b%d-%d-%d" % (n, part, i) for part in range(NPARTS) for i in range(PER_PART)]
    p.begin_transaction()
    for v in batch:
        p.produce(TOPIC, value=v.encode(), partition=int(v.split("-")[1]))
    eq(p.flush(30), 0, "records left unsent")
    if meta is not None:
        p.send_offsets_to_transaction([TopicPartition(TOPIC, 0, 100 + n)], meta, 30)
    return batch


def commit_through_kill(p, batch, n, bootstrap):
    """Commits the open transaction after the coordinator's loss; -> (producer, outcome)."""
    outcome = "committed"
    for attempt in range(5):
        try:
            p.commit_transaction(60)
            return p, outcome
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
                p = txn_producer(bootstrap, TID)
            eq(send(p, n), batch, "the batch sent again")
    return p, outcome


def test():
    with running_cluster((1, 2, 3), CHROOT, **SETTINGS) as (zk, zc, brokers):
        wait_listed(brokers)
        bootstrap = ",".join(b.bootstrap for b in brokers)
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for f in admin.create_topics([NewTopic(TOPIC, NPARTS, 3)]).values():
            f.result(30)
        wait_until(lambda: len(set(leaders(brokers[0].port).values()) & {1, 2, 3}) == 3, 30,
                   "leaders on all three brokers")
        tcoord = coordinator(brokers, TID, 1)
        group = next(g for g in ("g5204-%d" % i for i in range(50)) if coordinator(brokers, g, 0) != tcoord)
        log("transaction coordinator %d; group '%s' at %d; leaders %s" %
            (tcoord, group, coordinator(brokers, group, 0), leaders(brokers[0].port)))
        gc = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
        meta = gc.consumer_group_metadata()

        p = txn_producer(bootstrap, TID)
        committed = []
        for n, commit in ((1, True), (2, False), (3, True)):
            batch = send(p, n, meta)
            if commit:
                p.commit_transaction(30)
                committed += batch
            else:
                p.abort_transaction(30)
        eq(sorted(read_all(bootstrap, TOPIC, NPARTS, "read_committed", len(committed))), sorted(committed), "read_committed")
        eq(len(read_all(bootstrap, TOPIC, NPARTS, "read_uncommitted", 3 * NPARTS * PER_PART)), 3 * NPARTS * PER_PART,
           "read_uncommitted sees the aborted too")
        off = gc.committed([TopicPartition(TOPIC, 0)], timeout=30)[0].offset
        eq(off, 103, "the group's offset from the last committed transaction")
        gc.close()
        log("commit, abort, commit over partitions led by every broker; group offset %d" % off)

        batch = send(p, 4)
        victim = brokers[tcoord - 1]
        victim.proc.send_signal(signal.SIGKILL)
        victim.proc.wait(timeout=10)
        victim.proc = None
        others = [b for b in brokers if b is not victim]
        rest = ",".join(b.bootstrap for b in others)
        log("coordinator %d killed with -9, a transaction open" % tcoord)
        p, outcome = commit_through_kill(p, batch, 4, rest)
        committed += batch
        log("the open transaction: %s" % outcome)
        got = read_all(rest, TOPIC, NPARTS, "read_committed", len(committed), 60)
        eq(sorted(got), sorted(committed), "read_committed after the kill: every committed record once")


if __name__ == "__main__":
    main(test)

"""Cluster mode: a transaction coordinator that also leads the
transaction's partitions counts a marker it wrote there only once that
partition's high watermark covers it (the in-sync replicas have it), so
EndTxn is not answered, and the staged offsets are not visible, while the
marker is on the leader only; not after the local fsync alone.

ZooKeeper and three brokers in the chroot /gregor/c232 (6 s ZooKeeper
sessions, replica.lag.time.max.ms 20 s so the stopped followers stay in
the ISR); __transaction_state of one partition with one replica (so only
the markers wait for the followers), __consumer_offsets of 3 partitions
and a topic of 3 partitions, both with replication factor 3.

  1. the transactional id's coordinator C leads one partition of the topic
     and of __consumer_offsets (a group placed there); a transaction
     writes a record to that partition and stages the group's offset
  2. both other brokers are stopped (SIGSTOP): EndTxn (commit) at C is not
     answered within 2 s and OffsetFetch (RequireStable) at C answers
     UNSTABLE_OFFSET_COMMIT
  3. they are continued (SIGCONT): EndTxn answers without error, the
     offset is visible, DescribeTransactions says CompleteCommit
"""

import os
import signal
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

import idemwire  # noqa: E402
import kwire  # noqa: E402
import txnwire  # noqa: E402
from gregor import eq, log, main, wait_until  # noqa: E402
from zookeeper import running_cluster, wait_listed  # noqa: E402

CHROOT = "/gregor/c232"
TID = "tx-5232"
TOPIC = "t5232"
UNSTABLE_OFFSET_COMMIT = 88
SETTINGS = {"zookeeper_session_timeout_ms": 6000, "zookeeper_connection_timeout_ms": 1000,
            "transaction_state_log_num_partitions": 1, "transaction_state_log_replication_factor": 1,
            "transaction_state_log_min_isr": 1, "offsets_topic_num_partitions": 3,
            "replica_lag_time_max_ms": 20000}


def test():
    with running_cluster((1, 2, 3), CHROOT, **SETTINGS) as (zk, zc, brokers):
        wait_listed(brokers)
        admin = AdminClient({"bootstrap.servers": ",".join(b.bootstrap for b in brokers)})
        for f in admin.create_topics([NewTopic(TOPIC, 3, 3)]).values():
            f.result(30)
        wait_until(lambda: set(kwire.partition_leaders(brokers[0].port, TOPIC).values()) == {1, 2, 3}, 30, "leaders on all three")
        node = txnwire.coordinator(brokers[0].port, TID, 1)
        coord = brokers[node - 1]
        group = next(g for g in ("g5232-%d" % i for i in range(100))
                     if txnwire.coordinator(brokers[0].port, g, 0) == node)
        part = next(p for p, leader in kwire.partition_leaders(brokers[0].port, TOPIC).items() if leader == node)
        log("coordinator %d leads %s-%d and the group '%s'" % (node, TOPIC, part, group))
        c = txnwire.Client(coord.port)
        c.sock.settimeout(30)
        pid, epoch = c.init_pid(1, TID)
        eq(c.add_partitions(TID, pid, epoch, TOPIC, [part]), {part: 0}, "AddPartitionsToTxn")
        eq(c.produce_txn(TID, TOPIC, part, idemwire.batch(3, pid, epoch, 0, transactional=True))[0], 0,
           "transactional Produce")
        eq(c.add_offsets(TID, pid, epoch, group), 0, "AddOffsetsToTxn")
        wait_until(lambda: c.txn_offset_commit(TID, group, pid, epoch, TOPIC, part, 3) == 0, 30, "TxnOffsetCommit")
        check = txnwire.Client(coord.port)
        followers = [b for b in brokers if b is not coord]
        for b in followers:
            b.proc.send_signal(signal.SIGSTOP)
        try:
            result = txnwire.unanswered(lambda: c.end_txn(TID, pid, epoch, True), 2)
            eq(check.offset_fetch_stable(group, TOPIC, part)[0], UNSTABLE_OFFSET_COMMIT,
               "OffsetFetch while the COMMIT marker is on the leader only")
            log("EndTxn unanswered and the offset not visible while the followers are stopped")
        finally:
            for b in followers:
                b.proc.send_signal(signal.SIGCONT)
        eq(result(30), 0, "EndTxn once the followers have the markers")
        eq(check.offset_fetch_stable(group, TOPIC, part), (0, 3), "OffsetFetch after the commit")
        eq(check.describe_transactions([TID])[TID]["state"], "CompleteCommit", "the transaction's state")
        log("EndTxn answered and the offset visible once the followers fetched the markers")
        check.close()
        c.close()


if __name__ == "__main__":
    main(test)

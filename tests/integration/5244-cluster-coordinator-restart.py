"""Cluster mode: a broker restarted after kill -9 coordinates only the
groups and transactional ids of the __consumer_offsets and
__transaction_state partitions it leads, not every one its local replicas
hold.

ZooKeeper and three brokers in the chroot /gregor/c244, 3 s ZooKeeper
sessions, min.insync.replicas 2, internal topics of replication factor 3.

  1. a transactional id and a group coordinated by the same broker X; one
     committed transaction with the group's offsets, so every broker's
     replicas of both internal topics hold them
  2. X is killed with -9: both move to other brokers; X is started again
     and its replicas catch up (it leads no internal partition now)
  3. a new producer of the id commits a transaction to a partition whose
     only replica is on X: X does not check the records against a stale
     copy of the id (which fenced every new epoch), and a read_committed
     reader sees them
  4. ListTransactions and ListGroups at X do not name the id or the group
     (their coordinators are elsewhere); the id's new coordinator lists it
  5. a preferred leader election gives X its partitions back: it loads them
     and coordinates both again (a transaction with the group's offset
     commits through it, its lists name them)
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

import kwire  # noqa: E402
import txnwire  # noqa: E402
from eoscluster import SETTINGS, committed, coordinator, isr_full, kill9, leaders, read_values, restart  # noqa: E402
from gregor import build_bin, eq, log, main, run, wait_until  # noqa: E402
from zookeeper import running_cluster, wait_listed  # noqa: E402

CHROOT = "/gregor/c244"
TOPIC = "t5244"
SOLO = "solo5244"
ELECT_TOOL = build_bin("gregor-leader-election")


def list_groups(port):
    """ListGroups v0 at one broker -> the group ids it coordinates."""
    r = kwire.call(port, 16, 0, b"")
    eq(r.i16(), 0, "ListGroups error")
    return [g for g, _proto in r.array(lambda r: (r.string(), r.string()))]


def list_transactions(port):
    c = txnwire.Client(port)
    try:
        err, _unknown, txns = c.list_transactions()
    finally:
        c.close()
    eq(err, 0, "ListTransactions error")
    return [t[0] for t in txns]


def transaction(bootstrap, tid, topic, partition, value, group=None, offset=0):
    """A new producer of tid commits one record (and the group's offset); returns its producer."""
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid, "transaction.timeout.ms": 60000,
                  "topic.metadata.refresh.interval.ms": 1000})
    p.init_transactions(60)
    p.begin_transaction()
    p.produce(topic, value=value, partition=partition)
    eq(p.flush(60), 0, "records left unsent")
    if group:
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
        p.send_offsets_to_transaction([TopicPartition(TOPIC, 0, offset)], c.consumer_group_metadata(), 60)
        c.close()
    p.commit_transaction(60)
    return p


def test():
    with running_cluster((1, 2, 3), CHROOT, **SETTINGS) as (zk, zc, brokers):
        wait_listed(brokers, controller=True)
        bootstrap = ",".join(b.bootstrap for b in brokers)
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic(TOPIC, 3, 3)])[TOPIC].result(30)
        wait_until(lambda: len(leaders(brokers, TOPIC)) == 3, 30, "leaders for every partition")
        tid = "tx5244-0"
        x = coordinator(brokers, tid, 1)
        group = next(g for g in ("g5244-%d" % i for i in range(200)) if coordinator(brokers, g, 0) == x)
        transaction(bootstrap, tid, TOPIC, 0, b"before", group, 7)
        isr_full(brokers, [TOPIC, "__consumer_offsets", "__transaction_state"])
        eq((tid in list_transactions(brokers[x - 1].port), group in list_groups(brokers[x - 1].port)),
           (True, True), "broker %d coordinates the id and the group" % x)
        log("'%s' and '%s' coordinated by broker %d; it is killed with -9" % (tid, group, x))

        kill9(brokers[x - 1])
        y = coordinator(brokers, tid, 1)
        restart(zc, CHROOT, brokers[x - 1], x)
        isr_full(brokers, [TOPIC, "__consumer_offsets", "__transaction_state"])
        eq(coordinator(brokers, tid, 1), y, "the id's coordinator after the restart")
        log("broker %d started again; the id is coordinated by %d, the group by %d"
            % (x, y, coordinator(brokers, group, 0)))
        admin.create_topics([NewTopic(SOLO, 1, replica_assignment=[[x]], config={"min.insync.replicas": "1"})])[
            SOLO].result(30)
        wait_until(lambda: leaders(brokers, SOLO).get(0) == x, 30, "%s led by broker %d" % (SOLO, x))
        transaction(bootstrap, tid, SOLO, 0, b"after")
        eq(read_values(bootstrap, SOLO, 1, 1), ["after"], "read_committed on broker %d's partition" % x)
        log("a new producer of '%s' committed to a partition led by broker %d" % (tid, x))
        eq(list_transactions(brokers[x - 1].port), [], "ListTransactions at the restarted broker %d" % x)
        eq(list_groups(brokers[x - 1].port), [], "ListGroups at the restarted broker %d" % x)
        eq(tid in list_transactions(brokers[y - 1].port), True, "ListTransactions at the new coordinator %d" % y)

        p = run([ELECT_TOOL, "--bootstrap-server", bootstrap, "--election-type", "PREFERRED",
                 "--all-topic-partitions"], timeout_s=60, check_rc=False)
        log("preferred leader election: %s" % p.stdout.decode().strip().splitlines()[:1])
        wait_until(lambda: coordinator(brokers, tid, 1) == x and coordinator(brokers, group, 0) == x, 30,
                   "broker %d coordinating '%s' and '%s' again" % (x, tid, group))
        transaction(bootstrap, tid, TOPIC, 0, b"back", group, 9)
        eq((tid in list_transactions(brokers[x - 1].port), group in list_groups(brokers[x - 1].port)),
           (True, True), "broker %d lists the id and the group again" % x)
        eq(committed(bootstrap, group, TOPIC, 1), {0: 9}, "the group's offset committed through broker %d" % x)
        log("after a preferred leader election broker %d coordinates both again" % x)


if __name__ == "__main__":
    main(test)

"""Cluster mode: a partition leader refuses a transaction marker with
NOT_ENOUGH_REPLICAS, appending nothing, while the partition's ISR is
below its min.insync.replicas, as Kafka refuses an acks=-1 append (the
coordinator retries); once the ISR is back the marker is written and
answered without error.

ZooKeeper and three brokers in the chroot /gregor/c234 (6 s ZooKeeper
sessions, replica.lag.time.max.ms 2 s so a stopped follower leaves the
ISR quickly); a topic of one partition, replication factor 3,
min.insync.replicas 3.

  1. one follower of the partition is stopped (SIGSTOP) until the ISR has
     two members
  2. WriteTxnMarkers (COMMIT) for the partition at its leader answers
     NOT_ENOUGH_REPLICAS; the partition's log end offset has not moved
  3. the follower is continued (SIGCONT); once the ISR has three members
     again the marker is answered without error and is in the log
"""

import os
import signal
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

import kwire  # noqa: E402
import txnwire  # noqa: E402
from gregor import eq, log, main, wait_until  # noqa: E402
from zookeeper import running_cluster, wait_listed  # noqa: E402

CHROOT = "/gregor/c234"
TOPIC = "t5234"
NOT_ENOUGH_REPLICAS = 19
SETTINGS = {"zookeeper_session_timeout_ms": 6000, "zookeeper_connection_timeout_ms": 1000,
            "replica_lag_time_max_ms": 2000}


def partition(port):
    """Metadata v1 of TOPIC-0 at port -> (leader, replicas, sorted isr); (-1, [], []) before it has a leader."""
    r = kwire.call(port, 3, 1, kwire.metadata_v1_body([TOPIC]))
    r.array(lambda r: (r.i32(), r.string(), r.i32(), r.string()))
    r.i32()
    parts = {}
    for _err, _name, _internal, ps in r.array(lambda r: (r.i16(), r.string(), r.i8(), r.array(
            lambda r: (r.i16(), r.i32(), r.i32(), r.array(lambda r: r.i32()), r.array(lambda r: r.i32()))))):
        parts.update({idx: (leader, reps, sorted(isr)) for _e, idx, leader, reps, isr in ps})
    return parts.get(0, (-1, [], []))


def test():
    with running_cluster((1, 2, 3), CHROOT, **SETTINGS) as (zk, zc, brokers):
        wait_listed(brokers)
        admin = AdminClient({"bootstrap.servers": ",".join(b.bootstrap for b in brokers)})
        for f in admin.create_topics([NewTopic(TOPIC, 1, 3, config={"min.insync.replicas": "3"})]).values():
            f.result(30)
        port = brokers[0].port
        wait_until(lambda: partition(port)[0] in (1, 2, 3) and len(partition(port)[2]) == 3, 30,
                   "a leader and three in-sync replicas")
        leader, replicas, _isr = partition(port)
        lb = brokers[leader - 1]
        follower = brokers[next(r for r in replicas if r != leader) - 1]
        c = txnwire.Client(lb.port)
        end = c.list_offset(TOPIC, 0)
        marker = [(4711, 0, True, {TOPIC: [0]}, 0)]
        follower.proc.send_signal(signal.SIGSTOP)
        try:
            wait_until(lambda: len(partition(lb.port)[2]) == 2, 30, "the stopped follower out of the ISR")
            eq(c.write_txn_markers(marker, version=0), {(4711, TOPIC, 0): NOT_ENOUGH_REPLICAS},
               "WriteTxnMarkers with the ISR below min.insync.replicas")
            eq(c.list_offset(TOPIC, 0), end, "the log end offset: nothing appended")
            log("NOT_ENOUGH_REPLICAS, nothing appended, while the ISR has two members")
        finally:
            follower.proc.send_signal(signal.SIGCONT)
        wait_until(lambda: len(partition(lb.port)[2]) == 3, 30, "the follower back in the ISR")
        eq(c.write_txn_markers(marker, version=0), {(4711, TOPIC, 0): 0}, "WriteTxnMarkers with the ISR back")
        eq(c.list_offset(TOPIC, 0), end + 1, "the log end offset after the marker")
        log("the marker written once the ISR is back")
        c.close()


if __name__ == "__main__":
    main(test)

"""Cluster mode: a partition leader answers WriteTxnMarkers once the high
watermark of each partition covers its marker (Kafka appends markers with
acks=-1), and a COMMIT marker on __consumer_offsets makes the staged
transactional offsets visible only then, not at the local append.

ZooKeeper and three brokers in the chroot /gregor/c231 (6 s ZooKeeper
sessions, replica.lag.time.max.ms 20 s so the stopped followers stay in
the ISR); __consumer_offsets and __transaction_state of one partition, a
topic of 3 partitions, all with replication factor 3.

  1. a producer stages an offset of the group (TxnOffsetCommit at the group
     coordinator, answered); OffsetFetch with RequireStable answers
     UNSTABLE_OFFSET_COMMIT
  2. the two other brokers are stopped (SIGSTOP); WriteTxnMarkers (COMMIT)
     for __consumer_offsets-0 and the topic's partition led by the group
     coordinator is sent there: no answer within 2 s, and OffsetFetch still
     answers UNSTABLE_OFFSET_COMMIT (the offset is not visible)
  3. they are continued (SIGCONT): the markers are answered without error
     and OffsetFetch shows the offset
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

CHROOT = "/gregor/c231"
TID = "tx-5231"
GROUP = "g5231"
TOPIC = "t5231"
OFFSETS = "__consumer_offsets"
UNSTABLE_OFFSET_COMMIT = 88
SETTINGS = {"zookeeper_session_timeout_ms": 6000, "zookeeper_connection_timeout_ms": 1000,
            "transaction_state_log_num_partitions": 1, "offsets_topic_num_partitions": 1,
            "replica_lag_time_max_ms": 20000}


def leaders(port):
    return kwire.partition_leaders(port, TOPIC)


def test():
    with running_cluster((1, 2, 3), CHROOT, **SETTINGS) as (zk, zc, brokers):
        wait_listed(brokers)
        admin = AdminClient({"bootstrap.servers": ",".join(b.bootstrap for b in brokers)})
        for f in admin.create_topics([NewTopic(TOPIC, 3, 3)]).values():
            f.result(30)
        wait_until(lambda: set(leaders(brokers[0].port).values()) == {1, 2, 3}, 30, "leaders on all three")
        tc = txnwire.Client(brokers[txnwire.coordinator(brokers[0].port, TID, 1) - 1].port)
        pid, epoch = tc.init_pid(1, TID)
        eq(tc.add_offsets(TID, pid, epoch, GROUP), 0, "AddOffsetsToTxn")
        gnode = txnwire.coordinator(brokers[0].port, GROUP, 0)
        gcoord = brokers[gnode - 1]
        part = next(p for p, leader in leaders(brokers[0].port).items() if leader == gnode)
        gc = txnwire.Client(gcoord.port)
        wait_until(lambda: gc.txn_offset_commit(TID, GROUP, pid, epoch, TOPIC, 0, 30) == 0, 30, "TxnOffsetCommit")
        eq(gc.offset_fetch_stable(GROUP, TOPIC, 0)[0], UNSTABLE_OFFSET_COMMIT, "OffsetFetch of a staged offset")
        mc = txnwire.Client(gcoord.port)
        mc.sock.settimeout(30)
        marker = [(pid, epoch, True, {OFFSETS: [0], TOPIC: [part]}, 0)]
        followers = [b for b in brokers if b is not gcoord]
        for b in followers:
            b.proc.send_signal(signal.SIGSTOP)
        try:
            result = txnwire.unanswered(lambda: mc.write_txn_markers(marker, version=0), 2)
            eq(gc.offset_fetch_stable(GROUP, TOPIC, 0)[0], UNSTABLE_OFFSET_COMMIT,
               "OffsetFetch while the COMMIT marker is on the leader only")
            log("WriteTxnMarkers unanswered and the offset not visible while the followers are stopped")
        finally:
            for b in followers:
                b.proc.send_signal(signal.SIGCONT)
        eq(result(30), {(pid, OFFSETS, 0): 0, (pid, TOPIC, part): 0}, "WriteTxnMarkers once the followers have them")
        eq(gc.offset_fetch_stable(GROUP, TOPIC, 0), (0, 30), "OffsetFetch once the marker is replicated")
        log("answered and visible once the followers fetched the markers")
        for c in (mc, gc, tc):
            c.close()


if __name__ == "__main__":
    main(test)

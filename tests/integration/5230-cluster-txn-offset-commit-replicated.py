"""Cluster mode: TxnOffsetCommit is answered once the high watermark of the
group's __consumer_offsets partition covers the transactional batch (the
in-sync replicas have it), as OffsetCommit and Kafka's acks=-1 append, not
after the local fsync alone.

ZooKeeper and three brokers in the chroot /gregor/c230 (6 s ZooKeeper
sessions, replica.lag.time.max.ms 20 s so the stopped followers stay in
the ISR); __consumer_offsets and __transaction_state of one partition,
replication factor 3.

  1. a transactional id's producer adds the group's offsets to its
     transaction; a first TxnOffsetCommit at the group coordinator succeeds
  2. the partition's followers (the two other brokers) are stopped
     (SIGSTOP): a second TxnOffsetCommit is not answered within 2 s
  3. they are continued (SIGCONT): it is answered without error; EndTxn
     commits and OffsetFetch (RequireStable) shows its offset
"""

import os
import signal
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import txnwire  # noqa: E402
from gregor import eq, log, main, wait_until  # noqa: E402
from zookeeper import running_cluster, wait_listed  # noqa: E402

CHROOT = "/gregor/c230"
TID = "tx-5230"
GROUP = "g5230"
TOPIC = "t5230"
SETTINGS = {"zookeeper_session_timeout_ms": 6000, "zookeeper_connection_timeout_ms": 1000,
            "transaction_state_log_num_partitions": 1, "offsets_topic_num_partitions": 1,
            "replica_lag_time_max_ms": 20000}


def test():
    with running_cluster((1, 2, 3), CHROOT, **SETTINGS) as (zk, zc, brokers):
        wait_listed(brokers)
        tc = txnwire.Client(brokers[txnwire.coordinator(brokers[0].port, TID, 1) - 1].port)
        pid, epoch = tc.init_pid(1, TID)
        eq(tc.add_offsets(TID, pid, epoch, GROUP), 0, "AddOffsetsToTxn")
        gcoord = brokers[txnwire.coordinator(brokers[0].port, GROUP, 0) - 1]
        gc = txnwire.Client(gcoord.port)
        gc.sock.settimeout(30)
        wait_until(lambda: gc.txn_offset_commit(TID, GROUP, pid, epoch, TOPIC, 0, 10) == 0, 30,
                   "a first TxnOffsetCommit")
        followers = [b for b in brokers if b is not gcoord]
        for b in followers:
            b.proc.send_signal(signal.SIGSTOP)
        try:
            result = txnwire.unanswered(lambda: gc.txn_offset_commit(TID, GROUP, pid, epoch, TOPIC, 0, 20), 2)
            log("TxnOffsetCommit unanswered while the followers are stopped")
        finally:
            for b in followers:
                b.proc.send_signal(signal.SIGCONT)
        eq(result(30), 0, "TxnOffsetCommit once the followers fetched it")
        eq(tc.end_txn(TID, pid, epoch, True), 0, "EndTxn commit")
        wait_until(lambda: gc.offset_fetch_stable(GROUP, TOPIC, 0) == (0, 20), 30, "the committed offset 20")
        log("answered once the followers have it; committed")
        gc.close()
        tc.close()


if __name__ == "__main__":
    main(test)

"""Cluster mode: a TxnOffsetCommit of a producer epoch whose transaction
the coordinator already ended is refused with INVALID_PRODUCER_EPOCH, as
Kafka's log refuses an append below the producer's current epoch, and
stages nothing.  It used to be staged: no marker ever came for it, and
OffsetFetch with RequireStable answered UNSTABLE_OFFSET_COMMIT for good,
so the next copier of the group (a read_committed consumer) stalled.  The
way there: a copier's transaction timed out while its coordinators failed
over; the coordinator aborted it with the epoch bumped, and the copier's
retried TxnOffsetCommit came after the ABORT marker.

ZooKeeper and three brokers in the chroot /gregor/c235, raw requests:

  1. producer P (transaction timeout 1 s) adds the group's offsets to its
     transaction (AddOffsetsToTxn) and does nothing more; the coordinator
     aborts it (epoch + 1) once the timeout passes
  2. P's TxnOffsetCommit with its old epoch: INVALID_PRODUCER_EPOCH; the
     group's OffsetFetch (RequireStable): no offset, not UNSTABLE
  3. P again (InitProducerId): its TxnOffsetCommit and commit work, the
     offset is read back
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import txnwire  # noqa: E402
from gregor import eq, log, main, wait_until  # noqa: E402
from zookeeper import running_cluster, wait_listed  # noqa: E402

CHROOT = "/gregor/c235"
TID, GROUP, TOPIC = "tx-5235", "g5235", "t5235"
INVALID_PRODUCER_EPOCH = 47
SETTINGS = {"zookeeper_session_timeout_ms": 4000, "zookeeper_connection_timeout_ms": 1000,
            "transaction_state_log_num_partitions": 1, "offsets_topic_num_partitions": 1,
            "transaction_abort_timed_out_transaction_cleanup_interval_ms": 200}


def test():
    with running_cluster((1, 2, 3), CHROOT, **SETTINGS) as (_zk, _zc, brokers):
        wait_listed(brokers)
        tc = txnwire.Client(brokers[txnwire.coordinator(brokers[0].port, TID, 1) - 1].port)
        gc = txnwire.Client(brokers[txnwire.coordinator(brokers[0].port, GROUP, 0) - 1].port)
        tc.sock.settimeout(60)
        pid, epoch = tc.init_pid(1, TID, timeout_ms=1000)
        eq(tc.add_offsets(TID, pid, epoch, GROUP), 0, "AddOffsetsToTxn")
        wait_until(lambda: tc.describe_transactions([TID])[TID]["epoch"] == epoch + 1 and
                   tc.describe_transactions([TID])[TID]["state"] in ("CompleteAbort", "Empty"), 30,
                   "the timed-out transaction aborted with the epoch bumped")
        log("producer %d epoch %d: its transaction aborted at the timeout (now %s)" %
            (pid, epoch, tc.describe_transactions([TID])[TID]))

        eq(gc.txn_offset_commit(TID, GROUP, pid, epoch, TOPIC, 0, 5), INVALID_PRODUCER_EPOCH,
           "TxnOffsetCommit of the aborted epoch")
        eq(gc.offset_fetch_stable(GROUP, TOPIC, 0), (0, -1), "OffsetFetch (RequireStable) after it")

        pid2, epoch2 = tc.init_pid(1, TID, timeout_ms=60000)
        eq(pid2, pid, "the same producer id")
        eq(tc.add_offsets(TID, pid2, epoch2, GROUP), 0, "AddOffsetsToTxn of the new epoch %d" % epoch2)
        eq(gc.txn_offset_commit(TID, GROUP, pid2, epoch2, TOPIC, 0, 7), 0, "TxnOffsetCommit of the new epoch")
        eq(gc.offset_fetch_stable(GROUP, TOPIC, 0)[0], 88, "UNSTABLE_OFFSET_COMMIT while it is open")
        eq(tc.end_txn(TID, pid2, epoch2, True), 0, "EndTxn commit")
        wait_until(lambda: gc.offset_fetch_stable(GROUP, TOPIC, 0) == (0, 7), 30, "the committed offset 7")
        log("the new epoch %d stages and commits offset 7" % epoch2)
        tc.close()
        gc.close()


if __name__ == "__main__":
    main(test)

"""Cluster mode: a new group coordinator that replays a __consumer_offsets
partition after a failover treats transactional offsets as Kafka does:
committed if a COMMIT marker of their producer follows them in that
partition, dropped on ABORT, still pending (UNSTABLE_OFFSET_COMMIT, not
visible) if neither, until the transaction's marker arrives.  A marker
replayed from one partition ends only the offsets staged from that
partition: the same producer's open transaction in another partition led
by the same broker stays pending.

ZooKeeper and three brokers in the chroot /gregor/c233 (4 s ZooKeeper
sessions); __consumer_offsets of 6 partitions (replication factor 3),
__transaction_state of one.

  1. broker X (not the transaction coordinator) leads partition pA of
     __consumer_offsets; groups GA, GA2, GA3 are stored there and, for each
     other broker B, a group GB_B in a partition B leads
  2. producer P commits GA's offset 5 (transaction 1), then opens
     transaction 2 staging GA2's offset 7 and every GB_B's offset 11;
     producer P2 stages GA3's offset 13 and aborts
  3. X is killed (-9): pA's new leader L loads it: GA shows 5, GA3 nothing,
     GA2 UNSTABLE_OFFSET_COMMIT, and L's own GB_L still
     UNSTABLE_OFFSET_COMMIT (replaying P's earlier COMMIT marker in pA does
     not publish it)
  4. P commits transaction 2: GA2 shows 7 at L, every GB_B 11
"""

import os
import signal
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import kwire  # noqa: E402
import txnwire  # noqa: E402
from gregor import eq, log, main, wait_until  # noqa: E402
from zookeeper import running_cluster, wait_listed  # noqa: E402

CHROOT = "/gregor/c233"
TID, TID2 = "tx-5233", "tx-5233-b"
TOPIC = "t5233"
OFFSETS = "__consumer_offsets"
NPARTS = 6
UNSTABLE_OFFSET_COMMIT = 88
SETTINGS = {"zookeeper_session_timeout_ms": 4000, "zookeeper_connection_timeout_ms": 1000,
            "transaction_state_log_num_partitions": 1, "offsets_topic_num_partitions": NPARTS}


def groups_in(partition, n):
    return [g for g in ("g5233-%d" % i for i in range(1000)) if kwire.coordinator_partition(g, NPARTS) == partition][:n]


def leaders(port):
    r = kwire.call(port, 3, 1, kwire.metadata_v1_body([OFFSETS]))
    err, parts = kwire.parse_metadata_v1(r.d[r.p:])["topics"].get(OFFSETS, (-1, []))
    return {idx: leader for _e, idx, leader in parts} if err == 0 else {}


def fetch(port, group):
    """OffsetFetch v7 (RequireStable) of the group's TOPIC-0 -> (error, offset); (-1, -1) on a lost connection."""
    try:
        c = txnwire.Client(port)
        try:
            return c.offset_fetch_stable(group, TOPIC, 0)
        finally:
            c.close()
    except (OSError, AssertionError):
        return -1, -1


def stage(brokers, tc, tid, pid, epoch, group, offset):
    """AddOffsetsToTxn then TxnOffsetCommit at the group's coordinator."""
    eq(tc.add_offsets(tid, pid, epoch, group), 0, "AddOffsetsToTxn " + group)
    gc = txnwire.Client(brokers[txnwire.coordinator(brokers[0].port, group, 0) - 1].port)
    wait_until(lambda: gc.txn_offset_commit(tid, group, pid, epoch, TOPIC, 0, offset) == 0, 30,
               "TxnOffsetCommit " + group)
    gc.close()


def test():
    with running_cluster((1, 2, 3), CHROOT, **SETTINGS) as (zk, zc, brokers):
        wait_listed(brokers)
        txnwire.coordinator(brokers[0].port, "g5233", 0)
        wait_until(lambda: len(leaders(brokers[0].port)) == NPARTS and
                   set(leaders(brokers[0].port).values()) == {1, 2, 3}, 30, "__consumer_offsets led by all three")
        lead = leaders(brokers[0].port)
        tnode = txnwire.coordinator(brokers[0].port, TID, 1)
        x = next(n for n in (1, 2, 3) if n != tnode)
        pa = next(p for p, n in sorted(lead.items()) if n == x)
        ga, ga2, ga3 = groups_in(pa, 3)
        gb = {n: groups_in(next(p for p, m in sorted(lead.items()) if m == n), 1)[0] for n in (1, 2, 3) if n != x}
        log("transaction coordinator %d; X %d leads %s-%d (%s, %s, %s); others %s" % (tnode, x, OFFSETS, pa, ga, ga2,
                                                                                      ga3, gb))
        tc = txnwire.Client(brokers[tnode - 1].port)
        tc.sock.settimeout(60)
        pid, epoch = tc.init_pid(1, TID)
        stage(brokers, tc, TID, pid, epoch, ga, 5)
        eq(tc.end_txn(TID, pid, epoch, True), 0, "EndTxn commit of transaction 1")
        stage(brokers, tc, TID, pid, epoch, ga2, 7)
        for g in gb.values():
            stage(brokers, tc, TID, pid, epoch, g, 11)
        pid2, epoch2 = tc.init_pid(1, TID2)
        stage(brokers, tc, TID2, pid2, epoch2, ga3, 13)
        eq(tc.end_txn(TID2, pid2, epoch2, False), 0, "EndTxn abort of P2's transaction")
        xb = brokers[x - 1]
        eq(fetch(xb.port, ga), (0, 5), "GA at X")
        eq(fetch(xb.port, ga3), (0, -1), "GA3 at X")
        eq(fetch(xb.port, ga2)[0], UNSTABLE_OFFSET_COMMIT, "GA2 at X")
        for n, g in gb.items():
            eq(fetch(brokers[n - 1].port, g)[0], UNSTABLE_OFFSET_COMMIT, "%s at %d" % (g, n))

        xb.proc.send_signal(signal.SIGKILL)
        xb.proc.wait(timeout=10)
        xb.proc = None
        alive = [b for b in brokers if b is not xb]
        wait_until(lambda: txnwire.coordinator(alive[0].port, ga, 0) != x, 60, "a new coordinator for " + ga)
        lnode = txnwire.coordinator(alive[0].port, ga, 0)
        lb = brokers[lnode - 1]
        wait_until(lambda: fetch(lb.port, ga) == (0, 5), 30, "GA's committed offset at the new coordinator")
        log("%s-%d now led by %d" % (OFFSETS, pa, lnode))
        eq(fetch(lb.port, ga3), (0, -1), "GA3 (aborted) at the new coordinator")
        eq(fetch(lb.port, ga2)[0], UNSTABLE_OFFSET_COMMIT, "GA2 (open transaction) at the new coordinator")
        eq(fetch(lb.port, gb[lnode])[0], UNSTABLE_OFFSET_COMMIT,
           "%s (open transaction, another partition) after %d replayed %s-%d" % (gb[lnode], lnode, OFFSETS, pa))
        log("replayed: committed, aborted and pending offsets as their markers say")

        eq(tc.end_txn(TID, pid, epoch, True), 0, "EndTxn commit of transaction 2")
        wait_until(lambda: fetch(lb.port, ga2) == (0, 7), 30, "GA2 committed at the new coordinator")
        for n, g in gb.items():
            wait_until(lambda: fetch(brokers[n - 1].port, g) == (0, 11), 30, "%s committed at %d" % (g, n))
        log("transaction 2 committed: every staged offset visible")
        tc.close()


if __name__ == "__main__":
    main(test)

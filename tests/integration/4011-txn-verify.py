#!/usr/bin/python3
"""4011: a transactional batch is appended only for a partition the
transaction coordinator added to that producer's ongoing transaction
(KIP-890 part 1); a stray one does not hold the last stable offset.

Raw Produce v3 (tests/lib/idemwire.py) of a transactional batch, sequence 0:
  * no transactional id                -> TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53)
  * an unknown transactional id        -> INVALID_PRODUCER_ID_MAPPING (49)
  * a known id, another producer id    -> INVALID_PRODUCER_ID_MAPPING (49)
  * the id's producer, older epoch     -> INVALID_PRODUCER_EPOCH (47)
  * the id's producer, partition not added to a transaction -> INVALID_TXN_STATE (48)
Nothing of these is appended: a plain record then lands at offset 0, the
LSO equals the high watermark, a read_committed consumer gets the plain
record.  AddPartitionsToTxn v4 VerifyOnly (what a partition leader asks
the coordinator in a cluster) gives the same verdicts per partition.
After AddPartitionsToTxn the same batch is accepted, the LSO waits for
it, and EndTxn(commit) releases it.
Runtime ~3 s.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import idemwire as iw  # noqa: E402
import kwire as kw  # noqa: E402
import txnwire as tw  # noqa: E402
from eos import end_offset, read_committed  # noqa: E402
from gregor import Broker, eq, main  # noqa: E402

TOPIC = "verify"


def verify_v4(cl, txn_id, pid, epoch, partitions):
    """AddPartitionsToTxn v4 VerifyOnly of TOPIC's partitions -> [(partition, error)]."""
    top, out = cl.verify_partitions(txn_id, pid, epoch, TOPIC, partitions)
    eq(top, 0, "AddPartitionsToTxn v4 top-level error")
    return out


def end_txn(cl, txn_id, pid, epoch, commit):
    r = cl.call(26, 0, kw.string(txn_id) + kw.i64(pid) + kw.i16(epoch) + kw.i8(1 if commit else 0))
    r.i32()
    return r.i16()


def test():
    with Broker(props={"num.partitions": "1", "transaction.state.log.num.partitions": "1"}) as b:
        cl = tw.Client(b.port)
        pid, epoch = cl.init_pid(txn_id="real")
        cl.init_pid(txn_id="other")
        stray = iw.batch(1, pid=pid, epoch=epoch, seq=0, value=b"stray", transactional=True)
        ghost = iw.batch(1, pid=pid + 1000, epoch=0, seq=0, value=b"ghost", transactional=True)
        eq(cl.produce(TOPIC, 0, ghost, txn_id=None)[0], 53, "no transactional id")
        eq(cl.produce(TOPIC, 0, ghost, txn_id="ghost")[0], 49, "unknown transactional id")
        eq(cl.produce(TOPIC, 0, ghost, txn_id="real")[0], 49, "producer id not the id's")
        eq(cl.produce(TOPIC, 0, stray, txn_id="other")[0], 49, "producer id of another id")
        pid2, epoch2 = cl.init_pid(txn_id="real")  # bump: the batch's epoch is now stale
        eq(pid2, pid, "same producer id after the bump")
        eq(cl.produce(TOPIC, 0, stray, txn_id="real")[0], 47, "fenced epoch")
        stray = iw.batch(1, pid=pid, epoch=epoch2, seq=0, value=b"stray", transactional=True)
        eq(cl.produce(TOPIC, 0, stray, txn_id="real")[0], 48, "partition not added: INVALID_TXN_STATE")
        eq(cl.produce(TOPIC, 0, iw.batch(1, value=b"plain"))[0:2], (0, 0), "plain record at offset 0")
        eq(end_offset(b, TOPIC), 1, "LSO not held by the refused batches")
        eq(end_offset(b, TOPIC, isolation="read_uncommitted"), 1, "HW")
        eq(read_committed(b, TOPIC, 1), [b"plain-0"], "read_committed consumer")
        eq(verify_v4(cl, "real", pid, epoch2, [0, 1]), [(0, 48), (1, 48)], "v4 VerifyOnly: not in a transaction")
        eq(verify_v4(cl, "ghost", pid, epoch2, [0]), [(0, 49)], "v4 VerifyOnly: unknown id")
        # the verified path: added, then accepted, LSO held until the commit
        eq(cl.add_partitions("real", pid, epoch2, TOPIC, [0]), {0: 0}, "AddPartitionsToTxn")
        eq(verify_v4(cl, "real", pid, epoch2, [0, 1]), [(0, 0), (1, 48)], "v4 VerifyOnly after AddPartitions")
        eq(verify_v4(cl, "real", pid, epoch2 - 1, [0]), [(0, 90)], "v4 VerifyOnly: fenced epoch")
        eq(cl.produce(TOPIC, 0, stray, txn_id="real")[0:2], (0, 1), "transactional batch after AddPartitions")
        second = iw.batch(1, pid=pid, epoch=epoch2, seq=1, value=b"second", transactional=True)
        eq(cl.produce(TOPIC, 0, second, txn_id="real")[0:2], (0, 2), "second batch of the transaction")
        eq(end_offset(b, TOPIC), 1, "LSO at the open transaction")
        eq(end_txn(cl, "real", pid, epoch2, True), 0, "EndTxn commit")
        eq(end_offset(b, TOPIC), 4, "LSO past the COMMIT marker")
        eq(read_committed(b, TOPIC, 3), [b"plain-0", b"stray-0", b"second-0"], "committed records")
        cl.close()


main(test)

#!/usr/bin/python3
"""5221: transaction.partition.verification.enable=false turns KIP-890
verification off, as in Kafka: a transactional batch for a partition the
coordinator never added to the producer's transaction is appended (where
4011 shows it refused INVALID_TXN_STATE with the default), while a
transactional batch without a transactional id is still refused
TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53), which is authorization, not
verification.  The stray batch opens a transaction in the partition (the
LSO stays at it), which is what verification prevents.
Runtime ~2 s.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import idemwire as iw  # noqa: E402
import txnwire as tw  # noqa: E402
from eos import end_offset  # noqa: E402
from gregor import Broker, eq, main  # noqa: E402

TOPIC = "unverified"


def test():
    with Broker(props={"num.partitions": "1", "transaction.state.log.num.partitions": "1",
                       "transaction.partition.verification.enable": "false"}) as b:
        cl = tw.Client(b.port)
        pid, epoch = cl.init_pid(txn_id="real")
        stray = iw.batch(1, pid=pid, epoch=epoch, seq=0, value=b"stray", transactional=True)
        eq(cl.produce(TOPIC, 0, stray, txn_id=None)[0], 53, "no transactional id")
        eq(cl.produce(TOPIC, 0, iw.batch(1, value=b"plain"))[0:2], (0, 0), "plain record at offset 0")
        eq(cl.produce(TOPIC, 0, stray, txn_id="real")[0:2], (0, 1), "partition not added, appended unverified")
        eq(end_offset(b, TOPIC, isolation="read_uncommitted"), 2, "HW")
        eq(end_offset(b, TOPIC), 1, "LSO at the unverified open transaction")
        cl.close()


main(test)

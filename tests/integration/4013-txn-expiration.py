#!/usr/bin/python3
"""4013: transactional.id.expiration.ms and producer.id.expiration.ms.

With transactional.id.expiration.ms=2000 (checked every 300 ms):
  * an id with no transaction (Empty) is removed after ~2 s:
    DescribeTransactions answers TRANSACTIONAL_ID_NOT_FOUND (105), also
    after a restart (the tombstone in __transaction_state is replayed);
    InitProducerId then starts it afresh with a new producer id, epoch 0;
  * an id with an open transaction (Ongoing, transaction timeout 60 s)
    is kept.
With producer.id.expiration.ms=2000 (checked every 300 ms with retention):
  * an idle idempotent producer's state is dropped: a batch with a
    sequence gap gets UNKNOWN_PRODUCER_ID (59) instead of
    OUT_OF_ORDER_SEQUENCE_NUMBER (45), nothing is appended;
  * the state of a producer with an open transaction on the partition is
    kept: the LSO stays at its first offset, and its next batch appends.
Runtime ~8 s.
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import idemwire as iw  # noqa: E402
import txnwire as tw  # noqa: E402
from eos import end_offset  # noqa: E402
from gregor import Broker, eq, log, main, wait_until  # noqa: E402

TOPIC = "expire"
PROPS = {"num.partitions": "1", "transaction.state.log.num.partitions": "1",
         "transactional.id.expiration.ms": "2000",
         "transaction.remove.expired.transaction.cleanup.interval.ms": "300",
         "producer.id.expiration.ms": "2000", "log.retention.check.interval.ms": "300"}


def test():
    with Broker(props=PROPS) as b:
        cl = tw.Client(b.port)
        eq(cl.produce(TOPIC, 0, iw.batch(1))[0:2], (0, 0), "plain batch (creates the topic)")
        idle_pid, _ = cl.init_pid(txn_id="idle")
        open_pid, open_epoch = cl.init_pid(txn_id="open")
        eq(cl.add_partitions("open", open_pid, open_epoch, TOPIC, [0]), {0: 0}, "AddPartitionsToTxn")
        eq(cl.produce(TOPIC, 0, iw.batch(1, pid=open_pid, epoch=open_epoch, seq=0, transactional=True),
                      txn_id="open")[0:2], (0, 1), "transactional batch")
        eq(cl.produce(TOPIC, 0, iw.batch(1, pid=7000, epoch=0, seq=0))[0:2], (0, 2), "idempotent batch")
        eq(cl.describe_txn("idle"), (0, "Empty"), "idle id before expiry")
        t0 = time.time()
        wait_until(lambda: cl.describe_txn("idle")[0] == 105, 10, "idle id expired")
        log("idle transactional id removed after %.1fs" % (time.time() - t0))
        eq(cl.describe_txn("open"), (0, "Ongoing"), "id with an open transaction kept")
        b.wait_log("transactional id expired", 5)
        # producer state: the idle idempotent producer is forgotten, the transactional one kept
        wait_until(lambda: cl.produce(TOPIC, 0, iw.batch(1, pid=7000, epoch=0, seq=5))[0] == 59, 10,
                   "idle producer state dropped (UNKNOWN_PRODUCER_ID)")
        eq(end_offset(b, TOPIC), 1, "LSO still at the open transaction")
        eq(cl.produce(TOPIC, 0, iw.batch(1, pid=open_pid, epoch=open_epoch, seq=1, transactional=True),
                      txn_id="open")[0:2], (0, 3), "open transaction's producer state kept")
        cl.close()
        b.restart()
        cl = tw.Client(b.port)
        eq(cl.describe_txn("idle")[0], 105, "expired id stays removed after a restart")
        eq(cl.describe_txn("open"), (0, "Ongoing"), "open id after a restart")
        pid, epoch = cl.init_pid(txn_id="idle")
        eq(epoch, 0, "an expired id starts afresh at epoch 0")
        eq(pid != idle_pid, True, "with a new producer id")
        cl.close()
        b.stop()


main(test)

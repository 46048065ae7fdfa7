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
import kwire as kw  # noqa: E402
from gregor import Broker, eq, log, main, wait_until  # noqa: E402

from confluent_kafka import Consumer, TopicPartition  # noqa: E402

TOPIC = "expire"
PROPS = {"num.partitions": "1", "transaction.state.log.num.partitions": "1",
         "transactional.id.expiration.ms": "2000",
         "transaction.remove.expired.transaction.cleanup.interval.ms": "300",
         "producer.id.expiration.ms": "2000", "log.retention.check.interval.ms": "300"}


def lso(b):
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "lso", "isolation.level": "read_committed"})
    r = c.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=10, cached=False)[1]
    c.close()
    return r


def add_partition(cl, txn_id, pid, epoch):
    body = kw.string(txn_id) + kw.i64(pid) + kw.i16(epoch) + kw.array(
        [TOPIC], lambda t: kw.string(t) + kw.array([0], kw.i32))
    r = cl.call(24, 0, body)
    r.i32()
    return r.array(lambda r: (r.string(), r.array(lambda r: (r.i32(), r.i16()))))[0][1][0][1]


def init_pid(cl, txn_id, timeout_ms):
    body = kw.string(txn_id) + kw.i32(timeout_ms)
    r = cl.call(22, 0, body)
    r.i32()
    eq(r.i16(), 0, "InitProducerId error")
    return r.i64(), r.i16()


def test():
    with Broker(props=PROPS) as b:
        cl = iw.Client(b.port)
        eq(cl.produce(TOPIC, 0, iw.batch(1))[0:2], (0, 0), "plain batch (creates the topic)")
        idle_pid, _ = init_pid(cl, "idle", 60000)
        open_pid, open_epoch = init_pid(cl, "open", 60000)
        eq(add_partition(cl, "open", open_pid, open_epoch), 0, "AddPartitionsToTxn")
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
        eq(lso(b), 1, "LSO still at the open transaction")
        eq(cl.produce(TOPIC, 0, iw.batch(1, pid=open_pid, epoch=open_epoch, seq=1, transactional=True),
                      txn_id="open")[0:2], (0, 3), "open transaction's producer state kept")
        cl.close()
        b.restart()
        cl = iw.Client(b.port)
        eq(cl.describe_txn("idle")[0], 105, "expired id stays removed after a restart")
        eq(cl.describe_txn("open"), (0, "Ongoing"), "open id after a restart")
        pid, epoch = init_pid(cl, "idle", 60000)
        eq(epoch, 0, "an expired id starts afresh at epoch 0")
        eq(pid != idle_pid, True, "with a new producer id")
        cl.close()
        b.stop()


main(test)

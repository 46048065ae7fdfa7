"""Transactions with python3-confluent-kafka (librdkafka 2.0.2): init_transactions,
a committed and an aborted transaction, read_committed vs read_uncommitted
consumers, send_offsets_to_transaction (offsets visible only after commit,
dropped on abort), ListOffsets latest under both isolation levels, and the
coordinator state surviving a kill -9 of the broker."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, eq, check, log, main  # noqa: E402

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

PROPS = {
    "transaction.state.log.num.partitions": "3",
    "offsets.topic.num.partitions": "3",
    "group.initial.rebalance.delay.ms": "0",
}


def create(b, topic, n):
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=n, replication_factor=1)])[topic].result(30)


def read_all(b, topic, isolation, nparts, expect_min=0, timeout_s=10):
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "reader-%s-%d" % (isolation, os.getpid()),
                  "isolation.level": isolation, "enable.auto.commit": False,
                  "auto.offset.reset": "earliest", "enable.partition.eof": True})
    c.assign([TopicPartition(topic, p, 0) for p in range(nparts)])
    got, eofs = [], set()
    import time
    deadline = time.time() + timeout_s
    while time.time() < deadline and (len(eofs) < nparts or len(got) < expect_min):
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            if m.error().code() == -191:  # _PARTITION_EOF
                eofs.add(m.partition())
                continue
            raise KafkaException(m.error())
        got.append(m.value().decode())
    c.close()
    return got


def producer(b, tid):
    p = Producer({"bootstrap.servers": b.bootstrap, "transactional.id": tid,
                  "transaction.timeout.ms": 30000})
    p.init_transactions(30)
    return p


def committed(b, group, topic, p, isolation="read_committed"):
    # read_committed sends OffsetFetch RequireStable: it waits while txn offsets are pending
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": group, "isolation.level": isolation})
    r = c.committed([TopicPartition(topic, p)], timeout=10)
    c.close()
    return r[0].offset


def test():
    with Broker(props=PROPS) as b:
        topic, src = "txn-out", "txn-src"
        create(b, topic, 2)
        create(b, src, 1)

        p = producer(b, "tid-1")
        p.begin_transaction()
        for i in range(10):
            p.produce(topic, value=b"c%d" % i, partition=i % 2)
        p.commit_transaction(30)

        p.begin_transaction()
        for i in range(5):
            p.produce(topic, value=b"a%d" % i, partition=i % 2)
        p.flush(10)
        p.abort_transaction(30)

        p.begin_transaction()
        p.produce(topic, value=b"c10", partition=0)
        p.commit_transaction(30)

        rc = sorted(read_all(b, topic, "read_committed", 2, 11))
        eq(rc, sorted(["c%d" % i for i in range(11)]), "read_committed sees only committed")
        ru = sorted(read_all(b, topic, "read_uncommitted", 2, 16))
        eq(len(ru), 16, "read_uncommitted sees aborted records too")

        # an open transaction holds the LSO back
        p.begin_transaction()
        p.produce(topic, value=b"open", partition=1)
        p.flush(10)
        c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "wm", "isolation.level": "read_committed"})
        lo, hi = c.get_watermark_offsets(TopicPartition(topic, 1), timeout=10, cached=False)
        c.close()
        cu = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "wm2", "isolation.level": "read_uncommitted"})
        lo2, hi2 = cu.get_watermark_offsets(TopicPartition(topic, 1), timeout=10, cached=False)
        cu.close()
        log("partition 1: latest read_committed=%d read_uncommitted=%d" % (hi, hi2))
        check(hi < hi2, "LSO below HW while a transaction is open")

        # offsets in the transaction: a consumer in group g
        g = "copier-group"
        cons = Consumer({"bootstrap.servers": b.bootstrap, "group.id": g, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
        cons.subscribe([src])
        import time
        deadline = time.time() + 20
        while not cons.assignment() and time.time() < deadline:
            cons.poll(0.2)
        check(cons.assignment(), "consumer got an assignment")
        p.send_offsets_to_transaction([TopicPartition(src, 0, 42)], cons.consumer_group_metadata(), 30)
        eq(committed(b, g, src, 0, "read_uncommitted"), -1001, "txn offsets invisible before commit")
        p.commit_transaction(30)
        eq(committed(b, g, src, 0), 42, "txn offsets visible after commit")

        p.begin_transaction()
        p.produce(topic, value=b"x", partition=0)
        p.send_offsets_to_transaction([TopicPartition(src, 0, 99)], cons.consumer_group_metadata(), 30)
        p.abort_transaction(30)
        eq(committed(b, g, src, 0), 42, "aborted txn offsets dropped")
        cons.close()

        # a second producer with the same id fences the first
        p.begin_transaction()
        p.produce(topic, value=b"zombie", partition=0)
        p.flush(10)
        p2 = producer(b, "tid-1")
        try:
            p.commit_transaction(10)
            check(False, "the fenced producer's commit must fail")
        except KafkaException as e:
            log("fenced producer: %s" % e.args[0])
            check(e.args[0].fatal() or not e.args[0].retriable(), "fenced error is fatal")
        p2.begin_transaction()
        p2.produce(topic, value=b"after", partition=0)
        p2.commit_transaction(30)
        rc = read_all(b, topic, "read_committed", 2, 13)
        check("zombie" not in rc and "open" in rc and "after" in rc, "zombie and fenced txn aborted: %r" % rc)

        # restart with kill -9: committed data and the coordinator survive
        b.kill9()
        b.start()
        rc2 = read_all(b, topic, "read_committed", 2, len(rc))
        eq(sorted(rc2), sorted(rc), "read_committed after kill -9")
        eq(committed(b, g, src, 0), 42, "txn offsets after kill -9")
        p3 = producer(b, "tid-1")
        p3.begin_transaction()
        p3.produce(topic, value=b"restart", partition=1)
        p3.commit_transaction(30)
        check("restart" in read_all(b, topic, "read_committed", 2, len(rc) + 1), "commit after restart")


main(test)

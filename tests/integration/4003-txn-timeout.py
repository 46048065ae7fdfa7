"""Transaction timeout: a transactional producer that begins a transaction and
hangs is aborted by the coordinator after transaction.timeout.ms; the LSO
advances so read_committed consumers see later committed data, and the hung
producer is fenced (its epoch was bumped)."""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, eq, check, log, main, wait_until  # noqa: E402

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402


def latest(b, topic, isolation):
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "lso", "isolation.level": isolation})
    r = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10, cached=False)[1]
    c.close()
    return r


def test():
    props = {"transaction.state.log.num.partitions": "1",
             "transaction.abort.timed.out.transaction.cleanup.interval.ms": "500"}
    with Broker(props=props) as b:
        topic = "txn-timeout"
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(30)
        hung = Producer({"bootstrap.servers": b.bootstrap, "transactional.id": "hung",
                         "transaction.timeout.ms": 2000})
        hung.init_transactions(30)
        hung.begin_transaction()
        hung.produce(topic, value=b"never-committed", partition=0)
        hung.flush(10)
        other = Producer({"bootstrap.servers": b.bootstrap, "enable.idempotence": True})
        other.produce(topic, value=b"plain", partition=0)
        other.flush(10)
        eq(latest(b, topic, "read_committed"), 0, "LSO held at the open transaction")
        eq(latest(b, topic, "read_uncommitted"), 2, "HW")
        t0 = time.time()
        wait_until(lambda: latest(b, topic, "read_committed") == 3, 15, "LSO past the timed-out transaction")
        log("LSO advanced %.1fs after the hang (timeout 2s)" % (time.time() - t0))
        c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "rc", "isolation.level": "read_committed",
                      "auto.offset.reset": "earliest"})
        c.assign([TopicPartition(topic, 0, 0)])
        vals = []
        deadline = time.time() + 10
        while time.time() < deadline and len(vals) < 1:
            m = c.poll(0.5)
            if m is not None and not m.error():
                vals.append(m.value())
        c.close()
        eq(vals, [b"plain"], "read_committed sees only the non-transactional record")
        try:
            hung.commit_transaction(10)
            check(False, "the timed-out producer's commit must fail")
        except KafkaException as e:
            log("hung producer: %s" % e.args[0])


main(test)

"""manyparts.py - many partitions on one broker, with real clients: shared by
tests/integration/1080-many-partitions.py (2,000 partitions) and
bench/many-partitions (10,000).

    create(b, topics, per_topic)       AdminClient CreateTopics, in requests of a few topics
    produce_one_each(b, names)         one record per partition (confluent_kafka producer)
    read_all(b, names)                 {(topic, partition): value} read back by one consumer
    broker_fds(b) / data_partitions(b) what the descriptor bound is checked against
"""
import os
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from gregor import check, eq


def topic_names(topics, prefix="wide"):
    return ["%s%03d" % (prefix, i) for i in range(topics)]


def create(b, names, per_topic, batch=10, timeout_s=300, config=None):
    """Creates every topic with per_topic partitions, batch topics per CreateTopics request."""
    a = AdminClient({"bootstrap.servers": b.bootstrap})
    for i in range(0, len(names), batch):
        futs = a.create_topics([NewTopic(t, per_topic, 1, config=config or {}) for t in names[i:i + batch]],
                               request_timeout=timeout_s, operation_timeout=timeout_s)
        for t, f in futs.items():
            f.result(timeout=timeout_s)


def value(topic, partition):
    return ("%s/%d" % (topic, partition)).encode()


def produce_one_each(b, names, per_topic, timeout_s=120):
    p = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 50, "acks": "all"})
    errors = []

    def on_delivery(err, msg):
        if err:
            errors.append(err)

    for t in names:
        for i in range(per_topic):
            p.produce(t, value=value(t, i), partition=i, on_delivery=on_delivery)
            p.poll(0)
    eq(p.flush(timeout_s), 0, "records left unsent")
    eq(errors[:3], [], "delivery errors")


def read_all(b, names, per_topic, timeout_s=180):
    """Reads every partition from offset 0 until each gave its one record; returns the count read."""
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "many", "enable.auto.commit": False,
                  "fetch.wait.max.ms": 100})
    c.assign([TopicPartition(t, i, 0) for t in names for i in range(per_topic)])
    want = len(names) * per_topic
    got = {}
    deadline = time.monotonic() + timeout_s
    try:
        while len(got) < want and time.monotonic() < deadline:
            for m in c.consume(1000, 1.0):
                if m.error():
                    raise AssertionError("consume error: %s" % m.error())
                key = (m.topic(), m.partition())
                check(key not in got, "%s read twice" % (key,))
                eq(m.offset(), 0, "offset of the record of %s" % (key,))
                eq(m.value(), value(*key), "value of %s" % (key,))
                got[key] = m.value()
    finally:
        c.close()
    eq(len(got), want, "partitions read back")
    return len(got)


def broker_fds(b):
    return len(os.listdir("/proc/%d/fd" % b.pid))


def data_partitions(b):
    """Partition directories in the log dir (internal topics included)."""
    return sum(1 for d in os.listdir(b.data_dir)
               if os.path.isdir(os.path.join(b.data_dir, d)) and "-" in d)

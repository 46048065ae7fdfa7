#!/usr/bin/python3
"""1077: sessionless clients reading 1,000 partitions, with fetch sessions served.

One record per partition of a 1,000-partition topic (confluent_kafka
producer). Then confluent_kafka (librdkafka) and kafka-python consumers,
assigned every partition from the beginning, must each read every record
exactly once. The broker runs with log.debug=broker,proto, which logs the
Fetch versions clients use and every request that carries a session id or
an epoch other than -1: the test reports what it saw (at the time of
writing, neither client sends sessions: librdkafka 2.0.2 sends Fetch v11
with SessionId 0 / epoch -1, kafka-python 2.0.2 Fetch v4 without the
fields); a client that starts sending them is served by the same code
that 1075 tests on the raw wire.
"""
import os
import re
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, check, eq, log, main  # noqa: E402

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

N = 1000
TOPIC = "wide"
DEADLINE_S = 120


def produce_all(bootstrap):
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for i in range(N):
        p.produce(TOPIC, value=b"v%d" % i, partition=i)
        p.poll(0)
    eq(p.flush(60), 0, "records left unsent")


def consume_confluent(bootstrap):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "g1077", "enable.auto.commit": False,
                  "fetch.wait.max.ms": 100})
    c.assign([TopicPartition(TOPIC, i, 0) for i in range(N)])
    got = {}
    deadline = time.monotonic() + DEADLINE_S
    while len(got) < N and time.monotonic() < deadline:
        for m in c.consume(500, 1.0):
            if m.error():
                raise AssertionError("consume error: %s" % m.error())
            check(m.partition() not in got, "partition %d read twice" % m.partition())
            got[m.partition()] = m.value()
    c.close()
    return got


def consume_kafka_python(bootstrap):
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTP
    c = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, fetch_max_wait_ms=100)
    c.assign([KTP(TOPIC, i) for i in range(N)])
    c.seek_to_beginning()
    got = {}
    deadline = time.monotonic() + DEADLINE_S
    while len(got) < N and time.monotonic() < deadline:
        for tp, msgs in c.poll(timeout_ms=1000, max_records=1000).items():
            for m in msgs:
                check(tp.partition not in got, "partition %d read twice" % tp.partition)
                got[tp.partition] = m.value
    c.close()
    return got


def fetch_report(text):
    versions = sorted(set(int(v) for v in re.findall(r"Fetch v(\d+)", text)))
    sessions = re.findall(r"fetch session (-?\d+) epoch (-?\d+)", text)
    return versions, sessions


def test():
    props = {"log.debug": "broker,proto", "num.partitions": 1}
    with Broker(props=props) as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        for f in admin.create_topics([NewTopic(TOPIC, N, 1)]).values():
            f.result()
        produce_all(b.bootstrap)
        want = {i: b"v%d" % i for i in range(N)}
        for name, fn in (("confluent_kafka", consume_confluent), ("kafka-python", consume_kafka_python)):
            since = b.log_size()
            got = fn(b.bootstrap)
            eq(len(got), N, "%s: partitions read" % name)
            eq(got, want, "%s: records" % name)
            with open(b.log_path, errors="replace") as f:
                f.seek(since)
                versions, sessions = fetch_report(f.read())
            log("%s: Fetch versions %s, %d requests with a session id or epoch != -1 %s" %
                (name, versions, len(sessions), sessions[:3]))
            check(versions, "%s: fetches seen in the debug log" % name)
        eq(b.stop(), 0, "exit status")


if __name__ == "__main__":
    main(test)

"""confluent-kafka-python (librdkafka 2.0.2): admin create_topics with its error
cases, Producer produce + flush, Consumer assign + seek, offsets_for_times,
get_watermark_offsets - all against exact expected values."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, eq, check, log, main  # noqa: E402

from confluent_kafka import (Consumer, KafkaError, KafkaException, Producer,  # noqa: E402
                             TopicPartition, TIMESTAMP_CREATE_TIME, OFFSET_BEGINNING)
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

N = 100
T0 = 1700000000000          # CreateTime of message 0 (ms); message i has T0 + i*1000


def create_err(admin, topic, partitions=1):
    """Create one topic; return the KafkaError code (KafkaError.NO_ERROR on success)."""
    fs = admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)],
                             request_timeout=15, operation_timeout=10)
    eq(sorted(fs.keys()), [topic], "create_topics futures")
    try:
        fs[topic].result(timeout=30)
        return KafkaError.NO_ERROR
    except KafkaException as e:
        log("create %r: %s" % (topic, e.args[0]))
        return e.args[0].code()


def test():
    with Broker(overrides={"auto.create.topics.enable": "false", "num.partitions": "1"}) as b:
        topic = "itest-confluent-%d" % os.getpid()
        admin = AdminClient({"bootstrap.servers": b.bootstrap})

        # -- admin ------------------------------------------------------
        eq(create_err(admin, topic, 3), KafkaError.NO_ERROR, "create %s" % topic)
        eq(create_err(admin, topic, 3), KafkaError.TOPIC_ALREADY_EXISTS, "duplicate create_topics error")
        eq(create_err(admin, "bad/name*"), KafkaError.TOPIC_EXCEPTION, "invalid topic name error")
        eq(create_err(admin, "x" * 250), KafkaError.TOPIC_EXCEPTION, "250-char topic name error")
        eq(create_err(admin, "bad-parts", 0), KafkaError.INVALID_PARTITIONS, "0 partitions error")

        md = admin.list_topics(timeout=10)
        eq(len(md.brokers), 1, "number of brokers in metadata")
        br = next(iter(md.brokers.values()))
        eq((br.host, br.port), ("127.0.0.1", b.port), "advertised broker address")
        check(topic in md.topics, "topic %s missing from list_topics: %r" % (topic, sorted(md.topics)))
        check("bad/name*" not in md.topics and "bad-parts" not in md.topics,
              "rejected topic was created: %r" % sorted(md.topics))
        t = md.topics[topic]
        eq(t.error, None, "topic metadata error")
        eq(sorted(t.partitions.keys()), [0, 1, 2], "partition ids")
        for p in t.partitions.values():
            eq(p.leader, br.id, "partition %d leader" % p.id)
            eq(p.error, None, "partition %d error" % p.id)

        # -- produce ----------------------------------------------------
        reports = []

        def on_delivery(err, msg):
            reports.append((err, msg.partition(), msg.offset(), msg.key()))

        prod = Producer({"bootstrap.servers": b.bootstrap, "acks": "all", "linger.ms": 5})
        for i in range(N):
            prod.produce(topic, key=b"k%03d" % i, value=b"value-%03d-" % i + bytes(range(256)) * (i % 4),
                         partition=0, timestamp=T0 + i * 1000, headers=[("i", str(i).encode())],
                         on_delivery=on_delivery)
            prod.poll(0)
        eq(prod.flush(30), 0, "messages still queued after flush")
        eq(len(reports), N, "delivery reports")
        eq([r[0] for r in reports if r[0] is not None], [], "delivery errors")
        eq([(r[1], r[2]) for r in reports], [(0, i) for i in range(N)], "(partition, offset) per message")

        # -- watermarks -------------------------------------------------
        cons = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "itest-0004-%d" % os.getpid(),
                         "enable.auto.commit": False, "enable.auto.offset.store": False,
                         "check.crcs": True, "fetch.wait.max.ms": 100})
        try:
            eq(cons.get_watermark_offsets(TopicPartition(topic, 0), timeout=10, cached=False), (0, N),
               "watermarks of partition 0")
            for p in (1, 2):
                eq(cons.get_watermark_offsets(TopicPartition(topic, p), timeout=10, cached=False), (0, 0),
                   "watermarks of empty partition %d" % p)

            # -- assign + consume all -----------------------------------
            cons.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
            got = consume(cons, N)
            eq([m.offset() for m in got], list(range(N)), "consumed offsets")
            for i, m in enumerate(got):
                eq(m.key(), b"k%03d" % i, "key at offset %d" % i)
                eq(m.value(), b"value-%03d-" % i + bytes(range(256)) * (i % 4), "value at offset %d" % i)
                eq(m.timestamp(), (TIMESTAMP_CREATE_TIME, T0 + i * 1000), "timestamp at offset %d" % i)
                eq(m.headers(), [("i", str(i).encode())], "headers at offset %d" % i)

            # -- seek back ----------------------------------------------
            cons.seek(TopicPartition(topic, 0, 50))
            again = consume(cons, 10)
            eq([m.offset() for m in again], list(range(50, 60)), "offsets after seek(50)")
            eq(again[0].key(), b"k050", "key after seek(50)")
            cons.seek(TopicPartition(topic, 0, 0))
            eq(consume(cons, 1)[0].offset(), 0, "offset after seek(0)")

            # -- offsets_for_times --------------------------------------
            def oft(ts):
                r = cons.offsets_for_times([TopicPartition(topic, 0, ts)], timeout=10)
                eq(len(r), 1, "offsets_for_times result count")
                eq(r[0].error, None, "offsets_for_times(%d) error" % ts)
                return r[0].offset

            eq(oft(T0), 0, "offset for ts of message 0")
            eq(oft(T0 - 5000), 0, "offset for ts before the first message")
            eq(oft(T0 + 50 * 1000), 50, "offset for ts of message 50")
            eq(oft(T0 + 50 * 1000 + 1), 51, "offset for ts just after message 50")
            eq(oft(T0 + 99 * 1000), 99, "offset for ts of the last message")
            eq(oft(T0 + 99 * 1000 + 1), -1, "offset for ts after the last message (none)")
        finally:
            cons.close()


def consume(cons, n, timeout_s=30):
    import time
    out = []
    deadline = time.monotonic() + timeout_s
    while len(out) < n:
        if time.monotonic() > deadline:
            raise AssertionError("consumed %d of %d messages within %ds (last offset %s)"
                                 % (len(out), n, timeout_s, out[-1].offset() if out else None))
        m = cons.poll(0.2)
        if m is None:
            continue
        if m.error():
            raise AssertionError("consume error: %s" % m.error())
        out.append(m)
    return out


main(test)

#!/usr/bin/python3
"""1021: cleanup.policy=compact topics are never deleted by retention.

Kafka Connect's config/offset/status topics and Schema Registry's _schemas
are compacted and rely on every key's last value staying.  Three topics
with segment.bytes=400 (one ~250-byte batch per segment), retention.ms=100
and retention.bytes=500, 10 keys each, with the broker checking retention
every 100 ms:
  compact          every key still readable after several retention passes
                   and after a restart (log start offset stays 0)
  compact,delete   retention applies (Kafka's combined policy)
  delete           retention applies
Runtime ~5 s.
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

from gregor import Broker, check, eq, log, main, wait_until  # noqa: E402

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

POLICIES = {"comp": "compact", "both": "compact,delete", "plain": "delete"}
KEYS = 10


def low_high(b, topic):
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "g"})
    try:
        return c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    finally:
        c.close()


def read_keys(b, topic):
    lo, hi = low_high(b, topic)
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "g", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, lo)])
    got = {}
    for _ in range(hi - lo):
        m = c.poll(5)
        check(m is not None and not m.error(), "%s: read failed after %d records" % (topic, len(got)))
        got[m.key()] = m.value()
    c.close()
    return got


def test():
    with Broker(overrides={"num.partitions": "1", "log.retention.check.interval.ms": "100"}) as b:
        a = AdminClient({"bootstrap.servers": b.bootstrap})
        cfg = {"segment.bytes": "400", "retention.ms": "100", "retention.bytes": "500"}
        fs = a.create_topics([NewTopic(t, 1, 1, config=dict(cfg, **{"cleanup.policy": p}))
                              for t, p in POLICIES.items()], operation_timeout=10)
        for f in fs.values():
            f.result(timeout=15)
        p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all", "linger.ms": 0})
        for t in POLICIES:
            for k in range(KEYS):
                p.produce(t, key=b"key-%d" % k, value=b"v" * 200)
                eq(p.flush(10), 0, "unsent")  # one batch each: one segment each
        want = {b"key-%d" % k: b"v" * 200 for k in range(KEYS)}
        for t in ("both", "plain"):
            wait_until(lambda: low_high(b, t)[0] > 0, 10, "retention to delete the head of '%s'" % t)
            log("%s: log start %d after retention" % (t, low_high(b, t)[0]))
        time.sleep(0.5)  # several more retention passes
        eq(low_high(b, "comp"), (0, KEYS), "watermarks of the compacted topic")
        eq(read_keys(b, "comp"), want, "every key of the compacted topic")
        eq(len([n for n in os.listdir(b.partition_dir("comp", 0)) if n.endswith(".log")]), KEYS,
           "segments of the compacted topic")
        b.restart()
        time.sleep(0.5)
        eq(low_high(b, "comp"), (0, KEYS), "watermarks of the compacted topic after a restart")
        eq(read_keys(b, "comp"), want, "every key of the compacted topic after a restart")
        b.stop()


main(test)

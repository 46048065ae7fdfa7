#!/usr/bin/python3
"""ListOffsets by timestamp answers the exact record, as Kafka does, for
ordinary librdkafka data (confluent-kafka, acks=all): 100 records with
CreateTime t0 + i s in one partition, looked up before the first record,
between records, on a record, at the last one and past the end; the same
inside compressed batches of every codec (the broker decompresses to find
the record); across older segments of a partition that rolled every few
batches (segment.bytes=1024), whose sparse time indexes have no entry at or
below many targets and are scanned from the segment start; and all of it
again after kill -9 and a restart (indexes reloaded or rebuilt).
MaxTimestamp -1 batches (raw produce) are 1031-max-timestamp.py.
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402
from gregor import Broker, check, eq, log, main  # noqa: E402

S = 1000
N = 100
# (target relative to t0 in ms, expected offset)
SHAPES = [(-5 * S, 0), (0, 0), (20 * S, 20), (49 * S + 500, 50), (73 * S + 1, 74), (99 * S, 99), (99 * S + 1, -1),
          (10**9, -1)]
TOPICS = {"ot-plain": ("none", {}), "ot-gzip": ("gzip", {}), "ot-snappy": ("snappy", {}), "ot-lz4": ("lz4", {}),
          "ot-zstd": ("zstd", {}), "ot-segments": ("none", {"segment.bytes": "1024"}),
          "ot-segments-lz4": ("lz4", {"segment.bytes": "1024"})}


def create(b):
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    fs = admin.create_topics([NewTopic(t, num_partitions=1, replication_factor=1, config=cfg)
                              for t, (_, cfg) in TOPICS.items()], operation_timeout=10)
    for f in fs.values():
        f.result(timeout=10)


def produce(b, topic, codec, t0):
    segmented = "segments" in topic
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all", "compression.type": codec,
                  "linger.ms": 5 if segmented else 100, "batch.num.messages": 7 if segmented else 10000})
    errs = []
    for i in range(N):
        p.produce(topic, value=b"record-%03d" % i * 3, key=b"k%d" % i, partition=0, timestamp=t0 + i * S,
                  on_delivery=lambda e, m: errs.append(e) if e else None)
        if segmented and i % 7 == 6:
            p.flush(10)  # several batches, several segments
    eq(p.flush(15), 0, "%s: all delivered" % topic)
    eq(errs, [], "%s: delivery errors" % topic)


def check_lookups(b, t0, when):
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "ot"})
    try:
        for topic in TOPICS:
            tps = [TopicPartition(topic, 0, t0 + rel) for rel, _ in SHAPES]
            got = []
            for tp in tps:  # one per request: each shape on its own
                got.append(c.offsets_for_times([tp], timeout=10)[0].offset)
            want = [off for _, off in SHAPES]
            log("%s %s: %s" % (when, topic, got))
            eq(got, want, "%s: %s offsets for t0 + %s" % (when, topic, [rel for rel, _ in SHAPES]))
    finally:
        c.close()


def test():
    with Broker() as b:
        t0 = int(time.time() * 1000) - 600 * S
        create(b)
        for topic, (codec, _) in TOPICS.items():
            produce(b, topic, codec, t0)
        nsegs = len([f for f in os.listdir(b.partition_dir("ot-segments")) if f.endswith(".log")])
        log("ot-segments has %d segments" % nsegs)
        check(nsegs >= 5, "ot-segments rolled into several segments (%d)" % nsegs)
        check_lookups(b, t0, "live")
        b.kill9()
        b.start()
        check_lookups(b, t0, "after kill -9")


main(test)

#!/usr/bin/python3
"""1081: a new partition is a directory, its first .log and partition.metadata.

Making partitions is dominated by the file system's inode allocation, so a
new partition makes no index file and no leader-epoch-checkpoint: the
indexes appear with their first entry, the epoch file with the first epoch
change (log/epochs.h: a missing file is epoch 0 from offset 0).
  1. 8 partitions made with the AdminClient (segment.bytes 4096,
     index.interval.bytes 256): each directory holds exactly its
     00000000000000000000.log and partition.metadata (partition 0 also
     topic.properties);
  2. a few small records to partition 1 leave it so; 300 records of 100 B
     to partition 0 roll segments, whose index files then exist;
  3. clean stop, the sealed segments' .index and .timeindex of partition 0
     removed; kill -9 after new records; both restarts read every record
     back in order and answer offsets_for_times from the missing time index
     by scanning; appends go on.
Runtime ~5 s.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

from gregor import Broker, check, eq, log, main  # noqa: E402

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

TOPIC, PARTS = "lazy", 8
BASE_TS = 1700000000000


def produce(b, part, values, ts0):
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all", "linger.ms": 0})
    for i, v in enumerate(values):
        p.produce(TOPIC, value=v, partition=part, timestamp=ts0 + i)
        p.flush(10)  # one batch each: the index interval counts batches
    eq(p.flush(30), 0, "records left unsent")


def read(b, part, n):
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "g1081", "enable.auto.commit": False})
    c.assign([TopicPartition(TOPIC, part, 0)])
    got = []
    while len(got) < n:
        ms = c.consume(n - len(got), 10)
        check(ms, "records of partition %d after %d" % (part, len(got)))
        for m in ms:
            check(m.error() is None, "consume error %s" % m.error())
            got.append(m.value())
    c.close()
    return got


def offset_for(b, part, ts):
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "g1081t"})
    r = c.offsets_for_times([TopicPartition(TOPIC, part, ts)], 10)
    c.close()
    return r[0].offset


def files(b, part):
    return sorted(os.listdir(b.partition_dir(TOPIC, part)))


def test():
    with Broker(props={"auto.create.topics.enable": "false"}) as b:
        a = AdminClient({"bootstrap.servers": b.bootstrap})
        cfg = {"segment.bytes": "4096", "index.interval.bytes": "256"}
        a.create_topics([NewTopic(TOPIC, PARTS, 1, config=cfg)])[TOPIC].result(30)
        eq(files(b, 0), ["00000000000000000000.log", "partition.metadata", "topic.properties"], "partition 0 files")
        for p in range(1, PARTS):
            eq(files(b, p), ["00000000000000000000.log", "partition.metadata"], "partition %d files" % p)

        small = [b"s%d" % i for i in range(3)]
        produce(b, 1, small, BASE_TS)
        eq(files(b, 1), ["00000000000000000000.log", "partition.metadata"], "partition 1 after 3 small records")
        vals = [b"%03d" % i + b"x" * 97 for i in range(300)]
        produce(b, 0, vals, BASE_TS)
        names = files(b, 0)
        logs = [n for n in names if n.endswith(".log")]
        check(len(logs) >= 4, "partition 0 rolled (%d segments)" % len(logs))
        sealed = [n[:-4] for n in sorted(logs)[:-1]]
        for s in sealed:
            check(s + ".index" in names and s + ".timeindex" in names, "index files of sealed segment %s" % s)
        log("%d segments in partition 0" % len(logs))

        b.stop()
        for s in sealed:
            for ext in (".index", ".timeindex"):
                os.unlink(os.path.join(b.partition_dir(TOPIC, 0), s + ext))
        b.start()
        eq(read(b, 0, len(vals)), vals, "partition 0 with its sealed indexes missing")
        eq(read(b, 1, len(small)), small, "partition 1 after a clean restart")
        eq(offset_for(b, 0, BASE_TS + 150), 150, "offsets_for_times without the time index")

        more = [b"m%d" % i for i in range(5)]
        produce(b, 1, more, BASE_TS + 1000)
        b.kill9()
        b.start()
        eq(read(b, 1, len(small) + len(more)), small + more, "partition 1 after kill -9")
        eq(read(b, 0, len(vals)), vals, "partition 0 after kill -9")
        produce(b, 0, [b"after"], BASE_TS + 2000)
        eq(read(b, 0, len(vals) + 1)[-1], b"after", "an append after the restarts")
        check("leader-epoch-checkpoint" not in files(b, 2), "no epoch file for an untouched partition")


main(test)

#!/usr/bin/python3
"""1061: the cleaner compacts a log of many sealed segments through a
descriptor cache of 2.

A pass plans on the event-loop thread: it opens each input segment through
the cache (log.segment.fd.cache.size=2 here, so planning 200 inputs evicts
all but two of them) and keeps its own reference to each .log for the
cleaner thread.  The pass must read every input, not a closed or reused
descriptor; the cleaned segments are then sealed like any other.  Checked
with confluent_kafka: 200 one-batch segments over 10 keys are compacted
while they are written (every key's last value kept, most older ones gone), a consumer
reads them while descriptors on the partition stay within the cache plus
the active segment and directory, and the same after a restart.
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from batchwire import create  # noqa: E402
from gregor import Broker, check, eq, log, main, wait_until  # noqa: E402

TOPIC = "compacted"
RECORDS = 200
KEYS = 10
CACHE = 2


def segments(b):
    return len([f for f in os.listdir(b.partition_dir(TOPIC)) if f.endswith(".log")])


def partition_fds(b):
    pdir = os.path.realpath(b.partition_dir(TOPIC))
    n = 0
    for name in os.listdir("/proc/%d/fd" % b.pid):
        try:
            n += os.readlink("/proc/%d/fd/%s" % (b.pid, name)).startswith(pdir)
        except OSError:
            pass
    return n


def read_all(b):
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "g1061", "enable.auto.commit": False})
    try:
        lo, hi = c.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=10)
        c.assign([TopicPartition(TOPIC, 0, lo)])
        got = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                if got and got[-1][0] >= hi - 1:
                    break
                continue
            check(m.error() is None, "consume error %s" % m.error())
            got.append((m.offset(), m.key(), m.value()))
        return got
    finally:
        c.close()


def value(i):
    return (b"v%d-" % i).ljust(200, b"x")


def check_compacted(b, what):
    got = read_all(b)
    latest = {}
    for i in range(RECORDS):
        latest[b"k%d" % (i % KEYS)] = (i, value(i))
    by_key = {}
    for off, k, v in got:
        check(off < RECORDS, "%s: offset %d past the log" % (what, off))
        eq(v, value(off), "%s: value at offset %d" % (what, off))
        by_key[k] = (off, v)
    eq(by_key, latest, "%s: every key's last value" % what)
    check(len(got) < RECORDS, "%s: %d records read, the log was not compacted" % (what, len(got)))
    n = partition_fds(b)
    log("%s: %d records, %d segments, %d descriptors on the partition" % (what, len(got), segments(b), n))
    check(n <= CACHE + 4, "%s: %d descriptors on the partition, cache %d" % (what, n, CACHE))


def test():
    props = {"log.segment.fd.cache.size": CACHE, "log.cleaner.backoff.ms": 100}
    with Broker(props=props) as b:
        create(b, TOPIC, {"cleanup.policy": "compact", "segment.bytes": "400", "min.cleanable.dirty.ratio": "0.01",
                          "delete.retention.ms": "0"})
        p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all", "linger.ms": 0})
        for i in range(RECORDS):
            p.produce(TOPIC, key=b"k%d" % (i % KEYS), value=value(i), partition=0)
            eq(p.flush(10), 0, "unsent")  # one batch each: one segment each
        # the cleaner ran meanwhile; passes of tens of inputs each, all but 2 evicted while planned
        wait_until(lambda: len(read_all(b)) < RECORDS // 2, 60, "the cleaner to compact the log", interval_s=1)
        check_compacted(b, "compacted")
        b.restart()
        check_compacted(b, "after a restart")


if __name__ == "__main__":
    main(test)

#!/usr/bin/python3
"""A partition of 5,000 small segments is served with a bounded number of
open descriptors, before and after a clean restart and a kill -9.

Sealed segments hold no descriptor until read and their indexes are mapped
only while open, through a cache of log.segment.fd.cache.size open segments
(least recently read closed first).  Before, every segment kept its .log,
.index and .timeindex open and its indexes on the heap: this partition alone
held 15,000 descriptors.  Checked with confluent_kafka: the first and the
last segment are consumed, a sweep reads more segments than the cache holds,
offsets_for_times finds records in old segments, and /proc/<pid>/fd stays
under the cache size plus a constant (the active segment, the directory,
the broker's own).  The kill -9 comes right after more segments were
written, so the start after it recovers the unsynced ones.
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from batchwire import create  # noqa: E402
from gregor import Broker, check, eq, log, main  # noqa: E402

TOPIC = "many"
SEGMENTS = 5000
PER_SEGMENT = 2  # batches of ~76 bytes: segment.bytes=160 rolls after 2, index.interval.bytes=0 indexes the 2nd
RECORDS = SEGMENTS * PER_SEGMENT
CACHE = 64
SLACK = 24  # the broker's own descriptors beyond the baseline (connections closing, files being synced)
T0 = int(time.time() * 1000) - 2 * 3600 * 1000  # within retention and message.timestamp.*.max.ms


def ts_of(i):
    return T0 + i * 100


def fds(b):
    """(all descriptors of the broker, those on files of the topic's partition directory)."""
    pdir = os.path.realpath(b.partition_dir(TOPIC))
    total = mine = 0
    for name in os.listdir("/proc/%d/fd" % b.pid):
        try:
            target = os.readlink("/proc/%d/fd/%s" % (b.pid, name))
        except OSError:
            continue  # closed meanwhile
        total += 1
        mine += target.startswith(pdir + "/") or target == pdir
    return total, mine


def check_fds(b, baseline, what):
    total, mine = fds(b)
    log("%s: %d descriptors, %d on the partition (baseline %d, cache %d)" % (what, total, mine, baseline, CACHE))
    check(mine <= CACHE + 4, "%s: %d descriptors on the partition's files, cache holds %d" % (what, mine, CACHE))
    check(total <= baseline + CACHE + SLACK, "%s: %d descriptors, baseline %d + cache %d" % (what, total, baseline, CACHE))


def produce_range(b, first, end):
    """Records first..end-1, one per batch (one produce request each)."""
    p = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 0, "batch.num.messages": 1, "acks": 1,
                  "enable.idempotence": False, "max.in.flight": 20, "queue.buffering.max.messages": 100000})
    errors = []
    for i in range(first, end):
        p.produce(TOPIC, value=b"v%d" % i, key=b"k%d" % i, partition=0, timestamp=ts_of(i),
                  on_delivery=lambda err, msg: err and errors.append(err))
        p.poll(0)
    eq(p.flush(120), 0, "messages left unflushed")
    eq(errors, [], "delivery errors")


def consume(b, start, count):
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "g1060", "enable.auto.commit": False,
                  "fetch.max.bytes": 1 << 20, "max.partition.fetch.bytes": 1 << 20})
    try:
        c.assign([TopicPartition(TOPIC, 0, start)])
        got = []
        deadline = time.monotonic() + 60
        while len(got) < count and time.monotonic() < deadline:
            m = c.poll(1.0)
            if m is None:
                continue
            check(m.error() is None, "consume error %s" % m.error())
            got.append((m.offset(), m.value(), m.timestamp()[1]))
        return got[:count]
    finally:
        c.close()


def check_reads(b, what, total):
    for start, count in ((0, 10), (total - 10, 10)):
        got = consume(b, start, count)
        eq(got, [(i, b"v%d" % i, ts_of(i)) for i in range(start, start + count)],
           "%s: records %d..%d" % (what, start, start + count - 1))
    # more segments than the cache holds, in one consumer
    got = consume(b, 100, 4 * CACHE)
    eq([o for o, _, _ in got], list(range(100, 100 + 4 * CACHE)), "%s: offsets of the sweep" % what)
    check(all(v == b"v%d" % o for o, v, _ in got), "%s: values of the sweep" % what)


def check_times(b, what, total):
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "g1060t", "enable.auto.commit": False})
    try:
        for i in (0, 7, 1234, 2500, 7001, total - 1):
            tps = c.offsets_for_times([TopicPartition(TOPIC, 0, ts_of(i))], timeout=10)
            eq(tps[0].offset, i, "%s: offset for the time of record %d" % (what, i))
            tps = c.offsets_for_times([TopicPartition(TOPIC, 0, ts_of(i) - 50)], timeout=10)
            eq(tps[0].offset, i, "%s: offset for a time just before record %d" % (what, i))
    finally:
        c.close()


def check_all(b, baseline, what, total=RECORDS):
    check_fds(b, baseline, what + " (before reads)")
    check_reads(b, what, total)
    check_times(b, what, total)
    time.sleep(0.5)  # let closed connections go
    check_fds(b, baseline, what + " (after reads)")


def test():
    props = {"log.segment.fd.cache.size": CACHE}
    with Broker(props=props) as b:
        create(b, TOPIC, {"segment.bytes": "160", "index.interval.bytes": "0"})
        warm = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "g1060"})
        warm.committed([TopicPartition(TOPIC, 0)], timeout=10)  # creates __consumer_offsets before the baseline
        warm.close()
        time.sleep(0.5)
        baseline = fds(b)[0]
        produce_range(b, 0, RECORDS)
        logs = [f for f in os.listdir(b.partition_dir(TOPIC)) if f.endswith(".log")]
        log("%d segments" % len(logs))
        check(len(logs) >= SEGMENTS, "%d segments, want %d" % (len(logs), SEGMENTS))
        check_all(b, baseline, "running")
        b.restart()
        check_all(b, baseline, "after a clean restart")
        produce_range(b, RECORDS, RECORDS + 400)  # 200 more segments, unsynced when killed
        b.kill9()
        b.start()
        check_all(b, baseline, "after kill -9", RECORDS + 400)


if __name__ == "__main__":
    main(test)

#!/usr/bin/python3
"""1082: a clean stop syncs the log dir once, not every partition's files.

A stop used to fdatasync the active segment's .index and .timeindex of
every partition, and first add a time-index entry to each (a new file for
most): two syncs per partition, seconds at thousands of partitions.  Now
one syncfs of the log dir covers every file, and only partitions with
data past their recovery point sync their .log on their own.
The producer snapshots a stop writes (one per partition written since
its last) are written before that syncfs, not fsynced one by one.
Under tests/lib/syncshim.so with a trace: 40 partitions with index
entries in their active segments (index.interval.bytes 128), idle and
checkpointed, then SIGTERM.  Checked: the stop's trace has a syncfs of
the log dir and no fsync of any file in a partition directory, each
partition has its snapshot, and the stop made no new index file; the marker is there, the next start skips recovery and
every record reads back, and a record produced then too.
Runtime ~5 s.
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

from gregor import Broker, check, eq, log, main  # noqa: E402
from syncshim import SyncShim  # noqa: E402

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

TOPIC, PARTS, PER = "quiet", 40, 20
MARKER = ".kafka_cleanshutdown"


def index_files(b):
    return sorted(f for p in range(PARTS) for f in os.listdir(b.partition_dir(TOPIC, p))
                  if f.endswith((".index", ".timeindex")))


def read_all(b, n):
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "g1082", "enable.auto.commit": False,
                  "fetch.wait.max.ms": 100})
    c.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTS)])
    got, deadline = {}, time.monotonic() + 30
    while sum(len(v) for v in got.values()) < n and time.monotonic() < deadline:
        for m in c.consume(1000, 1.0):
            check(m.error() is None, "consume error %s" % m.error())
            got.setdefault(m.partition(), []).append(m.value())
    c.close()
    return got


def test():
    with Broker(props={"auto.create.topics.enable": "false"}, start=False) as b:
        shim = SyncShim(trace=os.path.join(b.tmp, "trace.log"))
        b.env.update(shim.env())
        b.start()
        a = AdminClient({"bootstrap.servers": b.bootstrap})
        a.create_topics([NewTopic(TOPIC, PARTS, 1, config={"index.interval.bytes": "128"})])[TOPIC].result(30)
        p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all", "linger.ms": 0})
        for i in range(PER):
            for part in range(PARTS):
                p.produce(TOPIC, value=b"%02d-%03d-" % (part, i) + b"v" * 60, partition=part)
            eq(p.flush(30), 0, "records left unsent")  # one batch per partition per round
        before = index_files(b)
        check(len(before) >= PARTS, "index files with entries (%d)" % len(before))
        time.sleep(2.5)  # a recovery-point checkpoint covers every record
        mark = len(shim.trace_text())
        b.stop()
        stop_trace = shim.trace_text()[mark:].splitlines()
        part_syncs = [line for line in stop_trace if line.startswith("fsync ") and "/%s-" % TOPIC in line]
        log("stop: %d trace lines, %d syncs in partition directories" % (len(stop_trace), len(part_syncs)))
        eq(part_syncs[:3], [], "files synced one by one at the stop (index files, producer snapshots)")
        snaps = [f for p in range(PARTS) for f in os.listdir(b.partition_dir(TOPIC, p)) if f.endswith(".snapshot")]
        eq(len(snaps), PARTS, "producer snapshots written at the stop")
        check(any(line.startswith("syncfs ") for line in stop_trace), "one syncfs at the stop")
        eq(index_files(b), before, "index files after the stop (none made by it)")
        check(os.path.exists(os.path.join(b.data_dir, MARKER)), "clean-shutdown marker")

        b.start()
        starts = b.log_text().split("=== gregor-itest: start #")
        check("clean shutdown, no recovery needed" in starts[-1], "the next start skips recovery")
        want = {part: [b"%02d-%03d-" % (part, i) + b"v" * 60 for i in range(PER)] for part in range(PARTS)}
        eq(read_all(b, PARTS * PER), want, "records after the clean restart")
        p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all"})
        p.produce(TOPIC, value=b"after", partition=3)
        eq(p.flush(30), 0, "record after the restart")
        eq(read_all(b, PARTS * PER + 1)[3][-1], b"after", "appended after the restart")


main(test)

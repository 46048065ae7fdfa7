"""*.deleted files left by a crash or a stop are removed at start-up.

Retention deletes the sealed segments of a topic whose records are an hour
old; with file.delete.delay.ms at 10 minutes their files stay renamed
*.deleted.  The broker is killed (kill -9), and a stray *.deleted file is
added to another partition while it is down.  The restart must remove
every *.deleted file at once (not after the delay), keep everything the
log still holds.  DeleteRecords (raw protocol: no client here wraps it)
deletes segments the same way, and a clean stop with files still waiting
leaves them for the next start to remove the same way.
"""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, check, eq, log, main, wait_until  # noqa: E402

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic  # noqa: E402
import kwire  # noqa: E402

TOPIC = "itest-deleted-leftovers"
SEGMENT_BYTES = 64 * 1024
RECORDS = 2000


def deleted(b, p=0):
    return [f for f in os.listdir(b.partition_dir(TOPIC, p)) if f.endswith(".deleted")]


def produce_old(b, n, start):
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": "1", "linger.ms": 5, "batch.num.messages": 50})
    old_ms = int(time.time() * 1000) - 3600 * 1000
    for i in range(start, start + n):
        p.produce(TOPIC, value=b"r%06d" % i + b"y" * 200, partition=0, timestamp=old_ms)
        p.poll(0)
    eq(p.flush(30), 0, "records unacknowledged")


def read_from_start(b):
    """(first offset, last offset, count) a consumer reads from the log start."""
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "g-leftovers", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "enable.partition.eof": True})
    c.assign([TopicPartition(TOPIC, 0, -2)])
    offs = []
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            if offs:
                break  # end of partition
            continue
        offs.append(m.offset())
    c.close()
    return (offs[0], offs[-1], len(offs)) if offs else (None, None, 0)


def delete_records(b, offset):
    """DeleteRecords v0 of partition 0 below offset: [(topic, [(partition, low watermark, error)])]."""
    r = kwire.call(b.port, 21, 0, kwire.array([(TOPIC, [(0, offset)])], lambda t: kwire.string(t[0]) + kwire.array(
        t[1], lambda pe: kwire.i32(pe[0]) + kwire.i64(pe[1]))) + kwire.i32(10000))
    r.i32()  # throttle
    return r.array(lambda r: (r.string(), r.array(lambda r: (r.i32(), r.i64(), r.i16()))))


def retention_leaves_deleted(b, admin):
    wait_until(lambda: len(deleted(b)) > 0, 15, "retention renamed segments *.deleted")
    return len(deleted(b))


def test():
    overrides = {"log.retention.check.interval.ms": "300", "auto.create.topics.enable": "false"}
    with Broker(overrides=overrides) as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        cfg = {"segment.bytes": str(SEGMENT_BYTES), "file.delete.delay.ms": "600000", "retention.ms": "600000"}
        admin.create_topics([NewTopic(TOPIC, 2, 1, config=cfg)])[TOPIC].result(10)
        produce_old(b, RECORDS, 0)
        n = retention_leaves_deleted(b, admin)
        log("%d *.deleted files waiting out file.delete.delay.ms" % n)
        time.sleep(1.5)
        check(len(deleted(b)) >= n, "the delay is honoured while the broker runs")
        first, last, count = read_from_start(b)
        b.kill9()
        with open(os.path.join(b.partition_dir(TOPIC, 1), "00000000000000000000.log.deleted"), "wb") as f:
            f.write(b"\0" * 4096)
        since = b.log_size()
        b.start()
        wait_until(lambda: not deleted(b, 0) and not deleted(b, 1), 10,
                   "*.deleted leftovers removed at start-up, without waiting for the delay")
        b.wait_log("deleted before the last stop", since=since)
        eq(read_from_start(b), (first, last, count), "log start, end and records after the restart")

        # DeleteRecords below the last 100 records (retention off: only it deletes now)
        admin.alter_configs([ConfigResource("topic", TOPIC, set_config=dict(cfg, **{"retention.ms": "-1"}))])[
            ConfigResource("topic", TOPIC)].result(10)
        produce_old(b, RECORDS, last + 1)
        cut = last + 1 + RECORDS - 100
        # acks=1: the high watermark (DeleteRecords' bound) follows the next sync round
        wait_until(lambda: delete_records(b, cut) == [(TOPIC, [(0, cut, 0)])], 10,
                   "DeleteRecords answers (partition, low watermark %d, no error)" % cut)
        wait_until(lambda: len(deleted(b)) > 0, 5, "DeleteRecords renamed segments *.deleted")
        eq(read_from_start(b)[0], cut, "first offset served after DeleteRecords")
        log("DeleteRecords left %d *.deleted files" % len(deleted(b)))
        eq(b.stop(), 0, "exit status")  # a clean stop with those files waiting
        check(len(deleted(b)) > 0, "a stop leaves the waiting *.deleted files")
        b.start()
        wait_until(lambda: not deleted(b), 10, "*.deleted files left by a stop removed at start-up")


main(test)

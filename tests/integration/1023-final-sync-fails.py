#!/usr/bin/python3
"""1023: the clean-shutdown marker is written only when the final sync succeeded.

A broker whose marker says "clean" skips recovery at the next start, so a
marker written after a failed sync would let unsynced, possibly torn data be
trusted.  The broker runs under tests/lib/syncshim.so with FAIL_ALWAYS
making every fsync/fdatasync of topic 't''s segment files fail with EIO;
acks=1 messages are produced, then SIGTERM.  Checked: no
.kafka_cleanshutdown in the log dir, the broker's log says why, and the
next start (without the fault) recovers instead of skipping recovery and
serves every acknowledged message (a record that came after the failed
sync is answered KAFKA_STORAGE_ERROR and is not in the log).  A control
run without the fault leaves the marker.
Runtime ~3 s.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

from gregor import Broker, check, eq, main  # noqa: E402
from syncshim import FAIL_ALWAYS, SyncShim  # noqa: E402

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402

MARKER = ".kafka_cleanshutdown"


def produce(b, n):
    """Produces n acks=1 records in one batch (linger.ms); returns how many were acknowledged.

    Under the fault the sync round after the first append fails and takes
    the log dir offline, so a record that reached the broker in a later
    request is answered KAFKA_STORAGE_ERROR and never appended: only the
    acknowledged ones are in the log."""
    acked = []
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": "1", "linger.ms": 200,
                  "message.timeout.ms": 5000})
    for i in range(n):
        p.produce("t", value=b"m%d" % i, partition=0,
                  on_delivery=lambda err, _m: acked.append(1) if err is None else None)
    eq(p.flush(15), 0, "records neither acknowledged nor failed")
    return len(acked)


def count(b):
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "g"})
    lo, hi = c.get_watermark_offsets(TopicPartition("t", 0), timeout=10)
    c.close()
    return hi - lo


def test():
    with Broker(overrides={"num.partitions": "1"}, start=False) as b:
        b.env.update(SyncShim(trace=os.path.join(b.tmp, "trace.log")).env())
        b.start()
        eq(produce(b, 10), 10, "acknowledged without the fault")
        b.stop()
        check(os.path.exists(os.path.join(b.data_dir, MARKER)), "control: marker after a good shutdown")

        b.env[FAIL_ALWAYS] = "/t-0/0000"
        b.start()
        check(not os.path.exists(os.path.join(b.data_dir, MARKER)), "marker removed at start")
        acked = produce(b, 10)
        check(acked > 0, "the first batch is appended and acknowledged before its sync fails")
        b.stop()
        check(not os.path.exists(os.path.join(b.data_dir, MARKER)),
              "a clean-shutdown marker was written although the final sync failed")
        text = b.log_text()
        check("no clean-shutdown marker" in text or "not marked as cleanly shut down" in text,
              "the broker says why it leaves no marker")

        del b.env[FAIL_ALWAYS]
        b.start()
        starts = b.log_text().split("=== gregor-itest: start #")
        check("recovered after an unclean shutdown" in starts[-1], "the start after the failed sync recovers")
        eq(count(b), 10 + acked, "messages after recovery")
        b.stop()


main(test)

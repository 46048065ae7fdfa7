"""After kill -9, recovery reads only what lies past the recovery point, for acks=1 data too.

Two brokers, each with small segments and a 1 s checkpoint interval, take
acks=1 traffic over dozens of segments:

- the default (durable) policy: every append is synced by a round, so the
  checkpointed recovery point reaches the log end; a small tail is written
  after it and the broker is killed.  The restart's log line must say that
  recovery read only the tail's segments, far less than the log;
- the relaxed policy (log.flush.interval.messages set): rolled segments are
  synced when they roll, and the periodic flush of idle partitions makes the
  checkpoint reach the log end of a partition nobody writes to any more, so
  a kill -9 then makes recovery read nothing.

In both cases every acknowledged record is served after the restart.
"""

import os
import re
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, check, eq, log, main, wait_until  # noqa: E402

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402

TOPIC = "itest-recovpt"
SEGMENT_BYTES = 64 * 1024
VALUE = b"v" * 200


def checkpoint(b):
    """{(topic, partition): offset} of recovery-point-offset-checkpoint ({} if absent)."""
    try:
        with open(os.path.join(b.data_dir, "recovery-point-offset-checkpoint")) as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return {}
    return {(t, int(p)): int(o) for t, p, o in (line.split() for line in lines[2:])}


def produce(b, n, start):
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": "1", "linger.ms": 5,
                  "batch.num.messages": 50})
    acked = []

    def on_delivery(err, msg):
        if err is None:
            acked.append(msg.offset())

    for i in range(start, start + n):
        p.produce(TOPIC, value=VALUE + b"%d" % i, partition=0, on_delivery=on_delivery)
        p.poll(0)
    eq(p.flush(30), 0, "records left unacknowledged")
    eq(len(acked), n, "acks=1 acknowledgements")
    return max(acked) + 1


def consume_all(b, want):
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "g-recovpt", "enable.auto.commit": False})
    c.assign([TopicPartition(TOPIC, 0, 0)])
    seen = set()
    deadline = time.monotonic() + 60
    while len(seen) < want and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            seen.add(m.offset())
    c.close()
    eq(len(seen), want, "records served after the restart")
    eq(max(seen), want - 1, "last offset served")


def scanned(b, since):
    """(segments, bytes) of the restart's 'recovery scanned' line."""
    line = b.wait_log("recovery scanned", since=since)
    m = re.search(r"recovery scanned (\d+) segment\(s\), (\d+) bytes", line)
    check(m is not None, "recovery line parses: %r" % line)
    return int(m.group(1)), int(m.group(2))


def durable_policy():
    overrides = {"num.partitions": "1", "log.segment.bytes": str(SEGMENT_BYTES),
                 "log.flush.offset.checkpoint.interval.ms": "1000"}
    with Broker(overrides=overrides, name="1070-durable") as b:
        leo = produce(b, 8000, 0)
        segs = len([f for f in os.listdir(b.partition_dir(TOPIC)) if f.endswith(".log")])
        check(segs >= 20, "the log spans many segments (%d)" % segs)
        wait_until(lambda: checkpoint(b).get((TOPIC, 0)) == leo, 20, "checkpointed recovery point reaches %d" % leo)
        log("%d records in %d segments, checkpoint at the log end" % (leo, segs))
        leo = produce(b, 100, leo)  # the tail past the checkpoint
        b.kill9()
        since = b.log_size()
        b.start()
        nseg, nbytes = scanned(b, since)
        log("recovery after kill -9 read %d segment(s), %d bytes" % (nseg, nbytes))
        # the tail may have rolled once: the active segment and the one before it
        check(nseg <= 2, "recovery read at most the tail's segments, not %d of %d" % (nseg, segs))
        check(nbytes <= 2 * SEGMENT_BYTES, "recovery read %d bytes, not the whole log" % nbytes)
        consume_all(b, leo)


def relaxed_policy():
    overrides = {"num.partitions": "1", "log.segment.bytes": str(SEGMENT_BYTES),
                 "log.flush.interval.messages": "1000000000",
                 "log.flush.offset.checkpoint.interval.ms": "1000"}
    with Broker(overrides=overrides, name="1070-relaxed") as b:
        leo = produce(b, 3000, 0)
        time.sleep(1.5)  # the round a roll asked for is over
        leo = produce(b, 5, leo)  # a tail that does not roll (1 KB)
        # idle from now on: only the periodic flush can move the recovery point past the last roll
        wait_until(lambda: checkpoint(b).get((TOPIC, 0)) == leo, 20,
                   "checkpointed recovery point of the idle partition reaches its log end %d" % leo)
        b.kill9()
        since = b.log_size()
        b.start()
        nseg, nbytes = scanned(b, since)
        log("relaxed policy: recovery after kill -9 read %d segment(s), %d bytes" % (nseg, nbytes))
        eq(nseg, 0, "segments read by recovery of a partition synced to its end")
        consume_all(b, leo)


def test():
    durable_policy()
    relaxed_policy()


main(test)

#!/usr/bin/python3
"""1041: a deleted topic's directories stay file.delete.delay.ms before removal.

As Kafka's log manager, DeleteTopics renames each partition directory to
<topic>-<p>.<uuid>-delete and answers at once; the background thread
removes the files only once the topic's file.delete.delay.ms has passed
(readers still holding them can finish).  Checked with confluent_kafka's
AdminClient:

1. topic 'dd' (2 partitions, file.delete.delay.ms=3000) is deleted: right
   after the answer both -delete directories exist, and still do 1 s later
   (when the broker is not too slow to tell); a new 'dd' made right away
   works (produce and read back) next to them; they are gone a few seconds
   later.
2. log.segment.delete.delay.ms=3000 (the broker default of the topic key):
   topic 'ee' is deleted and the broker stopped before the delay passed;
   the -delete directory is still there at the next start (Kafka's start-up
   waits the delay again) and goes a few seconds later.
Runtime ~12 s.
"""
import os
import re
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

from gregor import Broker, check, eq, log, main, wait_until  # noqa: E402

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402


def admin(b):
    return AdminClient({"bootstrap.servers": b.bootstrap, "socket.timeout.ms": 5000})


def create(b, name, parts, config=None):
    a = admin(b)  # kept until the result is in
    fs = a.create_topics([NewTopic(name, parts, 1, config=config or {})], operation_timeout=10)
    fs[name].result(timeout=15)


def delete(b, name):
    a = admin(b)
    a.delete_topics([name], operation_timeout=10)[name].result(timeout=15)


def produce(b, topic, parts, value):
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all"})
    for part in range(parts):
        p.produce(topic, value=value, partition=part)
    eq(p.flush(15), 0, "messages left unsent to %s" % topic)


def read_one(b, topic):
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "g1041", "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and not m.error():
                return m.value()
        return None
    finally:
        c.close()


def aside(b, topic):
    """Names of topic's directories set aside for deletion."""
    pat = re.compile(re.escape(topic) + r"-\d+\.[0-9a-f]{32}-delete")
    return sorted(n for n in os.listdir(b.data_dir) if pat.fullmatch(n))


def test():
    with Broker(overrides={"num.partitions": "1", "auto.create.topics.enable": "false"}) as b:
        log("1. topic config file.delete.delay.ms=3000")
        create(b, "dd", 2, {"file.delete.delay.ms": "3000"})
        produce(b, "dd", 2, b"old")
        delete(b, "dd")
        t0 = time.monotonic()
        eq(len(aside(b, "dd")), 2, "-delete directories right after DeleteTopics")
        check(not os.path.exists(b.partition_dir("dd", 0)), "partition 0 renamed away")
        time.sleep(1)
        if time.monotonic() - t0 < 2.5:
            eq(len(aside(b, "dd")), 2, "-delete directories 1 s after DeleteTopics")
        create(b, "dd", 1)
        produce(b, "dd", 1, b"new")
        eq(read_one(b, "dd"), b"new", "the re-created 'dd' serves its own record")
        wait_until(lambda: not aside(b, "dd"), 15, "the -delete directories to be removed")
        check(os.path.isdir(b.partition_dir("dd", 0)), "the new 'dd' is untouched by the removal")
        b.wait_log("removed '")

        log("2. broker default log.segment.delete.delay.ms=3000, across a restart")
        b.stop()
        b.overrides["log.segment.delete.delay.ms"] = "3000"
        b.start()
        create(b, "ee", 1)
        produce(b, "ee", 1, b"e")
        delete(b, "ee")
        eq(len(aside(b, "ee")), 1, "-delete directory right after DeleteTopics")
        b.stop()
        eq(len(aside(b, "ee")), 1, "-delete directory left at the stop")
        b.start()
        eq(len(aside(b, "ee")), 1, "-delete directory right after the start")
        wait_until(lambda: not aside(b, "ee"), 15, "the leftover -delete directory to be removed")
        eq(read_one(b, "dd"), b"new", "'dd' after the restart")


main(test)

"""Retention deletes segments in the background while consumers read them.

A 48 MB backlog in 1 MiB segments, its records an hour old, is read by
three slow consumers (small fetch queues, so responses sit half-sent in
the broker's socket buffers, served by sendfile from the segment files).
Meanwhile retention.ms drops to 10 minutes with file.delete.delay.ms at
3 s: every sealed segment is deleted at the next check.

- every record a consumer receives is the one written at its offset (CRCs
  checked), and no consumer sees an error other than the reset of a
  position that fell below the log start;
- the deleted segments' files are first renamed *.deleted (Kafka's
  suffix), then removed by the background thread once the delay passed;
- the broker keeps serving: a record produced afterwards is read back.
"""

import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, check, eq, log, main, wait_until  # noqa: E402

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic  # noqa: E402

TOPIC = "itest-retain-read"
SEGMENT_BYTES = 1 << 20
RECORDS = 48 * 1024
PAD = b"x" * 1000


def value(offset):
    return b"%010d" % offset + PAD


def produce_backlog(b):
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": "1", "linger.ms": 20,
                  "compression.type": "none", "queue.buffering.max.kbytes": 65536})
    old_ms = int(time.time() * 1000) - 3600 * 1000
    for i in range(RECORDS):
        while True:
            try:
                p.produce(TOPIC, value=value(i), partition=0, timestamp=old_ms)
                break
            except BufferError:
                p.poll(0.1)
        p.poll(0)
    eq(p.flush(60), 0, "backlog records unacknowledged")


class Reader(threading.Thread):
    def __init__(self, b, n):
        super().__init__(daemon=True)
        self.c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "g-retain-%d" % n,
                           "enable.auto.commit": False, "auto.offset.reset": "earliest",
                           "check.crcs": True, "queued.max.messages.kbytes": 256,
                           "fetch.max.bytes": 4 << 20, "max.partition.fetch.bytes": 4 << 20})
        self.c.assign([TopicPartition(TOPIC, 0, 0)])
        self.count = 0
        self.bad = []
        self.stop = False

    def run(self):
        while not self.stop:
            m = self.c.poll(0.2)
            if m is None:
                continue
            if m.error():
                if m.error().code() not in (KafkaError._PARTITION_EOF, KafkaError._AUTO_OFFSET_RESET,
                                            KafkaError.OFFSET_OUT_OF_RANGE):
                    self.bad.append(str(m.error()))
                continue
            if m.value() != value(m.offset()):
                self.bad.append("offset %d holds %r" % (m.offset(), m.value()[:16]))
            self.count += 1
            if self.count % 200 == 0:
                time.sleep(0.01)  # slow: the broker's responses wait in its socket buffers
        self.c.close()


def files(b, suffix):
    return [f for f in os.listdir(b.partition_dir(TOPIC)) if f.endswith(suffix)]


def test():
    overrides = {"log.retention.check.interval.ms": "300", "auto.create.topics.enable": "false"}
    with Broker(overrides=overrides) as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        cfg = {"segment.bytes": str(SEGMENT_BYTES), "file.delete.delay.ms": "3000", "retention.ms": "-1"}
        admin.create_topics([NewTopic(TOPIC, 1, 1, config=cfg)])[TOPIC].result(10)
        produce_backlog(b)
        nlogs = len(files(b, ".log"))
        check(nlogs >= 40, "backlog spans many segments (%d)" % nlogs)
        readers = [Reader(b, n) for n in range(3)]
        for r in readers:
            r.start()
        wait_until(lambda: all(r.count > 2000 for r in readers), 30, "readers under way")
        cfg["retention.ms"] = "600000"
        admin.alter_configs([ConfigResource("topic", TOPIC, set_config=cfg)])[
            ConfigResource("topic", TOPIC)].result(10)
        # one retention pass renames the segments one after another: wait for its end
        wait_until(lambda: len(files(b, ".log.deleted")) > 0 and len(files(b, ".log")) == 1, 10,
                   "every sealed segment renamed *.deleted, the active one left")
        log("%d .log files renamed *.deleted while %s records were read" %
            (len(files(b, ".log.deleted")), [r.count for r in readers]))
        wait_until(lambda: not files(b, ".deleted"), 20, "*.deleted files removed after file.delete.delay.ms")
        time.sleep(1)
        for r in readers:
            r.stop = True
        for r in readers:
            r.join(20)
        for r in readers:
            eq(r.bad, [], "reader errors or wrong records")
        log("readers read %s records, none wrong" % [r.count for r in readers])
        p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all"})
        p.produce(TOPIC, value=b"after", partition=0)
        eq(p.flush(10), 0, "record after retention acknowledged")
        c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "g-after", "auto.offset.reset": "latest"})
        c.assign([TopicPartition(TOPIC, 0, RECORDS)])
        got = None
        deadline = time.monotonic() + 15
        while got is None and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and not m.error():
                got = m.value()
        c.close()
        eq(got, b"after", "record read after retention")


main(test)

#!/usr/bin/python3
"""1083: after kill -9, recovery CRC-checks the active segment from the recovery point, not from its start.

The bytes of a segment below the recovery point were synced before the
point moved past them, as whole segments below it are: recovery walks
their batch headers (to rebuild the indexes) but reads and checks only
the batches past it.  Before, a segment holding the point was read whole:
with 1 GiB segments, up to a GiB per partition after every crash.
Under tests/lib/syncshim.so: 200 records (about 200 KB) in one segment,
acks=1, until the recovery-point checkpoint covers them; then the
partition's syncs are held, 20 more records are written one batch each
(acks=1 answers without the sync), a byte inside the last batch is
flipped, and the broker is killed.  Checked: the restart's "recovery
read" line names the checkpointed point and far fewer bytes than the
segment (the 20 records' ~20 KB, not ~220 KB); the corrupt last batch is
cut and every other record reads back in order.
Runtime ~5 s.
"""
import os
import re
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

from gregor import Broker, check, eq, log, main, wait_until  # noqa: E402
from syncshim import SyncShim  # noqa: E402

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402

TOPIC, FIRST, MORE = "r", 200, 20


def value(i):
    return b"%05d-" % i + b"v" * 1000


def checkpoint_of(b):
    try:
        with open(os.path.join(b.data_dir, "recovery-point-offset-checkpoint")) as f:
            for line in f.read().splitlines()[2:]:
                name, p, off = line.split()
                if name == TOPIC and int(p) == 0:
                    return int(off)
    except (OSError, ValueError):
        pass
    return -1


def produce(b, first, n, per_flush):
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": "1", "linger.ms": 0})
    for i in range(first, first + n):
        p.produce(TOPIC, value=value(i), partition=0)
        if (i + 1) % per_flush == 0:
            eq(p.flush(10), 0, "records left unacknowledged")
    eq(p.flush(10), 0, "records left unacknowledged")


def read_all(b, n):
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "g1083", "enable.auto.commit": False,
                  "fetch.wait.max.ms": 100})
    c.assign([TopicPartition(TOPIC, 0, 0)])
    got, deadline = [], time.monotonic() + 20
    while len(got) < n and time.monotonic() < deadline:
        for m in c.consume(500, 0.5):
            check(m.error() is None, "consume error %s" % m.error())
            got.append(m.value())
    c.close()
    return got


def test():
    props = {"num.partitions": "1", "log.flush.offset.checkpoint.interval.ms": "300"}
    with Broker(props=props, start=False) as b:
        shim = SyncShim()
        b.env.update(shim.env())
        b.start()
        produce(b, 0, FIRST, 20)
        wait_until(lambda: checkpoint_of(b) == FIRST, 10, "the checkpoint covers the first records")
        shim.hold("/%s-0/" % TOPIC)
        produce(b, FIRST, MORE, 1)
        time.sleep(0.5)
        log_path = os.path.join(b.partition_dir(TOPIC, 0), "00000000000000000000.log")
        size = os.path.getsize(log_path)
        with open(log_path, "r+b") as f:  # a byte of the last record's value
            f.seek(size - 20)
            byte = f.read(1)
            f.seek(size - 20)
            f.write(bytes([byte[0] ^ 0xFF]))
        eq(checkpoint_of(b), FIRST, "recovery point while the syncs are held")
        b.kill9()
        shim.release()
        since = b.log_size()
        b.start()
        text = b.log_text()[since:]
        m = re.search(r"recovery read (\d+) of (\d+) segment\(s\), (\d+) bytes, past the recovery point (\d+)", text)
        check(m, "a recovery line in the log")
        read_bytes, point = int(m.group(3)), int(m.group(4))
        log("segment %d bytes, recovery read %d bytes past the point %d" % (size, read_bytes, point))
        eq(point, FIRST, "the recovery point recovery started from")
        check(read_bytes < size // 4, "recovery read %d of the segment's %d bytes" % (read_bytes, size))
        check("crc mismatch" in text, "the flipped byte past the point was found")
        eq(read_all(b, FIRST + MORE - 1), [value(i) for i in range(FIRST + MORE - 1)],
           "records after recovery (the corrupt last one cut)")


main(test)

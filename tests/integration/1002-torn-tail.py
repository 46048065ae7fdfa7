"""Torn tail recovery: bytes appended to the end of a partition's last .log
segment while the broker is down (a torn write, then plain garbage) are cut
off at start-up. The broker logs a truncation line naming the partition, the
segment file is back to its clean length, every earlier message is readable
(CRC-checked) and a new produce lands at the next offset."""

import os
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, eq, check, log, main  # noqa: E402

from confluent_kafka import Consumer, Producer, TopicPartition, OFFSET_BEGINNING  # noqa: E402

TOPIC = "itest-torn"


def produce(b, values):
    reps = []
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all", "linger.ms": 5})
    for v in values:
        p.produce(TOPIC, value=v, partition=0, on_delivery=lambda err, m: reps.append((err, m.offset())))
        p.poll(0)
    eq(p.flush(30), 0, "messages left after flush")
    eq([r for r in reps if r[0] is not None], [], "delivery errors")
    return [r[1] for r in reps]


def read_all(b, n, timeout_s=30):
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "itest-1002", "enable.auto.commit": False,
                  "check.crcs": True, "fetch.wait.max.ms": 100})
    try:
        eq(c.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=10, cached=False), (0, n), "watermarks")
        c.assign([TopicPartition(TOPIC, 0, OFFSET_BEGINNING)])
        out = []
        deadline = time.monotonic() + timeout_s
        while len(out) < n:
            check(time.monotonic() < deadline, "read %d of %d messages within %ds" % (len(out), n, timeout_s))
            m = c.poll(0.2)
            if m is None:
                continue
            if m.error():
                raise AssertionError("consume error at offset %d: %s" % (len(out), m.error()))
            eq(m.offset(), len(out), "next offset")
            out.append(m.value())
        return out
    finally:
        c.close()


def truncation_line(b, since):
    for line in b.log_text()[since:].splitlines():
        if "truncat" in line.lower() and TOPIC in line:
            return line
    raise AssertionError("broker log has no line containing 'truncat' and %r after the restart\n%s"
                         % (TOPIC, b.log_tail()))


def damage_and_restart(b, seg, garbage, what):
    eq(b.stop(), 0, "exit status on SIGTERM")
    clean = os.path.getsize(seg)
    with open(seg, "ab") as f:
        f.write(garbage)
    eq(os.path.getsize(seg), clean + len(garbage), "segment size with %s" % what)
    since = b.log_size()
    b.start()
    line = truncation_line(b, since)
    log("%s: broker said: %s" % (what, line.strip()))
    eq(os.path.getsize(seg), clean, "segment size after recovery from %s (bytes past the last whole batch)" % what)
    check(b.alive(), "broker alive")


def test():
    with Broker(overrides={"auto.create.topics.enable": "true", "num.partitions": "1"}) as b:
        values = [b"torn-%04d-" % i + b"z" * (i % 50) for i in range(100)]
        eq(produce(b, values), list(range(100)), "offsets of the first 100")
        seg = os.path.join(b.partition_dir(TOPIC, 0), "00000000000000000000.log")

        # 1. A torn batch: a plausible header (baseOffset 100, batchLength 500,
        #    leader epoch 0, magic 2) and then only 20 of the promised bytes.
        torn = struct.pack(">qiib", 100, 500, 0, 2) + b"\x00" * 20
        damage_and_restart(b, seg, torn, "torn batch")
        eq(read_all(b, 100), values, "messages after torn-batch recovery")
        eq(produce(b, [b"after-torn"]), [100], "offset of the first produce after recovery")
        values.append(b"after-torn")

        # 2. Plain garbage (a negative batchLength, then text).
        garbage = b"\xde\xad\xbe\xef" * 16 + b"this is not a record batch\n" * 3
        damage_and_restart(b, seg, garbage, "garbage")
        eq(read_all(b, 101), values, "messages after garbage recovery")
        eq(produce(b, [b"after-garbage"]), [101], "offset of the first produce after second recovery")
        values.append(b"after-garbage")
        eq(read_all(b, 102), values, "all messages at the end")


main(test)

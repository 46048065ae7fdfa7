"""Durability across restarts (confluent-kafka / librdkafka clients).

A. 1000 messages produced with acks=all survive a clean restart (SIGTERM):
   all readable, identical, same offsets; new produce continues at 1000.
B. kill -9 while a producer (acks=all, no retries) streams messages: after a
   restart every message whose delivery report was a success is readable at
   its reported offset with its value; the log is dense (no gaps), holds the
   messages in production order with no duplicates, and no batch fails its
   CRC (check.crcs=true).
"""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, eq, check, log, main  # noqa: E402

from confluent_kafka import Consumer, Producer, TopicPartition, OFFSET_BEGINNING  # noqa: E402


def consume_range(bootstrap, topic, end, timeout_s=60):
    """All messages of partition 0 from offset 0 up to (excluding) end, CRC-checked."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "itest-1001-%d" % os.getpid(),
                  "enable.auto.commit": False, "enable.auto.offset.store": False,
                  "check.crcs": True, "fetch.wait.max.ms": 100})
    out = []
    try:
        c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        deadline = time.monotonic() + timeout_s
        while len(out) < end:
            if time.monotonic() > deadline:
                raise AssertionError("read %d of %d messages of %s within %ds" % (len(out), end, topic, timeout_s))
            m = c.poll(0.2)
            if m is None:
                continue
            if m.error():
                raise AssertionError("consume error at offset %d of %s: %s" % (len(out), topic, m.error()))
            eq(m.offset(), len(out), "next offset read from %s" % topic)
            out.append(m.value())
    finally:
        c.close()
    return out


def watermarks(bootstrap, topic):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "itest-1001-wm"})
    try:
        return c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10, cached=False)
    finally:
        c.close()


def part_a(b):
    topic = "itest-restart-clean"
    reports = []
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all", "linger.ms": 5})
    for i in range(1000):
        p.produce(topic, value=b"clean-%06d" % i, partition=0,
                  on_delivery=lambda err, m: reports.append((err, m.offset())))
        p.poll(0)
    eq(p.flush(30), 0, "messages left after flush")
    eq([r for r in reports if r[0] is not None], [], "delivery errors")
    eq([r[1] for r in reports], list(range(1000)), "delivered offsets")

    log("A: 1000 acked; restarting with SIGTERM")
    b.restart()
    eq(watermarks(b.bootstrap, topic), (0, 1000), "watermarks after clean restart")
    eq(consume_range(b.bootstrap, topic, 1000), [b"clean-%06d" % i for i in range(1000)],
       "messages after clean restart")

    reports.clear()
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all"})
    p.produce(topic, value=b"after-restart", partition=0, on_delivery=lambda err, m: reports.append((err, m.offset())))
    eq(p.flush(30), 0, "messages left after flush")
    eq(reports, [(None, 1000)], "delivery of the first message after restart")
    log("A: ok")


def part_b(b):
    topic = "itest-restart-kill9"
    acked = {}          # offset -> value, for successful delivery reports
    failed = [0]
    order = []          # offsets in delivery-report order (production order for one partition)

    def on_delivery(err, m):
        if err is None:
            acked[m.offset()] = m.value()
            order.append(m.offset())
        else:
            failed[0] += 1

    p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all", "linger.ms": 2,
                  "message.send.max.retries": 0, "message.timeout.ms": 4000,
                  "queue.buffering.max.messages": 20000})
    i = 0
    t_start = time.monotonic()
    while True:
        try:
            p.produce(topic, value=b"k9-%08d-" % i + b"p" * (i % 200), partition=0, on_delivery=on_delivery)
            i += 1
        except BufferError:
            p.poll(0.01)
        p.poll(0)
        elapsed = time.monotonic() - t_start
        if elapsed > 2.0 and len(acked) >= 500:
            break
        check(elapsed < 30, "only %d of %d messages acked within 30s before the kill" % (len(acked), i))
    log("B: %d produced, %d acked so far; kill -9 pid %d" % (i, len(acked), b.pid))
    b.kill9()
    left = p.flush(20)
    eq(left, 0, "messages without a delivery report 20s after the kill")
    log("B: after kill: %d acked, %d failed of %d" % (len(acked), failed[0], i))
    eq(len(acked) + failed[0], i, "delivery reports")
    eq(order, sorted(order), "acked offsets in production order")
    check(len(acked) > 0, "nothing was acked before the kill")
    max_acked = max(acked)

    b.start()
    lo, hi = watermarks(b.bootstrap, topic)
    eq(lo, 0, "log start offset after kill -9")
    check(hi >= max_acked + 1, "high watermark %d after restart < last acked offset %d + 1 (acked data lost)"
          % (hi, max_acked))
    vals = consume_range(b.bootstrap, topic, hi)
    for off, v in acked.items():
        if vals[off] != v:
            raise AssertionError("offset %d: got %r, acked %r" % (off, vals[off][:40], v[:40]))
    seqs = [int(v[3:11]) for v in vals]
    eq(seqs, sorted(set(seqs)), "production sequence numbers in the log (order, no duplicates)")
    log("B: %d messages in the log after restart, all %d acked present" % (hi, len(acked)))

    # The partition still takes writes at the end.
    rep = []
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all"})
    p.produce(topic, value=b"after-kill9", partition=0, on_delivery=lambda err, m: rep.append((err, m.offset())))
    eq(p.flush(30), 0, "messages left after flush")
    eq(rep, [(None, hi)], "delivery of the first message after kill -9 restart")


def test():
    with Broker(overrides={"auto.create.topics.enable": "true", "num.partitions": "1"}) as b:
        part_a(b)
        part_b(b)


main(test)

"""confluent-kafka-python (librdkafka 2.0.2) with enable.idempotence=true:
3000 numbered messages to 3 partitions, with a clean restart and a kill -9
of the broker between the three thirds; every delivery report succeeds, the
offsets reported are dense per partition, and reading back gives every
message exactly once in order.  The clean shutdown's producer snapshot
names the producer (proof that the producer really was idempotent).
"""

import os
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, eq, check, log, main  # noqa: E402

from confluent_kafka import Consumer, Producer, TopicPartition, OFFSET_BEGINNING  # noqa: E402

N = 3000
PARTS = 3
TOPIC = "idem-confluent"


def produce(bootstrap, lo, hi):
    reports = []
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                  "max.in.flight.requests.per.connection": 5, "linger.ms": 5,
                  "message.timeout.ms": 60000})
    for i in range(lo, hi):
        p.produce(TOPIC, value=b"%06d" % i, partition=i % PARTS,
                  on_delivery=lambda err, m: reports.append((err, m.partition(), m.offset(), m.value())))
        p.poll(0)
    eq(p.flush(60), 0, "messages left after flush")
    errs = [r for r in reports if r[0] is not None]
    eq(errs[:3], [], "delivery errors")
    eq(len(reports), hi - lo, "delivery reports")
    return reports


def consume(bootstrap):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "itest-3004", "enable.auto.commit": False,
                  "check.crcs": True, "fetch.wait.max.ms": 50})
    got = {p: [] for p in range(PARTS)}
    try:
        c.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING) for p in range(PARTS)])
        deadline = time.monotonic() + 60
        while sum(len(v) for v in got.values()) < N and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is None:
                continue
            check(not m.error(), "consume error %s" % m.error())
            got[m.partition()].append((m.offset(), int(m.value())))
        time.sleep(0.3)  # anything beyond N would be a duplicate
        m = c.poll(0.5)
        check(m is None or m.error(), "more than %d messages" % N)
    finally:
        c.close()
    return got


def snapshot_producers(path):
    with open(path, "rb") as f:
        data = f.read()
    (count,) = struct.unpack(">i", data[6:10])
    return {struct.unpack(">q", data[10 + 46 * i:18 + 46 * i])[0] for i in range(count)}


def test():
    with Broker(props={"num.partitions": str(PARTS)}) as b:
        reports = produce(b.bootstrap, 0, N // 3)
        b.restart()
        snap = "%020d.snapshot" % len(range(0, N // 3, PARTS))  # at partition 0's LEO
        pids = snapshot_producers(os.path.join(b.partition_dir(TOPIC, 0), snap))
        check(len(pids) == 1 and min(pids) >= 0, "one idempotent producer in the snapshot, got %r" % pids)
        reports += produce(b.bootstrap, N // 3, 2 * N // 3)
        b.kill9()
        b.start()
        reports += produce(b.bootstrap, 2 * N // 3, N)
        for p in range(PARTS):
            offs = sorted(r[2] for r in reports if r[1] == p)
            eq(offs, list(range(N // PARTS)), "reported offsets of partition %d" % p)
        got = consume(b.bootstrap)
        for p in range(PARTS):
            eq(got[p], [(o, p + PARTS * o) for o in range(N // PARTS)], "partition %d read back" % p)
        log("%d messages exactly once across restart and kill -9" % N)


main(test)

"""Shared pieces of the exactly-once and transaction tests (4002, 4006,
4011-4013, 4020-4021, 5203-5204): reading a topic back under an isolation
level, its last stable offset, a transactional producer that rides out a
cluster's metadata changes, and checking a sink topic against the numbered
source messages "msg-%07d" that eos-copier upper-cases."""

import time

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition


def end_offset(b, topic, partition=0, isolation="read_committed"):
    """The partition's end as a consumer of that isolation level sees it:
    the last stable offset under read_committed, else the high watermark."""
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "lso", "isolation.level": isolation})
    try:
        return c.get_watermark_offsets(TopicPartition(topic, partition), timeout=10, cached=False)[1]
    finally:
        c.close()


def read_committed(b, topic, n, timeout_s=15):
    """Up to n values of partition 0 from offset 0 under read_committed,
    polled for at most timeout_s."""
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "rc-" + topic, "isolation.level": "read_committed"})
    c.assign([TopicPartition(topic, 0, 0)])
    vals, deadline = [], time.time() + timeout_s
    while len(vals) < n and time.time() < deadline:
        m = c.poll(0.2)
        if m is not None and not m.error():
            vals.append(m.value())
    c.close()
    return vals


def read_sink(b, topic, parts, isolation, want, timeout_s=60):
    """Values per partition, read until every partition is at its end and at least want seen."""
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "verify-%s" % isolation,
                  "isolation.level": isolation, "enable.auto.commit": False,
                  "enable.partition.eof": True, "fetch.wait.max.ms": 100})
    c.assign([TopicPartition(topic, p, 0) for p in range(parts)])
    got = {p: [] for p in range(parts)}
    eofs, total = set(), 0
    deadline = time.time() + timeout_s
    while time.time() < deadline and (len(eofs) < parts or total < want):
        for m in c.consume(1000, 0.5):
            if m.error():
                if m.error().code() == -191:  # _PARTITION_EOF
                    eofs.add(m.partition())
                    continue
                raise KafkaException(m.error())
            eofs.discard(m.partition())
            got[m.partition()].append(m.value().decode())
            total += 1
    c.close()
    return got


def verify_copy(got, n, parts):
    """(seen, duplicates, missing, out of order, not upper-case) for inputs 0..n-1,
    input i being expected in partition i % parts, in increasing order."""
    seen = dups = order_bad = bad_case = 0
    count = {}
    for p, vals in got.items():
        last = -1
        for v in vals:
            seen += 1
            if not v.startswith("MSG-"):
                bad_case += 1
                continue
            i = int(v[4:])
            count[i] = count.get(i, 0) + 1
            dups += count[i] > 1
            order_bad += i % parts != p or i <= last
            last = max(last, i)
    missing = sum(1 for i in range(n) if i not in count)
    return seen, dups, missing, order_bad, bad_case


def read_all(bootstrap, topic, nparts, isolation, expect, timeout_s=30):
    """Every record value of topic's nparts partitions (decoded) under an isolation
    level, once expect are there or timeout_s passed, plus whatever one more second
    brings (so a record too many is seen)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "read-all-%s-%f" % (isolation, time.time()),
                  "isolation.level": isolation, "enable.auto.commit": False, "auto.offset.reset": "earliest",
                  "topic.metadata.refresh.interval.ms": 1000})
    c.assign([TopicPartition(topic, p, 0) for p in range(nparts)])
    got = []
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline and len(got) < expect:
            got += [m.value().decode() for m in c.consume(num_messages=200, timeout=0.5) if not m.error()]
        got += [m.value().decode() for m in c.consume(num_messages=200, timeout=1) if not m.error()]
    finally:
        c.close()
    return got


def txn_producer(bootstrap, tid):
    """A transactional producer, initialised, refreshing metadata every second (a
    cluster's leaders and coordinators move under it)."""
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid, "transaction.timeout.ms": 60000,
                  "topic.metadata.refresh.interval.ms": 1000})
    p.init_transactions(60)
    return p

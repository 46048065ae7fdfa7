#!/usr/bin/python3
"""9010: clients cannot change, delete or write Gregor's internal topics.

The group and transaction coordinators map each group / transactional id to
hash % partition count of __consumer_offsets / __transaction_state and write
there themselves.  So, as seen by real clients (confluent_kafka's
AdminClient, Consumer and transactional Producer) and the raw protocol:

  A. CreatePartitions on either internal topic is refused with
     INVALID_TOPIC_EXCEPTION (17) and a message; the partition count stays.
     (It used to succeed: the coordinators kept the freed partition array,
     the next OffsetCommit was a heap-use-after-free under ASan, and after a
     restart the groups hashed to other partitions and lost their offsets.)
  B. Offsets committed before and after the attempt are still there, also
     after a restart; a transactional producer still works.
  C. DeleteTopics on either internal topic: INVALID_TOPIC_EXCEPTION.
  D. Produce to an internal topic: INVALID_TOPIC_EXCEPTION, as Kafka answers
     a client that appends to an internal topic; nothing is appended.
  E. A user topic named "__x" is an ordinary topic: auto-created on
     produce, is_internal false in Metadata, produce allowed; the internal
     topics report is_internal true.
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import kwire as kw  # noqa: E402
from gregor import Broker, check, eq, log, main  # noqa: E402

from confluent_kafka import KafkaException, Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic  # noqa: E402

OFFSETS, TXN_STATE = "__consumer_offsets", "__transaction_state"
INVALID_TOPIC_EXCEPTION = 17
TOPIC = "itest-internal"
GROUPS = ["g-%d" % i for i in range(12)]


def commit(b, group, offset):
    """Raw OffsetCommit v2 (simple consumer: generation -1); a broker that
    dies on it fails the test at once instead of leaving a client retrying."""
    body = (kw.string(group) + kw.i32(-1) + kw.string("") + kw.i64(-1) +
            kw.array([TOPIC], lambda t: kw.string(t) + kw.array([0], lambda p: kw.i32(p) + kw.i64(offset) +
                                                                  kw.string(""))))
    for _ in range(100):  # COORDINATOR_NOT_AVAILABLE while __consumer_offsets is made (retriable)
        r = kw.call(b.port, 8, 2, body)
        errs = r.array(lambda r: (r.string(), r.array(lambda r: (r.i32(), r.i16()))))
        if errs != [(TOPIC, [(0, 15)])]:
            break
        time.sleep(0.05)
    eq(errs, [(TOPIC, [(0, 0)])], "OffsetCommit %s" % group)


def committed(b, group):
    r = kw.call(b.port, 9, 1, kw.string(group) + kw.array([TOPIC], lambda t: kw.string(t) + kw.array([0], kw.i32)))
    parts = r.array(lambda r: (r.string(), r.array(lambda r: (r.i32(), r.i64(), r.string(), r.i16()))))
    eq(parts[0][1][0][3], 0, "OffsetFetch %s error" % group)
    return parts[0][1][0][1]


def metadata(port, topics):
    """Raw Metadata v1: {name: (error, is_internal, partition count)}."""
    s = kw.connect(port)
    try:
        s.sendall(kw.request(3, 1, 1, kw.metadata_v1_body(topics)))
        r = kw.Reader(kw.recv_response(s)[1])
    finally:
        s.close()
    r.array(lambda r: (r.i32(), r.string(), r.i32(), r.string()))
    r.i32()

    def part(r):
        r.i16(), r.i32(), r.i32()
        r.array(lambda r: r.i32())
        r.array(lambda r: r.i32())

    def topic(r):
        err, name, internal = r.i16(), r.string(), r.i8()
        return name, (err, internal, len(r.array(part)))

    return dict(r.array(topic))


def produce_raw(port, topic):
    s = kw.connect(port)
    try:
        batch = kw.record_batch([(b"k", b"forged")])
        s.sendall(kw.request(0, 3, 7, kw.produce_v3_body(topic, 0, batch)))
        return kw.parse_produce_v3(kw.recv_response(s)[1])[(topic, 0)]
    finally:
        s.close()


def admin_error(future):
    try:
        future.result()
    except KafkaException as e:
        return e.args[0]
    return None


def init_txn(bootstrap):
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": "itest-9010"})
    p.init_transactions(10)
    p.begin_transaction()
    p.produce(TOPIC, b"in-txn", partition=0)
    p.commit_transaction(10)


def grow(b, admin):
    """Tries to add partitions to both internal topics; checked only after
    commits and a transaction ran, so a broker that allowed it shows what
    that does (ASan: heap-use-after-free in group_store_write)."""
    before = metadata(b.port, [OFFSETS, TXN_STATE])
    errs = {name: admin_error(admin.create_partitions([NewPartitions(name, before[name][2] + 3)],
                                                      request_timeout=10)[name])
            for name in (OFFSETS, TXN_STATE)}
    return before, errs


def refuse_changes(b, admin, before, errs):
    for name in (OFFSETS, TXN_STATE):
        err = errs[name]
        check(err is not None, "CreatePartitions on %s refused" % name)
        eq(err.code(), INVALID_TOPIC_EXCEPTION, "CreatePartitions %s error" % name)
        check("internal" in err.str(), "the message says why: %r" % err.str())
        err = admin_error(admin.delete_topics([name], operation_timeout=10)[name])
        check(err is not None, "DeleteTopics on %s refused" % name)
        eq(err.code(), INVALID_TOPIC_EXCEPTION, "DeleteTopics %s error" % name)
        eq(produce_raw(b.port, name)[0], INVALID_TOPIC_EXCEPTION, "produce to %s" % name)
    after = metadata(b.port, [OFFSETS, TXN_STATE])
    for name in (OFFSETS, TXN_STATE):
        eq(after[name][2], before[name][2], "%s partition count" % name)
        eq(after[name][1], 1, "%s is_internal" % name)


def user_underscore_topic(b):
    err, base = produce_raw(b.port, "__x")
    for _ in range(100):  # auto-created by this request: LEADER_NOT_AVAILABLE until its files are made
        if err not in (3, 5):
            break
        time.sleep(0.05)
        err, base = produce_raw(b.port, "__x")
    eq(err, 0, "produce to user topic __x")
    md = metadata(b.port, ["__x"])
    eq(md["__x"][:2], (0, 0), "__x metadata (error, is_internal)")


def test():
    with Broker() as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result()
        for i, g in enumerate(GROUPS):
            commit(b, g, 100 + i)
        init_txn(b.bootstrap)
        before, errs = grow(b, admin)
        log("B: commits and transactions still work, before and after a restart")
        for i, g in enumerate(GROUPS):
            commit(b, g, 200 + i)
        init_txn(b.bootstrap)
        log("A/C/D: partition changes, deletes and produce on internal topics refused")
        refuse_changes(b, admin, before, errs)
        eq(b.stop(), 0, "exit status on SIGTERM")
        b.start()
        for i, g in enumerate(GROUPS):
            eq(committed(b, g), 200 + i, "offset of %s after restart" % g)
        init_txn(b.bootstrap)
        log("E: a user topic named __x is ordinary")
        user_underscore_topic(b)
        eq(b.stop(), 0, "exit status on SIGTERM")


if __name__ == "__main__":
    main(test)

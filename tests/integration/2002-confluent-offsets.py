"""confluent-kafka-python (librdkafka 2.0.2) committed offsets: a group
consumer commits exact offsets with metadata; committed() and position()
report them; they survive a clean restart and a kill -9 of the broker; a
restarted consumer resumes exactly after the last commit; auto.offset.reset
earliest / latest / none behave as in Kafka; an assign() (simple) consumer
commits without a generation.  (confluent-kafka 1.7 has no commit metadata:
2005-kafka-python-group.py checks metadata strings.)"""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, eq, check, log, main  # noqa: E402

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

N = 40          # messages per partition
TOPIC = "itest-offsets"
GROUP_OVERRIDES = {"group.initial.rebalance.delay.ms": "0", "auto.create.topics.enable": "false"}


def consumer(b, group, **extra):
    conf = {"bootstrap.servers": b.bootstrap, "group.id": group, "enable.auto.commit": False,
            "session.timeout.ms": 6000, "heartbeat.interval.ms": 500, "auto.offset.reset": "earliest"}
    conf.update(extra)
    return Consumer(conf)


def consume(c, n, timeout_s=30):
    """Poll until n messages arrived; returns [(partition, offset, value)]; fails on errors."""
    got, deadline = [], time.monotonic() + timeout_s
    while len(got) < n:
        check(time.monotonic() < deadline, "consumed %d of %d messages within %ds" % (len(got), n, timeout_s))
        m = c.poll(0.2)
        if m is None:
            continue
        if m.error():
            raise AssertionError("consumer error: %s" % m.error())
        got.append((m.partition(), m.offset(), m.value().decode()))
    return got


def committed(c, parts=(0, 1)):
    return [(tp.partition, tp.offset) for tp in
            c.committed([TopicPartition(TOPIC, p) for p in parts], timeout=10)]


def produce(b, start, count):
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all"})
    for i in range(start, start + count):
        for part in (0, 1):
            p.produce(TOPIC, value=("p%d-%d" % (part, i)).encode(), partition=part)
    eq(p.flush(15), 0, "messages left unflushed")


def check_commit_and_position(b):
    c = consumer(b, "g-commit")
    c.subscribe([TOPIC])
    got = consume(c, 2 * N)
    eq(sorted(got), sorted([(p, i, "p%d-%d" % (p, i)) for p in (0, 1) for i in range(N)]), "first consumption")
    c.commit(offsets=[TopicPartition(TOPIC, 0, 17), TopicPartition(TOPIC, 1, 23)],
             asynchronous=False)
    eq(committed(c), [(0, 17), (1, 23)], "committed after explicit commit")
    eq([(tp.partition, tp.offset) for tp in c.position([TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)])],
       [(0, N), (1, N)], "position after consuming everything")
    c.close()
    log("commit/committed/position verified")


def check_resume(b, how):
    """After a restart of the broker, a new consumer resumes right after the commits."""
    if how == "restart":
        b.restart()
    else:
        b.kill9()
        b.start()
    c = consumer(b, "g-commit")
    eq(committed(c), [(0, 17), (1, 23)], "committed after broker %s" % how)
    c.subscribe([TOPIC])
    got = consume(c, (N - 17) + (N - 23))
    eq(sorted(got), sorted([(0, i, "p0-%d" % i) for i in range(17, N)] + [(1, i, "p1-%d" % i) for i in range(23, N)]),
       "resumed consumption after broker %s" % how)
    c.commit(asynchronous=False)
    eq(committed(c), [(0, N), (1, N)], "committed after resumed consumption (%s)" % how)
    c.close()
    # put the commits back for the next round
    c = consumer(b, "g-commit")
    c.commit(offsets=[TopicPartition(TOPIC, 0, 17), TopicPartition(TOPIC, 1, 23)],
             asynchronous=False)
    c.close()
    log("resume after broker %s verified" % how)


def check_reset(b):
    # earliest: everything; latest: only what is produced after the assignment
    c = consumer(b, "g-earliest", **{"auto.offset.reset": "earliest"})
    c.subscribe([TOPIC])
    eq(len(consume(c, 2 * N)), 2 * N, "earliest consumes everything")
    c.close()
    c = consumer(b, "g-latest", **{"auto.offset.reset": "latest"})
    c.subscribe([TOPIC])
    deadline = time.monotonic() + 20
    while not c.assignment():
        check(time.monotonic() < deadline, "latest consumer got an assignment")
        eq(c.poll(0.2), None, "latest consumer message before new data")
    # the reset to "latest" (ListOffsets) happens right after the assignment: give it 1.5 s
    quiet = time.monotonic() + 1.5
    while time.monotonic() < quiet:
        eq(c.poll(0.2), None, "latest consumer message before new data")
    produce(b, N, 5)
    eq(sorted(consume(c, 10)), sorted([(p, i, "p%d-%d" % (p, i)) for p in (0, 1) for i in range(N, N + 5)]),
       "latest consumes only new messages")
    c.close()
    c = consumer(b, "g-none", **{"auto.offset.reset": "error"})
    c.subscribe([TOPIC])
    deadline, err = time.monotonic() + 20, None
    while err is None:
        check(time.monotonic() < deadline, "auto.offset.reset=none reported an error")
        m = c.poll(0.2)
        if m is not None:
            check(m.error() is not None, "auto.offset.reset=none delivered a message: %r" % (m.value(),))
            err = m.error()
    eq(err.code(), KafkaError._AUTO_OFFSET_RESET, "auto.offset.reset=none error code")
    c.close()
    log("auto.offset.reset earliest/latest/none verified")


def check_simple_commit(b):
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "g-simple", "enable.auto.commit": False})
    c.assign([TopicPartition(TOPIC, 1, 5)])
    got = consume(c, 3)
    eq(got, [(1, 5, "p1-5"), (1, 6, "p1-6"), (1, 7, "p1-7")], "assign() consumption")
    c.commit(asynchronous=False)
    eq(committed(c, (0, 1)), [(0, -1001), (1, 8)], "simple consumer's commit")
    c.close()
    log("simple (assign) commit verified")


def test():
    with Broker(overrides=GROUP_OVERRIDES) as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        admin.create_topics([NewTopic(TOPIC, 2, 1)])[TOPIC].result(15)
        produce(b, 0, N)
        check_commit_and_position(b)
        check_resume(b, "restart")
        check_resume(b, "kill -9")
        check_simple_commit(b)
        check_reset(b)


main(test)

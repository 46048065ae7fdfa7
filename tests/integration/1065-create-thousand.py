#!/usr/bin/python3
"""1065: 1,000 partitions made at once, usable as soon as CreateTopics
answers, and all there after a kill -9 right after the answers.

Topics are made off the event loop in rounds (broker/creator.h), and a
CreateTopics is answered only after the round that made its topics durable.
With confluent_kafka's AdminClient (operation_timeout 0, its default: the
broker still answers only once the files are made):
  1. one call creating 10 topics x 100 partitions: every future succeeds;
     at once Metadata lists each with 100 partitions and no error, and a
     record produced (acks=all) to a sample of partitions is consumed back;
  2. 10 concurrent calls of 1 topic x 100 partitions each (from 10 threads):
     the same;
  3. then kill -9 at once and a restart: all 20 topics, each with all 100
     partitions, no error, the sampled records still there and new ones
     produced and consumed.
Runtime ~30 s.
"""
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

from gregor import Broker, check, eq, log, main  # noqa: E402

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

TOPICS, PARTS = 10, 100
SAMPLE = (0, 37, 99)


def admin(b):
    return AdminClient({"bootstrap.servers": b.bootstrap})


def create_one_call(b, names):
    a = admin(b)  # kept alive until the futures are done
    fs = a.create_topics([NewTopic(n, PARTS, 1) for n in names], request_timeout=120)
    for n in names:
        fs[n].result(timeout=120)  # raises on an error


def create_concurrent(b, names):
    errors = []

    def one(name):
        try:
            a = admin(b)
            a.create_topics([NewTopic(name, PARTS, 1)], request_timeout=120)[name].result(timeout=120)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append((name, e))

    threads = [threading.Thread(target=one, args=(n,)) for n in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join(180)
    eq(errors, [], "errors of the concurrent CreateTopics calls")


def check_metadata(b, names):
    md = admin(b).list_topics(timeout=20)
    for n in names:
        t = md.topics.get(n)
        check(t is not None, "topic %s listed" % n)
        eq(t.error, None, "%s topic error" % n)
        eq(len(t.partitions), PARTS, "%s partition count" % n)
        bad = [p for p, pm in t.partitions.items() if pm.error is not None or pm.leader < 0]
        eq(bad, [], "%s partitions with an error or no leader" % n)


def produce_sample(b, names, tag):
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all", "linger.ms": 5})
    failed = []
    for n in names:
        for part in SAMPLE:
            p.produce(n, value=b"%s-%d-%s" % (n.encode(), part, tag), partition=part,
                      on_delivery=lambda err, _m: err and failed.append(err))
    eq(p.flush(30), 0, "records left unsent")
    eq(failed, [], "delivery errors")


def consume_sample(b, names, tags):
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "itest-1065", "enable.auto.commit": False,
                  "fetch.wait.max.ms": 50})
    want = {(n, part): [b"%s-%d-%s" % (n.encode(), part, t) for t in tags] for n in names for part in SAMPLE}
    got = {k: [] for k in want}
    c.assign([TopicPartition(n, part, 0) for n, part in want])
    for _ in range(600):
        if all(len(got[k]) >= len(want[k]) for k in want):
            break
        m = c.poll(0.1)
        if m is not None and not m.error():
            got[(m.topic(), m.partition())].append(m.value())
    c.close()
    eq(got, want, "records read back")


def test():
    one = ["one-%d" % i for i in range(TOPICS)]
    many = ["many-%d" % i for i in range(TOPICS)]
    with Broker(overrides={"auto.create.topics.enable": "false"}) as b:
        log("1. one CreateTopics of %d x %d partitions" % (TOPICS, PARTS))
        create_one_call(b, one)
        check_metadata(b, one)
        produce_sample(b, one, b"a")
        consume_sample(b, one, [b"a"])
        log("2. %d concurrent CreateTopics of 1 x %d" % (TOPICS, PARTS))
        create_concurrent(b, many)
        check_metadata(b, many)
        produce_sample(b, many, b"a")
        log("rounds: %s" % [ln.split("] ")[-1] for ln in b.log_text().splitlines() if "partition(s) in" in ln])
        log("3. kill -9 right after the answers, restart")
        b.kill9()
        b.start()
        check_metadata(b, one + many)
        produce_sample(b, one + many, b"b")
        consume_sample(b, one + many, [b"a", b"b"])
        b.kill9()  # a clean stop syncs every one of the 2,000 partitions: not what is tested here


main(test)

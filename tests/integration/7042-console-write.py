#!/usr/bin/python3
"""7042: the web console's writes (console.write.enable).

  1. Write enabled: POST /api/topics creates a topic that AdminClient's
     Metadata lists with the partitions asked for, and a producer can use
     its last partition; the same name again is 409.  Bad bodies (not
     JSON, not an object, missing or extra or mistyped fields, a bad name,
     0 partitions, over 8 KiB) get a 4xx JSON error.
  2. A consumer group that has committed: while its member is in the
     group a reset is refused (409) and the offsets stay; once it left
     (Empty), resets to earliest, to an offset (one topic), past the end
     (clamped to the high watermark) and to latest each show in OffsetFetch,
     a new member of the group starts where the reset put it, and the
     reset offsets survive a restart.
  3. Write disabled (the default): POST is 403 and nothing is created.
On a broker without the console POST is 405 and step 1 fails.
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402
from consolehttp import api_get, api_post, is_error  # noqa: E402
from gregor import Broker, check, eq, free_port, log, main  # noqa: E402

TOPIC = "console-7042"
MADE = "console-7042-made"
GROUP = "console-7042-g"
N = 20


def check_create(b, mport):
    eq(api_get(mport, "/api/console"), (200, {"write_enabled": True}), "/api/console")
    st, v = api_post(mport, "/api/topics", {"name": MADE, "partitions": 5})
    eq((st, v), (201, {"name": MADE, "partitions": 5}), "create")
    md = AdminClient({"bootstrap.servers": b.bootstrap}).list_topics(timeout=10)
    check(MADE in md.topics, "created topic listed by Metadata")
    eq(len(md.topics[MADE].partitions), 5, "its partitions")
    p = Producer({"bootstrap.servers": b.bootstrap})
    p.produce(MADE, value=b"into-the-last", partition=4)
    eq(p.flush(20), 0, "produce to the created topic")
    check(is_error(api_post(mport, "/api/topics", {"name": MADE, "partitions": 1}), 409), "exists -> 409")
    bad = [b"{not json", b"[]", b"{}", b'{"name": "a"}', b'{"name": "a", "partitions": "3"}',
           b'{"name": "a", "partitions": 1, "extra": 1}', b'{"name": "a/b", "partitions": 1}',
           b'{"name": "..", "partitions": 1}', b'{"name": "a", "partitions": 0}',
           b'{"name": "a", "partitions": 99999999}', b'{"name": "__consumer_offsets", "partitions": 1}']
    for body in bad:
        check(is_error(api_post(mport, "/api/topics", body), 400), "bad body %r -> 400" % body)
    check(is_error(api_post(mport, "/api/topics", b'{"name": "' + b"a" * 9000 + b'"}'), 413), "body too large")
    check(is_error(api_post(mport, "/api/nope", {}), 404), "unknown POST path")
    md = AdminClient({"bootstrap.servers": b.bootstrap}).list_topics(timeout=10)
    check("a" not in md.topics and ".." not in md.topics, "nothing made from bad bodies")


def group_consumer(b):
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": GROUP, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "session.timeout.ms": 6000})
    c.subscribe([TOPIC])
    return c


def consume(c, n, timeout_s=30):
    got, deadline = [], time.monotonic() + timeout_s
    while len(got) < n and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            got.append((m.partition(), m.offset()))
    return got


def committed(b):
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": GROUP})
    out = {tp.partition: tp.offset for tp in c.committed([TopicPartition(TOPIC, p) for p in range(2)], timeout=10)}
    c.close()
    return out


def reset(mport, body, status=200):
    st, v = api_post(mport, "/api/groups/%s/offsets" % GROUP, body)
    eq(st, status, "reset %r: %r" % (body, v))
    return v


def check_reset(b, mport):
    p = Producer({"bootstrap.servers": b.bootstrap})
    for i in range(N):
        p.produce(TOPIC, value=b"r%d" % i, partition=i % 2)
    eq(p.flush(20), 0, "records unflushed")
    c = group_consumer(b)
    eq(len(consume(c, N)), N, "the group read everything")
    c.commit(asynchronous=False)
    eq(committed(b), {0: N // 2, 1: N // 2}, "committed at the end")
    check(is_error(api_post(mport, "/api/groups/%s/offsets" % GROUP, {"to": "earliest"}), 409), "Stable -> 409")
    eq(committed(b), {0: N // 2, 1: N // 2}, "a refused reset changes nothing")
    c.close()
    v = reset(mport, {"to": "earliest"})
    eq(sorted((o["partition"], o["offset"]) for o in v["offsets"]), [(0, 0), (1, 0)], "reset answer")
    eq(committed(b), {0: 0, 1: 0}, "reset to earliest")
    reset(mport, {"to": "offset", "offset": 3, "topic": TOPIC})
    eq(committed(b), {0: 3, 1: 3}, "reset to offset 3")
    c = group_consumer(b)
    got = consume(c, 2 * (N // 2 - 3))
    eq(sorted(got)[:1], [(0, 3)], "a new member starts at the reset offset")
    eq(len(got), 2 * (N // 2 - 3), "records after the reset offset")
    c.close()
    reset(mport, {"to": "offset", "offset": 0})
    reset(mport, {"to": "offset", "offset": 10 ** 12})
    eq(committed(b), {0: N // 2, 1: N // 2}, "an offset past the end is clamped to the high watermark")
    reset(mport, {"to": "earliest"})
    reset(mport, {"to": "latest"})
    eq(committed(b), {0: N // 2, 1: N // 2}, "reset to latest")
    reset(mport, {"to": "offset", "offset": 4})
    for body in [{"to": "sideways"}, {"to": "offset"}, {"to": "offset", "offset": -1}, {"offset": 1}]:
        check(is_error(api_post(mport, "/api/groups/%s/offsets" % GROUP, body), 400), "bad reset %r" % body)
    check(is_error(api_post(mport, "/api/groups/%s/offsets" % GROUP, {"to": "earliest", "topic": "nope"}), 404),
          "unknown topic")
    b.restart()
    eq(committed(b), {0: 4, 1: 4}, "reset offsets after a restart")


def test():
    mport = free_port()
    with Broker(props={"metrics.listener": "http://127.0.0.1:%d" % mport, "console.write.enable": "true"},
                overrides={"group.initial.rebalance.delay.ms": "0"}) as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        admin.create_topics([NewTopic(TOPIC, 2, 1)])[TOPIC].result(20)
        check_create(b, mport)
        log("create: listed by Metadata, usable; bad bodies refused")
        check_reset(b, mport)
        log("reset: refused while Stable; earliest, offset, clamped, latest; kept across a restart")
    mport = free_port()
    with Broker(props={"metrics.listener": "http://127.0.0.1:%d" % mport}) as b:
        check(is_error(api_post(mport, "/api/topics", {"name": MADE, "partitions": 1}), 403), "read-only -> 403")
        check(is_error(api_post(mport, "/api/groups/g/offsets", {"to": "earliest"}), 403), "read-only reset -> 403")
        md = AdminClient({"bootstrap.servers": b.bootstrap}).list_topics(timeout=10)
        check(MADE not in md.topics, "nothing created while read-only")
        log("read-only: 403")


main(test)

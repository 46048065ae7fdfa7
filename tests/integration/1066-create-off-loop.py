#!/usr/bin/python3
"""1066: a big CreateTopics round stalls nobody.

The broker runs with tests/lib/syncshim.so, whose hold-syncfs control makes
the creation round's syncfs wait: the round is then in progress for as long
as the test likes, with every file made.  Meanwhile:
  1. a producer (confluent_kafka, acks=all) to an existing topic gets all
     its acknowledgements while the CreateTopics of 10 x 100 partitions is
     still unanswered (before, the event loop made the files itself and
     answered nothing else until the CreateTopics was done);
  2. Metadata for a topic being made answers LEADER_NOT_AVAILABLE for it,
     not the topic and not a stall; Metadata of the existing topic is fine;
  3. a second CreateTopics of a topic being made answers
     TOPIC_ALREADY_EXISTS, and DeleteTopics of it LEADER_NOT_AVAILABLE;
  4. a CreateTopics with a 300 ms timeout answers REQUEST_TIMED_OUT (the
     topic is made all the same once the round can finish);
  5. FindCoordinator of a first group answers COORDINATOR_NOT_AVAILABLE
     while __consumer_offsets is being made (clients retry it), where it
     used to make the 50 partitions on the event loop first;
  6. two CreatePartitions of the existing topic to 3, pipelined on one
     connection: Metadata still lists 1 partition while they wait; once
     the round is done the first succeeds and the second answers
     INVALID_PARTITIONS (the count it asks for is already being made).
Then the hold is released: the CreateTopics succeeds, every topic is listed
whole, the timed-out one exists, and a consumer group works.
Runtime ~15 s.
"""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

import kwire as kw  # noqa: E402
from gregor import Broker, check, eq, log, main, wait_until  # noqa: E402
from syncshim import SyncShim  # noqa: E402

from confluent_kafka import Consumer, Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

NONE, LEADER_NOT_AVAILABLE, REQUEST_TIMED_OUT, INVALID_PARTITIONS = 0, 5, 7, 37
COORDINATOR_NOT_AVAILABLE, TOPIC_ALREADY_EXISTS = 15, 36
BIG = ["big-%d" % i for i in range(10)]


def metadata(b, topics):
    return kw.parse_metadata_v1(kw.call(b.port, 3, 1, kw.metadata_v1_body(topics)).d)["topics"]


def create_raw(b, name, parts, timeout_ms):
    r = kw.call(b.port, 19, 1, kw.create_topics_v1_body([(name, parts)], timeout_ms=timeout_ms))
    return kw.parse_create_topics_v1(r.d)[name][0]


def delete_raw(b, name):
    r = kw.call(b.port, 20, 1, kw.array([name], kw.string) + kw.i32(5000))
    r.i32()
    return dict(r.array(lambda r: (r.string(), r.i16())))[name]


def send_grow(sock, corr, topic, count):
    """CreatePartitions v0 sent without waiting for the answer."""
    body = kw.array([topic], lambda t: kw.string(t) + kw.i32(count) + kw.i32(-1)) + kw.i32(60000) + kw.i8(0)
    sock.sendall(kw.request(37, 0, corr, body))


def recv_grow(sock):
    """-> (correlation id, error code of the one topic)"""
    corr, body = kw.recv_response(sock)
    r = kw.Reader(body)
    r.i32()
    return corr, r.array(lambda r: (r.string(), r.i16(), r.string()))[0][1]


def start_big_create(b, result):
    def run():
        a = AdminClient({"bootstrap.servers": b.bootstrap})
        fs = a.create_topics([NewTopic(n, 100, 1) for n in BIG], request_timeout=120)
        try:
            for n in BIG:
                fs[n].result(timeout=120)
            result["ok"] = True
        except Exception as e:  # noqa: BLE001 - checked by the test
            result["error"] = e
        result["done_at"] = time.monotonic()

    t = threading.Thread(target=run)
    t.start()
    return t


def produce_acked(b, n):
    """Produces n records (acks=all) to 'busy'; returns the time the last ack arrived."""
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all", "linger.ms": 0})
    errors = []
    for i in range(n):
        p.produce("busy", value=b"v%d" % i, on_delivery=lambda err, _m: err and errors.append(err))
        p.flush(30)
    eq(errors, [], "produce errors")
    return time.monotonic()


def test():
    shim = SyncShim()
    with Broker(env=shim.env(), overrides={"auto.create.topics.enable": "false"}) as b:
        a = AdminClient({"bootstrap.servers": b.bootstrap})
        a.create_topics([NewTopic("busy", 1, 1)])["busy"].result(30)
        produce_acked(b, 1)  # the producer path is warm
        shim.hold_syncfs()
        result = {}
        t = start_big_create(b, result)
        wait_until(lambda: any(n.startswith("big-") for n in os.listdir(b.data_dir)), 30,
                   "the new topics' first directories")
        log("1. produce acks=all to an existing topic while the round runs")
        acked_at = produce_acked(b, 20)
        check("done_at" not in result, "all produce acks came before the CreateTopics answer")
        log("2. Metadata while the topics are made")
        md = metadata(b, ["big-0", "busy"])
        eq(md["big-0"][0], LEADER_NOT_AVAILABLE, "Metadata error of a topic being made")
        eq(md["big-0"][1], [], "partitions listed of a topic being made")
        eq(md["busy"][0], NONE, "Metadata error of the existing topic")
        log("3. CreateTopics and DeleteTopics of a topic being made")
        eq(create_raw(b, "big-1", 3, 5000), TOPIC_ALREADY_EXISTS, "CreateTopics of a topic being made")
        eq(delete_raw(b, "big-2"), LEADER_NOT_AVAILABLE, "DeleteTopics of a topic being made")
        log("4. CreateTopics with a 300 ms timeout")
        eq(create_raw(b, "late", 2, 300), REQUEST_TIMED_OUT, "CreateTopics timing out in a held round")
        log("5. FindCoordinator of the first group")
        eq(kw.find_coordinator_error(b.port, "g-1066"), COORDINATOR_NOT_AVAILABLE, "FindCoordinator while __consumer_offsets is made")
        log("6. two CreatePartitions pipelined on one connection")
        gs = kw.connect(b.port, timeout_s=120)
        send_grow(gs, 1, "busy", 3)
        send_grow(gs, 2, "busy", 3)
        eq(len(metadata(b, ["busy"])["busy"][1]), 1, "partitions of busy while they are added")
        check("done_at" not in result, "the round was still held")
        shim.release_syncfs()
        eq(recv_grow(gs), (1, NONE), "first CreatePartitions")
        eq(recv_grow(gs), (2, INVALID_PARTITIONS), "second CreatePartitions to the same count")
        gs.close()
        eq(len(metadata(b, ["busy"])["busy"][1]), 3, "partitions of busy once made")
        t.join(120)
        check(result.get("ok"), "CreateTopics succeeded: %r" % result.get("error"))
        check(acked_at < result["done_at"], "produce acks before the CreateTopics answer")
        md = metadata(b, BIG + ["late"])
        for n in BIG:
            eq((md[n][0], len(md[n][1])), (NONE, 100), "%s after the round" % n)
        wait_until(lambda: metadata(b, ["late"])["late"][0] == NONE, 30, "the timed-out topic to exist")
        eq(len(metadata(b, ["late"])["late"][1]), 2, "partitions of the timed-out topic")
        log("a consumer group works once __consumer_offsets is made")
        c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "g-1066", "auto.offset.reset": "earliest"})
        c.subscribe(["busy"])
        got = []
        deadline = time.monotonic() + 30
        while len(got) < 21 and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is not None and not m.error():
                got.append(m.value())
        c.close()
        eq(len(got), 21, "records consumed by the group")
        b.kill9()  # a clean stop syncs every one of the 1,000 partitions: not what is tested here


main(test)

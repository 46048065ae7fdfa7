#!/usr/bin/python3
"""1067: a crash or a failed sync in the middle of a creation round leaves
every topic of the round whole or gone, never half there.

The broker runs with tests/lib/syncshim.so preloaded.
  1. One CreateTopics of 8 topics x 40 partitions, the broker stopped
     (SIGSTOP, then SIGKILL) right after the round renamed the first staged
     partition 0 into place, so the round is cut between its commit points:
     after a restart each of the 8 topics is either absent or listed with
     all 40 partitions and its config (retention.ms), at least the renamed
     one is there, the others' directories all go away, and each topic
     present takes a record; a new CreateTopics of an absent one works.
  2. The round's syncfs fails (fail-syncfs): CreateTopics answers an error
     for its topic, which is not listed and has no directory left; the log
     dir is offline from then on (a produce to an existing topic answers
     KAFKA_STORAGE_ERROR), as after any failed sync; after a restart the
     topic is still absent and the broker works.
  3. SIGTERM while a round waits in its syncfs (hold-syncfs) and another
     CreateTopics is queued behind it: the shutdown finishes the round once
     the hold is released and cancels the queued one; the broker exits 0,
     and after a restart the first topic is there whole, the second not.
Runtime ~20 s.
"""
import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

import kwire as kw  # noqa: E402
from gregor import Broker, check, eq, log, main, wait_until  # noqa: E402
from syncshim import STOP, SyncShim  # noqa: E402

from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic  # noqa: E402

NAMES = ["cut-%d" % i for i in range(8)]
PARTS = 40
KAFKA_STORAGE_ERROR, UNKNOWN_SERVER_ERROR, UNKNOWN_TOPIC = 56, -1, 3


def admin(b):
    return AdminClient({"bootstrap.servers": b.bootstrap, "socket.timeout.ms": 5000})


def metadata(b, topics):
    return kw.parse_metadata_v1(kw.call(b.port, 3, 1, kw.metadata_v1_body(topics)).d)["topics"]


def dirs_of(b, name):
    return [d for d in os.listdir(b.data_dir) if d.startswith(name + "-")]


def produce_one(b, topic, partition):
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all"})
    errors = []
    p.produce(topic, value=b"x", partition=partition, on_delivery=lambda err, _m: err and errors.append(err))
    eq(p.flush(20), 0, "unsent to %s" % topic)
    eq(errors, [], "delivery errors to %s-%d" % (topic, partition))


def crash_mid_round(shim):
    with Broker(start=False, overrides={"auto.create.topics.enable": "false", "log.segment.delete.delay.ms": "0"}) as b:
        b.env.update(shim.env())
        b.env[STOP] = "rename:-create "  # the first staged partition 0 renamed into place
        b.start()
        a = admin(b)  # alive until the broker stopped: the request is sent
        a.create_topics([NewTopic(n, PARTS, 1, config={"retention.ms": "123456"}) for n in NAMES],
                        request_timeout=5)
        wait_until(lambda: "stopped" in shim.trace_text(), 30, "the broker to stop mid-round")
        b.kill9()
        del b.env[STOP]
        b.start()
        md = metadata(b, NAMES)
        present = [n for n in NAMES if md[n][0] == 0]
        log("after the restart: %d of %d topics present" % (len(present), len(NAMES)))
        check(len(present) >= 1, "the topic renamed before the stop is there")
        for n in NAMES:
            err, parts = md[n]
            if n in present:
                eq(len(parts), PARTS, "partitions of %s" % n)
                res = ConfigResource("topic", n)
                a = admin(b)
                cfg = a.describe_configs([res])[res].result(timeout=10)
                eq(cfg["retention.ms"].value, "123456", "retention.ms of %s" % n)
                produce_one(b, n, PARTS - 1)
            else:
                eq(err, UNKNOWN_TOPIC, "error of absent %s" % n)
                wait_until(lambda: not dirs_of(b, n), 30, "the directories of %s to go" % n)
        absent = [n for n in NAMES if n not in present]
        if absent:
            a = admin(b)
            a.create_topics([NewTopic(absent[0], 2, 1)])[absent[0]].result(timeout=30)
            eq(len(metadata(b, [absent[0]])[absent[0]][1]), 2, "partitions of %s made again" % absent[0])


def failed_sync(shim):
    with Broker(env=shim.env(), overrides={"auto.create.topics.enable": "false"}) as b:
        a = admin(b)
        a.create_topics([NewTopic("keep", 1, 1)])["keep"].result(timeout=30)
        produce_one(b, "keep", 0)
        shim.fail_next_syncfs()
        r = kw.call(b.port, 19, 1, kw.create_topics_v1_body([("doomed", 5)], timeout_ms=30000))
        err, msg = kw.parse_create_topics_v1(r.d)["doomed"]
        log("CreateTopics with a failed syncfs: %d %r" % (err, msg))
        eq(err, UNKNOWN_SERVER_ERROR, "CreateTopics error after a failed syncfs")
        check(not os.path.exists(os.path.join(shim.dir, "fail-syncfs")), "the syncfs failure was used")
        eq(metadata(b, ["doomed"])["doomed"][0], UNKNOWN_TOPIC, "doomed listed")
        eq(dirs_of(b, "doomed"), [], "directories of doomed")
        batch = kw.record_batch([(b"k", b"v")])
        s = kw.connect(b.port)
        try:
            s.sendall(kw.request(0, 3, 7, kw.produce_v3_body("keep", 0, batch, acks=-1)))
            eq(kw.parse_produce_v3(kw.recv_response(s)[1])[("keep", 0)][0], KAFKA_STORAGE_ERROR,
               "produce once the log dir is offline")
        finally:
            s.close()
        b.kill9()
        b.start()
        eq(metadata(b, ["doomed"])["doomed"][0], UNKNOWN_TOPIC, "doomed after the restart")
        produce_one(b, "keep", 0)


def stop_mid_round(shim):
    with Broker(env=shim.env(), overrides={"auto.create.topics.enable": "false"}) as b:
        shim.hold_syncfs()
        s1, s2 = kw.connect(b.port), kw.connect(b.port)
        s1.sendall(kw.request(19, 1, 1, kw.create_topics_v1_body([("first", 4)], timeout_ms=60000)))
        wait_until(lambda: any(n.startswith("first-0.") for n in os.listdir(b.data_dir)), 30, "first staged")
        s2.sendall(kw.request(19, 1, 1, kw.create_topics_v1_body([("second", 4)], timeout_ms=60000)))
        wait_until(lambda: kw.metadata_topic_error(b.port, "second") == 5, 30, "second queued")
        b.proc.send_signal(signal.SIGTERM)
        time.sleep(0.3)  # the shutdown waits for the held round (nothing asserted on this)
        shim.release_syncfs()
        eq(b.stop(), 0, "exit status of a shutdown during a round")
        s1.close()
        s2.close()
        b.start()
        md = metadata(b, ["first", "second"])
        eq((md["first"][0], len(md["first"][1])), (0, 4), "first after the restart")
        eq(md["second"][0], UNKNOWN_TOPIC, "second (cancelled) after the restart")
        eq(dirs_of(b, "second"), [], "directories of second")


def test():
    log("1. crash between the commit points of a round")
    crash_mid_round(SyncShim(trace=os.path.join(os.environ.get("TMPDIR", "/tmp"), "gregor-1067-%d.trace"
                                                % os.getpid())))
    log("2. a failed syncfs")
    failed_sync(SyncShim())
    log("3. a shutdown during a round")
    stop_mid_round(SyncShim())


main(test)

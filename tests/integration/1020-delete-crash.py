#!/usr/bin/python3
"""1020: a crash in the middle of CreateTopics or DeleteTopics leaves the
topic whole or gone, never half there.

The broker runs with tests/lib/syncshim.so preloaded, which stops it
(SIGSTOP) right after a chosen file system call; the test then SIGKILLs it
at exactly that point and starts it again on the same data dir.

  1. delete stopped at the first file removal of topic 'doomed' (4
     partitions): after the restart 'doomed' is not listed, its directories
     all go away (removed in the background at start-up), 'keeper' keeps its
     messages, and a new 'doomed' starts empty; a torn checkpoint .tmp left
     in the log dir is removed at start.
  2. delete stopped right after partition 0's directory is renamed to
     <topic>-0.<uuid>-delete (the commit point), with partitions 1-3 still
     under their names: after the restart the topic is gone entirely.
  3. create of 'made' (3 partitions, cleanup.policy=compact) stopped at its
     first partition directory: after the restart 'made' is absent, or
     present with all 3 partitions and its config - never a part of it.
Runtime ~10 s.
"""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

from gregor import Broker, check, eq, log, main, wait_until  # noqa: E402
from syncshim import STOP, SyncShim  # noqa: E402

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic  # noqa: E402


def admin(b):
    return AdminClient({"bootstrap.servers": b.bootstrap, "socket.timeout.ms": 5000})


def create(b, name, parts, config=None):
    a = admin(b)
    fs = a.create_topics([NewTopic(name, parts, 1, config=config or {})], operation_timeout=10)
    fs[name].result(timeout=15)


def topics(b):
    return admin(b).list_topics(timeout=10).topics


def produce(b, topic, parts, n):
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all"})
    for part in range(parts):
        for i in range(n):
            p.produce(topic, value=b"%s-%d-%d" % (topic.encode(), part, i), partition=part)
    eq(p.flush(15), 0, "messages left unsent to %s" % topic)


def read_all(b, topic, part):
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "g", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, part, 0)])
    lo, hi = c.get_watermark_offsets(TopicPartition(topic, part), timeout=10)
    got = []
    while len(got) < hi - lo:
        m = c.poll(5)
        check(m is not None, "%s-%d: timed out after %d of %d" % (topic, part, len(got), hi - lo))
        check(not m.error(), "consume error %s" % (m.error(),))
        got.append(m.value())
    c.close()
    return got


def entries(b, prefix):
    return sorted(n for n in os.listdir(b.data_dir) if n.startswith(prefix))


def crash_at(b, trace, stop, action):
    """Restart with the shim's STOP=stop, run action, wait until the broker stopped itself, SIGKILL it."""
    def stops():
        with open(trace) as f:
            return f.read().count("\nstopped\n")
    b.stop()
    before = stops()
    b.env[STOP] = stop
    b.start()
    action()
    wait_until(lambda: stops() > before, 15, "the broker to reach %s" % stop)
    b.kill9()
    del b.env[STOP]


PENDING = []  # admin clients whose request the stopped broker never answers


def delete_async(b, name):
    a = admin(b)
    PENDING.append((a, a.delete_topics([name], operation_timeout=1)))


def create_async(b, name):
    a = admin(b)
    PENDING.append((a, a.create_topics([NewTopic(name, 3, 1, config={"cleanup.policy": "compact"})],
                                       operation_timeout=1)))


def check_gone(b, name):
    check(name not in topics(b), "topic '%s' is listed after the restart: %s" % (name, entries(b, name)))
    wait_until(lambda: not entries(b, name), 10, "the directories of '%s' to be removed" % name)


def test():
    trace_path = None
    # log.segment.delete.delay.ms=0: the -delete directories go at once (1041 tests the delay)
    over = {"num.partitions": "1", "auto.create.topics.enable": "false", "log.segment.delete.delay.ms": "0"}
    with Broker(overrides=over) as b:
        trace_path = os.path.join(b.tmp, "trace.log")
        b.env.update(SyncShim(trace=trace_path).env())
        b.restart()
        create(b, "keeper", 1)
        create(b, "doomed", 4)
        produce(b, "keeper", 1, 5)
        produce(b, "doomed", 4, 5)

        log("1. delete stopped at its first file removal")
        crash_at(b, trace_path, "unlink:/doomed-", lambda: delete_async(b, "doomed"))
        log("on disk at the crash: %s" % entries(b, "doomed"))
        torn = os.path.join(b.data_dir, "recovery-point-offset-checkpoint.tmp")
        with open(torn, "w") as f:
            f.write("0\n3\ndoo")  # a checkpoint replacement cut short
        b.start()
        check(not os.path.exists(torn), "leftover .tmp in the log dir removed at start")
        check_gone(b, "doomed")
        eq(len(read_all(b, "keeper", 0)), 5, "messages of 'keeper'")
        create(b, "doomed", 4)
        for p in range(4):
            eq(read_all(b, "doomed", p), [], "a new 'doomed'-%d is empty" % p)
        produce(b, "doomed", 4, 5)

        log("2. delete stopped right after partition 0 is renamed away")
        crash_at(b, trace_path, "rename:/doomed-0.", lambda: delete_async(b, "doomed"))
        left = entries(b, "doomed")
        log("on disk at the crash: %s" % left)
        check(re.fullmatch(r"doomed-0\.[0-9a-f]{32}-delete", left[0]), "Kafka's -delete name: %s" % left[0])
        eq(left[1:], ["doomed-1", "doomed-2", "doomed-3"], "partitions 1-3 still under their names")
        b.start()
        check_gone(b, "doomed")
        eq(len(read_all(b, "keeper", 0)), 5, "messages of 'keeper'")

        log("3. create stopped at its first partition directory")
        crash_at(b, trace_path, "mkdir:/made-", lambda: create_async(b, "made"))
        log("on disk at the crash: %s" % entries(b, "made"))
        b.start()
        t = topics(b).get("made")
        if t is None:
            wait_until(lambda: not entries(b, "made"), 10, "the directories of 'made' to be removed")
        else:
            eq(len(t.partitions), 3, "partitions of 'made' after the restart")
            res, a = ConfigResource("topic", "made"), admin(b)
            cfg = a.describe_configs([res])[res].result(timeout=10)
            eq(cfg["cleanup.policy"].value, "compact", "cleanup.policy of 'made'")
        create(b, "made", 3, {"cleanup.policy": "compact"})
        b.stop()


main(test)

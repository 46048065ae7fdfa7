"""Three librdkafka consumers (confluent-kafka-python, one process each) in
one group over a 12-partition topic:
  1. every partition is assigned to exactly one member and every message is
     consumed exactly once across the group;
  2. kill -9 one member: its partitions move to the two others within the
     session timeout, and the messages produced meanwhile are each consumed
     exactly once;
  3. a new member joins: the group rebalances over all three, and no
     message produced around the rebalance is skipped or duplicated.
Members commit each message synchronously before reporting it, so "exactly
once" is checked on what the group reports.

Run as `2003-librdkafka-group.py worker <bootstrap> <name>` it is one member:
it prints "ASSIGN p,p,..." on every assignment and "MSG p offset value"
per message."""

import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, eq, check, log, main  # noqa: E402

TOPIC = "itest-group12"
GROUP = "itest-2003"
PARTS = 12
SESSION_MS = 6000


def worker(bootstrap, name):
    from confluent_kafka import Consumer

    def on_assign(c, parts):
        print("ASSIGN " + ",".join(str(p.partition) for p in parts), flush=True)

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "client.id": name,
                  "enable.auto.commit": False, "auto.offset.reset": "earliest",
                  "session.timeout.ms": SESSION_MS, "heartbeat.interval.ms": 500})
    c.subscribe([TOPIC], on_assign=on_assign)
    while True:
        m = c.poll(0.2)
        if m is None or m.error():
            continue
        c.commit(message=m, asynchronous=False)
        print("MSG %d %d %s" % (m.partition(), m.offset(), m.value().decode()), flush=True)


class Member:
    def __init__(self, bootstrap, name):
        self.name = name
        self.assign = None
        self.msgs = []
        self.lock = threading.Lock()
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "worker", bootstrap, name],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            kind, _, rest = line.strip().partition(" ")
            with self.lock:
                if kind == "ASSIGN":
                    self.assign = sorted(int(p) for p in rest.split(",") if p)
                elif kind == "MSG":
                    p, o, v = rest.split(" ")
                    self.msgs.append((int(p), int(o), v))

    def kill(self):
        self.proc.kill()
        self.proc.wait(10)


def produce(b, tag, per_part):
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all"})
    for i in range(per_part):
        for part in range(PARTS):
            p.produce(TOPIC, value=("%s-%d-%d" % (tag, part, i)).encode(), partition=part)
    eq(p.flush(15), 0, "messages left unflushed")
    return sorted("%s-%d-%d" % (tag, part, i) for part in range(PARTS) for i in range(per_part))


def wait_assignments(members, what, timeout_s):
    """Until the members' assignments partition 0..11 exactly; returns the elapsed seconds."""
    t0 = time.monotonic()
    while True:
        with_locks = [m.assign for m in members]
        if all(a for a in with_locks) and sorted(p for a in with_locks for p in a) == list(range(PARTS)):
            return time.monotonic() - t0
        check(time.monotonic() - t0 < timeout_s, "%s: assignments %r cover the 12 partitions once within %ds"
              % (what, with_locks, timeout_s))
        time.sleep(0.1)


def values(members, tag):
    return sorted(v for m in members for (_, _, v) in list(m.msgs) if v.startswith(tag + "-"))


def wait_values(members, tag, want, timeout_s):
    deadline = time.monotonic() + timeout_s
    while len(values(members, tag)) < len(want) and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(1.0)  # anything extra (a duplicate) would arrive now
    eq(values(members, tag), want, "messages '%s' consumed exactly once across the group" % tag)


def test():
    from confluent_kafka.admin import AdminClient, NewTopic
    overrides = {"group.initial.rebalance.delay.ms": "1000", "auto.create.topics.enable": "false"}
    with Broker(overrides=overrides) as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        admin.create_topics([NewTopic(TOPIC, PARTS, 1)])[TOPIC].result(15)
        want1 = produce(b, "a", 10)
        members = [Member(b.bootstrap, "m%d" % i) for i in range(3)]
        try:
            wait_assignments(members, "three members", 30)
            eq(sorted(len(m.assign) for m in members), [4, 4, 4], "partitions per member")
            wait_values(members, "a", want1, 30)
            for m in members:
                for (p, _, _) in m.msgs:
                    check(p in m.assign, "%s consumed partition %d outside its assignment %r" % (m.name, p, m.assign))
            log("3 members x 4 partitions, %d messages exactly once" % len(want1))

            victim, rest = members[0], members[1:]
            moved = victim.assign
            for m in rest:
                m.assign = None
            victim.kill()
            t_kill = time.monotonic()
            want2 = produce(b, "b", 5)
            wait_assignments(rest, "after kill -9", 30)
            took = time.monotonic() - t_kill
            check(took < SESSION_MS / 1000 + 5, "reassignment took %.1fs (session timeout %ds)" % (took, SESSION_MS // 1000))
            check(set(moved) <= set(rest[0].assign + rest[1].assign), "the killed member's partitions moved")
            wait_values(rest, "b", want2, 30)
            log("kill -9: partitions %r moved in %.1fs, %d messages exactly once" % (moved, took, len(want2)))

            for m in rest:
                m.assign = None
            newcomer = Member(b.bootstrap, "m3")
            want3 = produce(b, "c", 5)
            wait_assignments(rest + [newcomer], "after a new member joined", 30)
            eq(sorted(len(m.assign) for m in rest + [newcomer]), [4, 4, 4], "partitions per member after join")
            want4 = produce(b, "d", 5)
            wait_values(rest + [newcomer], "c", want3, 30)
            wait_values(rest + [newcomer], "d", want4, 30)
            log("new member: rebalanced to 3 x 4, nothing skipped or duplicated")
            members.append(newcomer)
        finally:
            for m in members:
                if m.proc.poll() is None:
                    m.kill()


if len(sys.argv) >= 4 and sys.argv[1] == "worker":
    worker(sys.argv[2], sys.argv[3])
else:
    main(test)

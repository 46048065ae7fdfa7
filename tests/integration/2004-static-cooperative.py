"""librdkafka (confluent-kafka-python) static membership and the
cooperative-sticky assignor:
  * two static members (group.instance.id) share 4 partitions; one is
    closed and restarted with the same instance id: it gets exactly its old
    partitions back, the other member sees no revocation and no new
    assignment (no rebalance), and the group still has two members, the
    restarted one under a new member id;
  * cooperative-sticky: a second member joins a one-member group over 6
    partitions; the first gives up exactly 3 partitions (incremental
    revocation, it never loses the 3 it keeps), every message is consumed
    exactly once."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, eq, check, log, main, poll_until  # noqa: E402

from confluent_kafka import Consumer, Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402
from kafka import KafkaAdminClient  # noqa: E402


class Member:
    """A consumer with its assignment callbacks recorded."""

    def __init__(self, b, group, topic, **extra):
        self.assigned, self.revoked, self.msgs = [], [], []
        conf = {"bootstrap.servers": b.bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                "session.timeout.ms": 10000, "heartbeat.interval.ms": 500, "enable.auto.commit": False}
        conf.update(extra)
        self.c = Consumer(conf)
        self.c.subscribe([topic], on_assign=lambda c, ps: self.assigned.append(sorted(p.partition for p in ps)),
                         on_revoke=lambda c, ps: self.revoked.append(sorted(p.partition for p in ps)))

    def poll(self):
        m = self.c.poll(0.05)
        if m is not None and not m.error():
            self.msgs.append((m.partition(), m.offset()))
            self.c.commit(message=m, asynchronous=False)

    def parts(self):
        return sorted(p.partition for p in self.c.assignment())


def produce(b, topic, nparts, per_part):
    p = Producer({"bootstrap.servers": b.bootstrap})
    for i in range(per_part):
        for part in range(nparts):
            p.produce(topic, value=b"x", partition=part)
    eq(p.flush(15), 0, "unflushed")


def check_static(b, kadmin):
    topic, group = "itest-static", "itest-2004-static"
    a = Member(b, group, topic, **{"group.instance.id": "inst-a", "client.id": "a"})
    bm = Member(b, group, topic, **{"group.instance.id": "inst-b", "client.id": "b"})
    poll_until([a, bm], lambda: len(a.parts()) == 2 and len(bm.parts()) == 2, "static members 2 x 2")
    a_parts, b_parts = a.parts(), bm.parts()
    b_history = (list(bm.assigned), list(bm.revoked))
    desc = kadmin.describe_consumer_groups([group])[0]
    old_ids = {m.client_id: m.member_id for m in desc.members}
    a.c.close()  # a static member sends no LeaveGroup
    a2 = Member(b, group, topic, **{"group.instance.id": "inst-a", "client.id": "a"})
    poll_until([a2, bm], lambda: a2.parts() != [], "the restarted static member's assignment")
    for _ in range(40):  # 2 s: a rebalance would show up at b now
        a2.poll()
        bm.poll()
    eq(a2.parts(), a_parts, "restarted static member gets its old partitions")
    eq(bm.parts(), b_parts, "other member's partitions")
    eq((bm.assigned, bm.revoked), b_history, "other member's assign/revoke callbacks (no rebalance)")
    desc = kadmin.describe_consumer_groups([group])[0]
    eq((desc.state, sorted(m.client_id for m in desc.members)), ("Stable", ["a", "b"]), "group after restart")
    new_ids = {m.client_id: m.member_id for m in desc.members}
    eq(new_ids["b"], old_ids["b"], "other member's id")
    check(new_ids["a"] != old_ids["a"] and new_ids["a"].startswith("inst-a-"),
          "restarted member has a new member id: %r -> %r" % (old_ids["a"], new_ids["a"]))
    a2.c.close()
    bm.c.close()
    log("static member restart without rebalance verified")


def check_cooperative(b):
    topic, group = "itest-coop", "itest-2004-coop"
    extra = {"partition.assignment.strategy": "cooperative-sticky"}
    produce(b, topic, 6, 10)
    c1 = Member(b, group, topic, **extra)
    poll_until([c1], lambda: c1.parts() == list(range(6)), "first member owns 6 partitions")
    c2 = Member(b, group, topic, **extra)
    poll_until([c1, c2], lambda: len(c1.parts()) == 3 and len(c2.parts()) == 3, "cooperative 3 + 3")
    produce(b, topic, 6, 10)
    poll_until([c1, c2], lambda: len(c1.msgs) + len(c2.msgs) >= 120, "120 messages")
    for _ in range(20):
        c1.poll()
        c2.poll()
    eq(sorted(c1.msgs + c2.msgs), sorted((p, o) for p in range(6) for o in range(20)), "every message once")
    eq(c1.assigned[0], list(range(6)), "first assignment")
    eq([len(r) for r in c1.revoked], [3], "first member revoked exactly 3 partitions, once")
    eq(sorted(c1.parts() + c2.parts()), list(range(6)), "final assignment")
    check(set(c1.parts()) == set(range(6)) - set(c1.revoked[0]), "first member kept the partitions it was not asked to give up")
    c1.c.close()
    c2.c.close()
    log("cooperative-sticky incremental rebalance verified")


def test():
    with Broker(overrides={"group.initial.rebalance.delay.ms": "0"}) as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        for t, n in (("itest-static", 4), ("itest-coop", 6)):
            admin.create_topics([NewTopic(t, n, 1)])[t].result(15)
        kadmin = KafkaAdminClient(bootstrap_servers=b.bootstrap)
        check_static(b, kadmin)
        check_cooperative(b)
        kadmin.close()


main(test)

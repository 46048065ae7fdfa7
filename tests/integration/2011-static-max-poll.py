"""Static members (group.instance.id, librdkafka via confluent-kafka-python)
go through the rebalances Kafka 2.8+ gives them:
  1. a static member that stops polling past max.poll.interval.ms gives up
     its partitions (librdkafka marks them lost and joins again with an
     empty member id and the same instance id); the group is Stable and the
     member's protocol is unchanged, so it gets exactly its old partitions
     back without a rebalance: the other member sees no callback at all,
     and the group's generation does not change;
  2. a static member is closed (no LeaveGroup) so its session expires,
     and meanwhile the other static member stops polling past
     max.poll.interval.ms and joins again: the group goes through exactly
     one more generation, after which the surviving member owns every
     partition, and it sees one assignment for it;
  3. a static member stops polling and meanwhile a third member joins: the
     join phase ends after the rebalance timeout without it, but (Kafka's
     onCompleteJoin) a static member that has not rejoined stays in the
     group and is given partitions; when it polls again it joins with an
     empty member id into the Stable group and gets them without a second
     rebalance.
Rebalances are counted with on_assign/on_revoke/on_lost callbacks and the
group generation (kafka-python's describe_consumer_groups)."""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, eq, check, log, main, poll_until  # noqa: E402

from confluent_kafka import Consumer, KafkaError  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402
from kafka import KafkaAdminClient  # noqa: E402

TOPIC = "itest-2011"
SESSION_MS = 3000
MAX_POLL_MS = 3000


class Member:
    """A static consumer with every callback recorded in order."""

    def __init__(self, b, group, inst):
        self.events, self.errors = [], []
        self.c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": group, "client.id": inst,
                           "group.instance.id": inst, "auto.offset.reset": "earliest",
                           "enable.auto.commit": False, "session.timeout.ms": SESSION_MS,
                           "max.poll.interval.ms": MAX_POLL_MS, "heartbeat.interval.ms": 300})
        self.c.subscribe([TOPIC], on_assign=self._on("assign"), on_revoke=self._on("revoke"),
                         on_lost=self._on("lost"))

    def _on(self, what):
        def cb(c, parts):
            self.events.append((what, sorted(p.partition for p in parts)))
        return cb

    def poll(self):
        m = self.c.poll(0.05)
        if m is not None and m.error():
            self.errors.append(m.error().code())
            check(m.error().code() in (KafkaError._MAX_POLL_EXCEEDED, KafkaError._PARTITION_EOF),
                  "consumer error %s" % m.error())

    def parts(self):
        return sorted(p.partition for p in self.c.assignment())


def poll_for(members, seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for m in members:
            m.poll()


def generation(kadmin, group):
    d = kadmin.describe_consumer_groups([group])[0]
    return d.state, len(d.members)


def group_generation(b, group):
    """The generation from the broker log's last 'generation N with' line for group."""
    gen = None
    for line in b.log_text().splitlines():
        if "group '%s': generation " % group in line:
            gen = int(line.split("generation ")[1].split()[0])
    return gen


def stall(m, others, seconds):
    """m does not poll for seconds while the others keep polling."""
    poll_for(others, seconds)


def check_max_poll(b, kadmin):
    group = "itest-2011-maxpoll"
    a, o = Member(b, group, "inst-a"), Member(b, group, "inst-o")
    poll_until([a, o], lambda: len(a.parts()) == 2 and len(o.parts()) == 2, "2 + 2 partitions")
    poll_for([a, o], 1.0)
    a_parts, o_events, gen0 = a.parts(), list(o.events), group_generation(b, group)
    a_events = len(a.events)
    stall(a, [o], MAX_POLL_MS / 1000.0 + 1.5)
    poll_until([a, o], lambda: KafkaError._MAX_POLL_EXCEEDED in a.errors, "a's max.poll.interval.ms error")
    poll_until([a, o], lambda: a.parts() == a_parts and len(a.events) > a_events,
               "a's partitions back after it joined again")
    poll_for([a, o], 2.0)  # a rebalance would reach o by now
    eq(a.parts(), a_parts, "a's partitions after joining again")
    eq(a.events[a_events:], [("lost", a_parts), ("assign", a_parts)], "a's callbacks after max.poll.interval.ms")
    eq(o.events, o_events, "the other member's callbacks (no rebalance)")
    eq(group_generation(b, group), gen0, "generation (no rebalance)")
    eq(generation(kadmin, group), ("Stable", 2), "group state")
    a.c.close()
    o.c.close()
    log("max.poll.interval.ms: static member rejoined without a rebalance")


def check_rejoin_during_expiry(b, kadmin):
    group = "itest-2011-expiry"
    a, o = Member(b, group, "inst-a"), Member(b, group, "inst-o")
    poll_until([a, o], lambda: len(a.parts()) == 2 and len(o.parts()) == 2, "2 + 2 partitions")
    poll_for([a, o], 1.0)
    gen0, a_events = group_generation(b, group), len(a.events)
    o.c.close()  # static: no LeaveGroup, its session expires
    stall(a, [], MAX_POLL_MS / 1000.0 + 1.0)
    poll_until([a], lambda: a.parts() == [0, 1, 2, 3], "a owns every partition", 30)
    poll_for([a], SESSION_MS / 1000.0 + 1.0)
    eq(a.parts(), [0, 1, 2, 3], "a's final partitions")
    eq(group_generation(b, group), gen0 + 1, "generations after the expiry and a's rejoin")
    assigns = [e for e in a.events[a_events:] if e[0] == "assign"]
    eq(assigns[-1], ("assign", [0, 1, 2, 3]), "a's last assignment")
    eq(len(assigns), 2 if assigns[0][1] != [0, 1, 2, 3] else 1, "a's assignments %r" % (a.events[a_events:],))
    eq(generation(kadmin, group), ("Stable", 1), "group state")
    a.c.close()
    log("static member rejoined during another member's expiry: one rebalance")


def check_stalled_through_rebalance(b, kadmin):
    """a stops polling; a third member joins; the join phase ends after the
    rebalance timeout without a, which stays in the group (static) and gets
    its share; a then joins again (empty member id after max.poll.interval.ms)
    into the Stable group: no second rebalance."""
    group = "itest-2011-stalled"
    a, o = Member(b, group, "inst-a"), Member(b, group, "inst-o")
    poll_until([a, o], lambda: len(a.parts()) == 2 and len(o.parts()) == 2, "2 + 2 partitions")
    poll_for([a, o], 1.0)
    gen0, o_events = group_generation(b, group), len(o.events)
    end = time.monotonic() + MAX_POLL_MS / 1000.0 + 2.5  # a's stall, past max.poll.interval.ms
    poll_for([o], 0.5)
    c = Member(b, group, "inst-c")
    while time.monotonic() < end:
        o.poll()
        c.poll()
    poll_until([a, o, c], lambda: KafkaError._MAX_POLL_EXCEEDED in a.errors, "a's max.poll.interval.ms error")
    poll_until([a, o, c], lambda: sorted(a.parts() + o.parts() + c.parts()) == [0, 1, 2, 3] and
               all(m.parts() for m in (a, o, c)), "4 partitions over three members")
    poll_for([a, o, c], SESSION_MS / 1000.0 + 1.0)
    eq(group_generation(b, group), gen0 + 1, "generations: one rebalance for the new member, none for a's return")
    eq(len([e for e in o.events[o_events:] if e[0] == "assign"]), 1, "o's assignments %r" % (o.events[o_events:],))
    eq(generation(kadmin, group), ("Stable", 3), "group state")
    for m in (a, o, c):
        m.c.close()
    log("static member stalled through a rebalance: kept, one rebalance")


def test():
    with Broker(overrides={"group.initial.rebalance.delay.ms": "0", "group.min.session.timeout.ms": "1000"}) as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        admin.create_topics([NewTopic(TOPIC, 4, 1)])[TOPIC].result(15)
        kadmin = KafkaAdminClient(bootstrap_servers=b.bootstrap)
        check_max_poll(b, kadmin)
        check_rejoin_during_expiry(b, kadmin)
        check_stalled_through_rebalance(b, kadmin)
        kadmin.close()


main(test)

"""kafka-python 2.0.2 group consumers (version probe, no api_version pinned):
two KafkaConsumers in one group share a 4-partition topic 2/2, consume every
message exactly once, commit with a metadata string (OffsetCommit v2); the
admin client lists the group, describes it (members, assignments, state) and
reads the committed offsets back (OffsetFetch) with their metadata."""

import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, eq, check, log, main  # noqa: E402

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition  # noqa: E402
from kafka.admin import NewTopic  # noqa: E402
from kafka.structs import OffsetAndMetadata  # noqa: E402

TOPIC = "itest-kp-group"
GROUP = "itest-2005"
N = 25  # per partition


def test():
    # Both consumers must join the first generation: if one started alone it
    # would read partitions it then hands over uncommitted, and the other
    # would read them again (at-least-once, correct, but not this test).
    # group.initial.rebalance.delay.ms is Kafka's knob for exactly that.
    with Broker(overrides={"group.initial.rebalance.delay.ms": "2000"}) as b:
        admin = KafkaAdminClient(bootstrap_servers=b.bootstrap, request_timeout_ms=10000)
        admin.create_topics([NewTopic(TOPIC, 4, 1)])
        prod = KafkaProducer(bootstrap_servers=b.bootstrap, acks="all")
        for i in range(N):
            for p in range(4):
                prod.send(TOPIC, value=("%d-%d" % (p, i)).encode(), partition=p)
        prod.flush(15)
        prod.close()

        conf = dict(bootstrap_servers=b.bootstrap, group_id=GROUP, auto_offset_reset="earliest",
                    enable_auto_commit=False, session_timeout_ms=6000, heartbeat_interval_ms=500,
                    consumer_timeout_ms=200)
        c1 = KafkaConsumer(TOPIC, client_id="kp-1", **conf)
        c2 = KafkaConsumer(TOPIC, client_id="kp-2", **conf)
        got = {c1: [], c2: []}
        stop = threading.Event()

        def run(c):  # kafka-python joins inside poll(): one thread per consumer
            while not stop.is_set():
                for tp, msgs in c.poll(timeout_ms=100).items():
                    got[c].extend((tp.partition, m.offset, m.value.decode()) for m in msgs)

        threads = [threading.Thread(target=run, args=(c,), daemon=True) for c in (c1, c2)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 60
        while True:
            a1 = sorted(tp.partition for tp in c1.assignment())
            a2 = sorted(tp.partition for tp in c2.assignment())
            total = len(got[c1]) + len(got[c2])
            if len(a1) == 2 and len(a2) == 2 and total >= 4 * N:
                break
            check(time.monotonic() < deadline, "2 x 2 assignment and %d messages (got %r %r, %d msgs)"
                  % (4 * N, a1, a2, total))
            time.sleep(0.1)
        time.sleep(1.0)  # a duplicate would arrive now
        stop.set()
        for t in threads:
            t.join(10)
        eq(sorted(a1 + a2), [0, 1, 2, 3], "assignments")
        every = sorted(got[c1] + got[c2])
        eq(every, sorted((p, i, "%d-%d" % (p, i)) for p in range(4) for i in range(N)),
           "every message exactly once across the group")
        for c, mine in ((c1, a1), (c2, a2)):
            c.commit({TopicPartition(TOPIC, p): OffsetAndMetadata(N, "kp-meta-%d" % p) for p in mine})
            eq([c.committed(TopicPartition(TOPIC, p)) for p in mine], [N] * 2, "committed()")
        log("kafka-python group: 2 x 2 partitions, %d messages exactly once, commits done" % len(every))

        eq([g for g in admin.list_consumer_groups() if g[0] == GROUP], [(GROUP, "consumer")], "list_consumer_groups")
        desc = admin.describe_consumer_groups([GROUP])[0]
        eq((desc.group, desc.state, desc.protocol_type, desc.protocol), (GROUP, "Stable", "consumer", "range"),
           "describe group")
        eq(sorted(m.client_id for m in desc.members), ["kp-1", "kp-2"], "described members")
        eq(sorted(p for m in desc.members for t in m.member_assignment.assignment for p in t[1]), [0, 1, 2, 3],
           "described assignments")
        offs = admin.list_consumer_group_offsets(GROUP)
        eq(sorted((tp.partition, om.offset, om.metadata) for tp, om in offs.items()),
           [(p, N, "kp-meta-%d" % p) for p in range(4)], "committed offsets with metadata (OffsetFetch)")
        c1.close()
        c2.close()
        desc = admin.describe_consumer_groups([GROUP])[0]
        eq((desc.state, len(desc.members)), ("Empty", 0), "group after both consumers left")
        admin.close()


main(test)

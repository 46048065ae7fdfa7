"""Cluster mode: leadership of replicated partitions (replication factor 3), as Kafka's
controller keeps it in ZooKeeper mode.

ZooKeeper and three brokers in the chroot /gregor/c140; two topics of 4 partitions with
replication factor 3, `rf3c` with the defaults and `rf3u` with unclean.leader.election.enable=true:

  1. every state znode: leader = first replica, ISR = all three replicas, leader epoch 0
  2. kill -9 of a broker X that is not the controller: every partition it led gets the first
     replica (assignment order) left in its ISR, leader epoch + 1; X leaves every ISR (leader epoch
     + 1 there too); Metadata of the others shows the new leaders (raw) and ISRs (confluent_kafka)
  3. kill -9 of the two others, then X started again (so that no leader is left to add it back
     to an ISR): X, live but in no ISR, leads nothing of `rf3c` (leader -1, the ISR keeps one
     member, not X) and every partition of `rf3u` (unclean: ISR [X]); X's Metadata says so
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import kwire  # noqa: E402
from confluent_kafka.admin import AdminClient  # noqa: E402
import replicas  # noqa: E402
from gregor import eq, log, main, wait_until  # noqa: E402
from zookeeper import running_cluster, wait_listed  # noqa: E402

CHROOT = "/gregor/c140"
CLEAN, UNCLEAN = "rf3c", "rf3u"
NPARTS = 4
SESSION = {"zookeeper_session_timeout_ms": 4000, "zookeeper_connection_timeout_ms": 1000}


def states(zc, topic):
    return {p: replicas.state(zc, CHROOT, topic, p)[0] for p in range(NPARTS)}


def meta_leaders(b, topic):
    r = kwire.call(b.port, 3, 1, kwire.metadata_v1_body([topic]))
    err, parts = kwire.parse_metadata_v1(r.d[r.p:])["topics"].get(topic, (-1, []))
    return {p: leader for _, p, leader in (parts or [])}


def client_isrs(b, topic):
    """{partition: sorted ISR} as confluent_kafka's metadata through broker b has them."""
    md = AdminClient({"bootstrap.servers": b.bootstrap}).list_topics(topic, timeout=10)
    return {p: sorted(pm.isrs) for p, pm in md.topics[topic].partitions.items()}


def test():
    with running_cluster((1, 2, 3), CHROOT, **SESSION) as (zk, zc, brokers):
        wait_listed(brokers)
        eq(replicas.create_topic(brokers[0].port, CLEAN, NPARTS, 3)[0], 0, "CreateTopics RF 3 of %s" % CLEAN)
        eq(replicas.create_topic(brokers[1].port, UNCLEAN, NPARTS, 3,
                                 [("unclean.leader.election.enable", "true")])[0], 0, "CreateTopics of %s" % UNCLEAN)
        assign = {t: replicas.assignment(zc, CHROOT, t) for t in (CLEAN, UNCLEAN)}
        for t in (CLEAN, UNCLEAN):
            eq(all(len(r) == 3 for r in assign[t].values()), True, "3 replicas each in %r" % assign[t])
            wait_until(lambda: all(s is not None for s in states(zc, t).values()), 15, "states of %s" % t)
            for p, s in states(zc, t).items():
                eq((s["leader"], s["isr"], s["leader_epoch"]), (assign[t][p][0], assign[t][p], 0),
                   "state of %s-%d" % (t, p))
        before = {t: states(zc, t) for t in (CLEAN, UNCLEAN)}
        import json
        ctl = json.loads(zc.get(CHROOT + "/controller")[0])["brokerid"]
        x = next(i for i in (3, 2, 1) if i != ctl)
        log("controller %d; killing broker %d" % (ctl, x))
        brokers[x - 1].kill9()

        def expected(t, p):
            s = before[t][p]
            isr = [i for i in s["isr"] if i != x]
            leader = s["leader"] if s["leader"] != x else next(r for r in assign[t][p] if r in isr)
            return dict(leader=leader, isr=isr, leader_epoch=s["leader_epoch"] + 1)

        for t in (CLEAN, UNCLEAN):
            wait_until(lambda: all({k: s[k] for k in ("leader", "isr", "leader_epoch")} == expected(t, p)
                                   for p, s in states(zc, t).items()), 20,
                       "%s: broker %d out of every ISR, new leaders from the ISR" % (t, x))
        others = [b for i, b in enumerate(brokers, 1) if i != x]
        for b in others:
            wait_until(lambda: meta_leaders(b, CLEAN) == {p: expected(CLEAN, p)["leader"] for p in range(NPARTS)},
                       10, "Metadata of broker %s shows the new leaders" % b.bootstrap)
            wait_until(lambda: client_isrs(b, CLEAN) == {p: sorted(expected(CLEAN, p)["isr"]) for p in range(NPARTS)},
                       10, "confluent_kafka's metadata through %s shows the shrunk ISRs" % b.bootstrap)

        after_kill = {t: states(zc, t) for t in (CLEAN, UNCLEAN)}
        for b in others:
            b.kill9()
        brokers[x - 1].start()
        wait_until(lambda: all(s["leader"] == -1 for s in states(zc, CLEAN).values()), 30,
                   "%s: leader -1 everywhere (clean election only)" % CLEAN)
        for p, s in states(zc, CLEAN).items():
            eq(len(s["isr"]) == 1 and x not in s["isr"], True, "%s-%d keeps one ISR member, not %d: %r" %
               (CLEAN, p, x, s))
        wait_until(lambda: all(s["leader"] == x and s["isr"] == [x] for s in states(zc, UNCLEAN).values()), 30,
                   "%s: broker %d elected uncleanly, ISR [%d]" % (UNCLEAN, x, x))
        for p, s in states(zc, UNCLEAN).items():
            eq(s["leader_epoch"] > after_kill[UNCLEAN][p]["leader_epoch"], True, "%s-%d leader epoch raised" %
               (UNCLEAN, p))
        wait_until(lambda: meta_leaders(brokers[x - 1], UNCLEAN) == {p: x for p in range(NPARTS)} and
                   meta_leaders(brokers[x - 1], CLEAN) == {p: -1 for p in range(NPARTS)}, 10,
                   "Metadata of broker %d: it leads %s, nothing of %s" % (x, UNCLEAN, CLEAN))


if __name__ == "__main__":
    main(test)

"""Cluster mode: the controller's automatic leader rebalance (auto.leader.rebalance.enable,
leader.imbalance.check.interval.seconds=1, leader.imbalance.per.broker.percentage=10).

ZooKeeper and three brokers in the chroot /gregor/c142, a topic of 6 partitions with
replication factor 3.  Kill -9 of a non-controller broker X moves its two preferred partitions
to other leaders; X started again catches up and its leaders add it back to the ISR
themselves (AlterPartition); then the controller moves their leadership back to X (leader
epoch + 1) and every broker's Metadata shows it, with no ElectLeaders sent.
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import kwire  # noqa: E402
import replicas  # noqa: E402
from gregor import eq, log, main, wait_until  # noqa: E402
from zookeeper import running_cluster, wait_listed  # noqa: E402

CHROOT = "/gregor/c142"
TOPIC = "rebal6"
NPARTS = 6
SETTINGS = {"zookeeper_session_timeout_ms": 4000, "zookeeper_connection_timeout_ms": 1000,
            "leader.imbalance.check.interval.seconds": 1}


def st(zc, p):
    return replicas.state(zc, CHROOT, TOPIC, p)


def meta_leaders(b):
    r = kwire.call(b.port, 3, 1, kwire.metadata_v1_body([TOPIC]))
    err, parts = kwire.parse_metadata_v1(r.d[r.p:])["topics"].get(TOPIC, (-1, []))
    return {p: leader for _, p, leader in (parts or [])}


def test():
    settings = {k.replace(".", "_"): v for k, v in SETTINGS.items()}
    with running_cluster((1, 2, 3), CHROOT, **settings) as (zk, zc, brokers):
        wait_listed(brokers)
        eq(replicas.create_topic(brokers[0].port, TOPIC, NPARTS, 3)[0], 0, "CreateTopics RF 3")
        wait_until(lambda: all(st(zc, p)[0] is not None for p in range(NPARTS)), 15, "states made")
        assign = replicas.assignment(zc, CHROOT, TOPIC)
        ctl_id = json.loads(zc.get(CHROOT + "/controller")[0])["brokerid"]
        ctl = brokers[ctl_id - 1]
        x = next(i for i in (3, 2, 1) if i != ctl_id)
        mine = sorted(p for p in range(NPARTS) if assign[p][0] == x)
        brokers[x - 1].kill9()
        wait_until(lambda: all(st(zc, p)[0]["leader"] not in (x, -1) for p in mine), 20, "partitions moved")
        brokers[x - 1].start()
        wait_until(lambda: len(meta_leaders(brokers[x - 1])) == NPARTS, 20, "broker %d back" % x)
        before = {p: st(zc, p)[0] for p in mine}
        wait_until(lambda: all(x in st(zc, p)[0]["isr"] for p in mine), 20,
                   "the leaders add broker %d back to the ISR of %r" % (x, mine))
        log("broker %d back in the ISR of %r" % (x, mine))
        wait_until(lambda: all(st(zc, p)[0]["leader"] == x for p in mine), 15,
                   "the controller moved %r back to broker %d" % (mine, x))
        for p in mine:
            eq(st(zc, p)[0]["leader_epoch"], before[p]["leader_epoch"] + 1, "leader epoch of %s-%d" % (TOPIC, p))
        wait_until(lambda: all(meta_leaders(b) == {p: assign[p][0] for p in range(NPARTS)} for b in brokers), 15,
                   "every broker's Metadata has the preferred leaders again")


if __name__ == "__main__":
    main(test)

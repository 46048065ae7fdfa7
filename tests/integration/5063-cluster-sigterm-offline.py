"""Cluster mode: a broker stopped cleanly (SIGTERM) takes its partitions
offline on every other broker at once, not after its ZooKeeper session
expires; restarted, it leads them again.

ZooKeeper and three brokers in the chroot /gregor/c63 with a 30 s session
timeout, so that waiting for the session to expire cannot pass:

  1. a topic of 6 partitions; broker 3 stopped with SIGTERM (exit status 0):
     within 3 s both other brokers' Metadata answer leader -1 for each of
     its partitions and keep the others' leaders
  2. broker 3 started again: its partitions have leader 3 again everywhere
"""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import kwire  # noqa: E402
from gregor import eq, log, main, wait_until  # noqa: E402
from zookeeper import running_cluster, wait_listed  # noqa: E402

CHROOT = "/gregor/c63"
SESSION = {"zookeeper_session_timeout_ms": 30000, "zookeeper_connection_timeout_ms": 2000}
TOPIC = "term6"


def create(b, topic, nparts):
    eq(kwire.create_topic(b.port, topic, nparts)[0], 0, "CreateTopics of %s" % topic)


def leaders(b):
    r = kwire.call(b.port, 3, 1, kwire.metadata_v1_body([TOPIC]))
    err, parts = kwire.parse_metadata_v1(r.d[r.p:])["topics"].get(TOPIC, (-1, []))
    return {p: leader for _, p, leader in (parts or [])}


def test():
    with running_cluster((1, 2, 3), CHROOT, **SESSION) as (zk, zc, brokers):
        b1, b2, b3 = brokers
        wait_until(lambda: zc.exists(CHROOT + "/controller") and
                   len(zc.get_children(CHROOT + "/brokers/ids")) == 3, 20, "three brokers and a controller")
        wait_listed(brokers)
        create(b1, TOPIC, 6)
        wait_until(lambda: all(len(leaders(b)) == 6 and -1 not in leaders(b).values() for b in brokers), 15,
                   "every partition led on every broker")
        before = leaders(b1)
        eq(sorted(set(before.values())), [1, 2, 3], "leaders of %s" % TOPIC)
        want = {p: (-1 if leader == 3 else leader) for p, leader in before.items()}
        t0 = time.monotonic()
        eq(b3.stop(), 0, "exit status of broker 3 after SIGTERM")
        wait_until(lambda: leaders(b1) == want and leaders(b2) == want, 3,
                   "broker 3's partitions offline on brokers 1 and 2 (last %r)" % leaders(b1))
        log("SIGTERM of broker 3: its partitions offline after %.2f s (session timeout 30 s)" %
            (time.monotonic() - t0))
        b3.start()
        wait_until(lambda: all(leaders(b) == before for b in brokers), 20, "broker 3 leads again")


if __name__ == "__main__":
    main(test)

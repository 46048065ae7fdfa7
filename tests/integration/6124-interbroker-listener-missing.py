"""Cluster mode: a broker that registered no endpoint of the inter-broker
listener is not reached through another one.  Two brokers with two
plaintext listeners each, CLIENT (first) and their own inter-broker
listener: INTERNAL on broker 1, OTHER on broker 2 (so neither registered
the other's).  Kafka fails such connections rather than pick another
listener; Gregor used to fall back to the peer's first PLAINTEXT endpoint.

  1. a topic of 2 partitions, replication factor 2, created through the
     controller: the partition the controller leads becomes
     under-replicated (its ISR in ZooKeeper shrinks to the leader) and
     stays so, as its follower is never reached (no LeaderAndIsr, no fetch
     through CLIENT)
  2. each broker logs that the other registered no endpoint of its
     inter-broker listener
"""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from gregor import check, free_port, log, main, wait_until  # noqa: E402
from replicas import state  # noqa: E402
from zookeeper import running_cluster  # noqa: E402

CHROOT = "/gregor/c6124"
TOPIC = "missing"
INTER = {1: "INTERNAL", 2: "OTHER"}


def isr(zc, p):
    st = state(zc, CHROOT, TOPIC, p)[0] or {}
    return st.get("leader", -1), sorted(st.get("isr", []))


def listeners(i, b):
    """running_cluster setup: a CLIENT listener and an inter-broker listener named INTER[i]."""
    b.overrides.update({
        "listeners": "CLIENT://127.0.0.1:%d,%s://127.0.0.1:%d" % (b.port, INTER[i], free_port()),
        "listener.security.protocol.map": "CLIENT:PLAINTEXT,%s:PLAINTEXT" % INTER[i],
        "inter.broker.listener.name": INTER[i]})


def test():
    with running_cluster((1, 2), CHROOT, setup=listeners, replica_lag_time_max_ms=3000) as (_zk, zc, bs):
        ctl = int(zc.get(CHROOT + "/controller")[0].decode().split('"brokerid":')[1].split(",")[0])
        admin = AdminClient({"bootstrap.servers": bs[ctl - 1].bootstrap})
        admin.create_topics([NewTopic(TOPIC, 2, 2)], operation_timeout=15)[TOPIC].result(timeout=30)
        wait_until(lambda: all(isr(zc, p)[0] > 0 for p in (0, 1)), 20, "both partitions have a leader")
        mine = [p for p in (0, 1) if isr(zc, p)[0] == ctl]
        check(mine, "a partition led by the controller %d: %s" % (ctl, [isr(zc, p) for p in (0, 1)]))
        p = mine[0]
        wait_until(lambda: isr(zc, p)[1] == [ctl], 30,
                   "partition %d under-replicated (ISR only its leader %d)" % (p, ctl))
        time.sleep(4)
        check(isr(zc, p)[1] == [ctl], "partition %d still under-replicated: %s" % (p, isr(zc, p)))
        log("partition %d led by the controller %d stays under-replicated: ISR %s" % (p, ctl, isr(zc, p)[1]))
        for i, b in ((1, bs[0]), (2, bs[1])):
            other = 3 - i
            line = "broker %d registered no endpoint of the inter-broker listener %s" % (other, INTER[i])
            wait_until(lambda: line in b.log_text(), 20, "%r in the log of broker %d" % (line, i))
        log("each broker logs that the other has no endpoint of its inter-broker listener")
        for b in bs:
            b.kill9()  # controlled shutdown would wait for a controller the other broker cannot reach


if __name__ == "__main__":
    main(test)

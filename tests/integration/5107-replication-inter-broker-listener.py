"""Cluster mode: followers fetch from the leader's inter-broker listener.

ZooKeeper and two brokers, each with two plaintext listeners, CLIENT (first) and
INTERNAL, and inter.broker.listener.name=INTERNAL; topic "ib" (1 partition,
replication factor 2, min.insync.replicas=2):

  1. the follower's fetcher connects to the leader's INTERNAL port (its log line
     names the endpoint), not to the CLIENT port clients are given
  2. acks=all records through the CLIENT listener are acknowledged (the follower
     replicates them over INTERNAL) and read back
"""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from gregor import eq, free_port, log, main, wait_until  # noqa: E402
from replicas import state  # noqa: E402
from zookeeper import ZooKeeper, cluster_broker, wait_listed  # noqa: E402

CHROOT = "/gregor/c107"
TOPIC = "ib"


def test():
    with ZooKeeper() as zk:
        zc = zk.client()
        bs, internal = [], {}
        try:
            for i in (1, 2):
                b = cluster_broker(zk.connect, i, CHROOT, start=False)
                internal[i] = free_port()
                b.overrides.update({
                    "listeners": "CLIENT://127.0.0.1:%d,INTERNAL://127.0.0.1:%d" % (b.port, internal[i]),
                    "listener.security.protocol.map": "CLIENT:PLAINTEXT,INTERNAL:PLAINTEXT",
                    "inter.broker.listener.name": "INTERNAL"})
                b.start()
                bs.append(b)
            wait_listed(bs)
            admin = AdminClient({"bootstrap.servers": bs[0].bootstrap})
            admin.create_topics([NewTopic(TOPIC, 1, 2, config={"min.insync.replicas": "2"})],
                                operation_timeout=15)[TOPIC].result(timeout=30)
            wait_until(lambda: (state(zc, CHROOT, TOPIC, 0)[0] or {}).get("leader", -1) > 0, 20, "a leader")
            lid = state(zc, CHROOT, TOPIC, 0)[0]["leader"]
            leader, follower = bs[lid - 1], bs[2 - lid]
            line = "replica fetcher for broker %d at 127.0.0.1:%d started" % (lid, internal[lid])
            wait_until(lambda: line in follower.log_text(), 20, "the follower's fetcher on INTERNAL: %r" % line)
            log("follower fetches from the leader's INTERNAL listener (port %d)" % internal[lid])

            p = Producer({"bootstrap.servers": leader.bootstrap, "acks": "all", "message.timeout.ms": 20000})
            res = []
            for v in range(10):
                p.produce(TOPIC, value=b"%d" % v, partition=0, on_delivery=lambda err, m: res.append(err))
            p.flush(30)
            eq(res, [None] * 10, "acks=all deliveries")
            c = Consumer({"bootstrap.servers": leader.bootstrap, "group.id": "c107"})
            c.assign([TopicPartition(TOPIC, 0, 0)])
            got, end = [], time.monotonic() + 20
            while len(got) < 10 and time.monotonic() < end:
                m = c.poll(0.5)
                if m is not None and not m.error():
                    got.append(m.value())
            c.close()
            eq(got, [b"%d" % v for v in range(10)], "records read back")
            for b in bs:
                eq(b.stop(), 0, "exit status of %s" % b.bootstrap)
        except BaseException:
            for b in bs:
                b.dump_log()
            raise
        finally:
            for b in bs:
                b.cleanup(keep=False)


if __name__ == "__main__":
    main(test)

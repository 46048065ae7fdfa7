"""Cluster mode: a follower stopped and started again catches up from its own log.

ZooKeeper and three brokers in the chroot /gregor/c103; topic "fr" (1 partition,
replication factor 3, min.insync.replicas=2):

  1. 1,000 records with acks=all (idempotent confluent-kafka producer) are acknowledged
  2. a follower is stopped with SIGTERM: its controlled shutdown takes it out of the ISR
     (the controller writes the ISR of 2), so 1,000 more acks=all records are
     acknowledged by the leader and the other follower while it is down
  3. started again, it recovers its log, takes its role from the controller's
     LeaderAndIsr, truncates where the leader says (nothing here), fetches from its log
     end and the leader adds it back to the ISR (AlterPartition): the three brokers'
     .log files are byte for byte the same, and a consumer reads the 2,000 records in
     order
"""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from gregor import eq, log, main, wait_until  # noqa: E402
from replicas import state  # noqa: E402
from zookeeper import running_cluster, wait_listed  # noqa: E402

CHROOT = "/gregor/c103"
TOPIC = "fr"
N = 1000


def log_bytes(b):
    d = b.partition_dir(TOPIC, 0)
    out = b""
    for name in sorted(os.listdir(d)):
        if name.endswith(".log"):
            with open(os.path.join(d, name), "rb") as f:
                out += f.read()
    return out


def producer(b):
    return Producer({"bootstrap.servers": b.bootstrap, "enable.idempotence": True, "acks": "all",
                     "linger.ms": 5, "message.timeout.ms": 90000})


def send(p, first, acked, errors):
    for i in range(first, first + N):
        p.produce(TOPIC, value=b"%d" % i, partition=0,
                  on_delivery=lambda err, m: errors.append(err) if err else acked.append(m.offset()))
        p.poll(0)


def test():
    with running_cluster((1, 2, 3), CHROOT, zookeeper_session_timeout_ms=10000) as (zk, zc, brokers):
        wait_listed(brokers)
        admin = AdminClient({"bootstrap.servers": brokers[0].bootstrap})
        admin.create_topics([NewTopic(TOPIC, 1, 3, config={"min.insync.replicas": "2"})],
                            operation_timeout=15)[TOPIC].result(timeout=30)
        lid = []

        def led():
            part = admin.list_topics(TOPIC, timeout=5).topics[TOPIC].partitions.get(0)
            lid[:] = [part.leader if part else -1]
            return lid[0] > 0
        wait_until(led, 20, "a leader")
        leader = brokers[lid[0] - 1]
        follower = [b for b in brokers if b is not leader][0]
        p = producer(leader)
        acked, errors = [], []
        send(p, 0, acked, errors)
        eq(p.flush(60), 0, "records left")
        eq((len(acked), errors), (N, []), "first 1,000 acknowledged")

        eq(follower.stop(), 0, "exit status of the stopped follower")
        acked2, errors2 = [], []
        send(p, N, acked2, errors2)
        eq(p.flush(60), 0, "records left while the follower is down")
        eq((len(acked2), errors2), (N, []), "second 1,000 acknowledged without the stopped follower")
        eq(sorted(acked2), list(range(N, 2 * N)), "their offsets")
        log("follower %s stopped: out of the ISR, the second 1,000 acknowledged" % follower.bootstrap)

        follower.start()
        wait_until(lambda: all(log_bytes(b) == log_bytes(leader) for b in brokers), 20,
                   "the three brokers' .log bytes equal")
        wait_until(lambda: sorted(state(zc, CHROOT, TOPIC, 0)[0]["isr"]) == [1, 2, 3], 20,
                   "the follower back in the ISR")
        log("follower back: logs byte for byte equal, in the ISR again")

        c = Consumer({"bootstrap.servers": leader.bootstrap, "group.id": "c103", "enable.auto.commit": False})
        c.assign([TopicPartition(TOPIC, 0, 0)])
        got = []

        def more():
            m = c.poll(0.5)
            if m is not None and not m.error():
                got.append(int(m.value()))
            return len(got) >= 2 * N
        wait_until(more, 30, "2,000 records consumed", interval_s=0)
        c.close()
        eq(got, list(range(2 * N)), "records consumed in order")


if __name__ == "__main__":
    main(test)

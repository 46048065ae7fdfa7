"""Cluster mode: a follower catching up through answers the leader cut inside a batch.

ZooKeeper and three brokers in the chroot /gregor/c102 with replica.fetch.max.bytes=1024:
a leader fills a follower's Fetch with whole batches up to 1 KiB and may end it inside
the next batch (as Kafka's leader does).  Both followers of a replication factor 3
topic are SIGSTOPped while confluent-kafka writes 400 records of 300 bytes
with acks=1 (many small batches, several KiB behind); after SIGCONT they must catch
up: every follower's .log bytes equal the leader's within the bound, and the high
watermark reaches 400.  (A follower that took the partial batch for a corrupt one
stayed behind for good.)
"""

import os
import signal
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from gregor import eq, log, main, wait_until  # noqa: E402
from zookeeper import running_cluster, wait_listed  # noqa: E402

CHROOT = "/gregor/c102"
TOPIC = "partial"
N = 400


def log_bytes(b):
    d = b.partition_dir(TOPIC, 0)
    out = b""
    for name in sorted(os.listdir(d)):
        if name.endswith(".log"):
            with open(os.path.join(d, name), "rb") as f:
                out += f.read()
    return out


def test():
    with running_cluster((1, 2, 3), CHROOT, zookeeper_session_timeout_ms=15000,
                         replica_fetch_max_bytes=1024) as (zk, zc, brokers):
        wait_listed(brokers)
        admin = AdminClient({"bootstrap.servers": brokers[0].bootstrap})
        admin.create_topics([NewTopic(TOPIC, 1, 3)], operation_timeout=15)[TOPIC].result(timeout=30)
        leader_id = []

        def led():
            part = admin.list_topics(TOPIC, timeout=5).topics[TOPIC].partitions.get(0)
            leader_id[:] = [part.leader if part else -1]
            return leader_id[0] > 0
        wait_until(led, 20, "a leader")
        leader = brokers[leader_id[0] - 1]
        followers = [b for b in brokers if b is not leader]
        wait_until(lambda: all("replica: '%s-0' is follower" % TOPIC in b.log_text() for b in followers), 20,
                   "the followers took their role")
        stopped = []
        try:
            for b in followers:
                b.proc.send_signal(signal.SIGSTOP)
                stopped.append(b)
            p = Producer({"bootstrap.servers": leader.bootstrap, "acks": "1", "linger.ms": 0,
                          "batch.num.messages": 3, "max.in.flight": 1})
            errs = []
            for i in range(N):
                p.produce(TOPIC, value=b"%04d" % i + b"x" * 296, partition=0,
                          on_delivery=lambda err, m: errs.append(err))
                p.poll(0)
            eq(p.flush(30), 0, "records left after flush")
            eq([e for e in errs if e], [], "acks=1 errors")
        finally:
            for b in stopped:
                b.proc.send_signal(signal.SIGCONT)
        want = log_bytes(leader)
        log("leader holds %d bytes of %d records; followers resumed" % (len(want), N))
        wait_until(lambda: all(log_bytes(b) == want for b in followers), 30,
                   "the followers' .log bytes equal the leader's")
        c = Consumer({"bootstrap.servers": leader.bootstrap, "group.id": "c102"})
        wait_until(lambda: c.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=5, cached=False)[1] == N, 20,
                   "high watermark %d" % N)
        c.close()
        log("followers caught up through answers cut at 1 KiB; high watermark %d" % N)


if __name__ == "__main__":
    main(test)

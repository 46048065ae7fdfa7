"""Follower fetches and consumer fetches are both served with sendfile: the
leader never copies a record byte.

ZooKeeper and three brokers, each with a metrics listener; a topic of one
partition with replication factor 3:

  1. 2,000 records of 1,000 B with acks=all (so both followers have fetched
     them): on the leader, gregor_network_sendfile_bytes_total grows by at
     least twice the bytes its log grew by (each follower's fetches), and
     gregor_network_copied_bytes_total does not grow
  2. a consumer reads them all from the leader: sendfile bytes grow by at
     least the log's bytes once more, copied bytes still do not
"""

import contextlib
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402
from gregor import check, eq, log, main, wait_until  # noqa: E402
from promhttp import sample, scrape  # noqa: E402
from zookeeper import running_cluster, wait_listed, with_metrics  # noqa: E402

CHROOT = "/gregor/c5193"
TOPIC = "zc"
N, SIZE = 2000, 1000
SENT = "gregor_network_sendfile_bytes_total"
COPIED = "gregor_network_copied_bytes_total"


@contextlib.contextmanager
def cluster():
    """ZooKeeper and brokers 1..3, each with a metrics listener: yields {id: (broker, metrics port)}."""
    mports = {}
    with running_cluster(chroot=CHROOT, setup=with_metrics(mports)) as (_zk, _zc, brokers):
        yield {i: (b, mports[i]) for i, b in zip((1, 2, 3), brokers)}


def log_bytes(b):
    d = b.partition_dir(TOPIC, 0)
    return sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d) if f.endswith(".log"))


def counters(mport):
    s = scrape(mport)
    return sample(s, SENT) or 0, sample(s, COPIED) or 0


def test():
    with cluster() as nodes:
        brokers = [b for b, _ in nodes.values()]
        wait_listed(brokers)
        admin = AdminClient({"bootstrap.servers": brokers[0].bootstrap})
        admin.create_topics([NewTopic(TOPIC, 1, 3)], operation_timeout=15)[TOPIC].result(timeout=30)
        md = {}
        wait_until(lambda: md.update(t=admin.list_topics(TOPIC, timeout=5).topics[TOPIC]) or
                   (not md["t"].error and md["t"].partitions[0].leader > 0 and len(md["t"].partitions[0].isrs) == 3),
                   20, "a leader and an ISR of 3")
        lid = md["t"].partitions[0].leader
        leader, mport = nodes[lid]
        wait_until(lambda: os.path.isdir(leader.partition_dir(TOPIC, 0)), 20, "the leader's log made")
        sent0, copied0 = counters(mport)
        size0 = log_bytes(leader)

        p = Producer({"bootstrap.servers": leader.bootstrap, "acks": "all", "linger.ms": 5})
        for i in range(N):
            p.produce(TOPIC, value=b"%08d" % i + b"x" * (SIZE - 8), partition=0)
        eq(p.flush(60), 0, "records not delivered")
        grown = log_bytes(leader) - size0
        check(grown >= N * SIZE, "the leader's log grew by %d bytes" % grown)
        sent1, copied1 = counters(mport)
        check(sent1 - sent0 >= 2 * grown, "sendfile bytes to the followers: %d, want >= 2 x %d" % (sent1 - sent0, grown))
        eq(copied1 - copied0, 0, "record bytes copied by the leader while replicating")
        log("followers: %d bytes sent with sendfile for a log grown by %d, 0 copied" % (sent1 - sent0, grown))

        c = Consumer({"bootstrap.servers": leader.bootstrap, "group.id": "zc", "enable.auto.commit": False})
        c.assign([TopicPartition(TOPIC, 0, 0)])
        got, deadline = 0, time.monotonic() + 60
        while got < N and time.monotonic() < deadline:
            got += sum(1 for m in c.consume(500, 0.5) if not m.error())
        c.close()
        eq(got, N, "records consumed")
        sent2, copied2 = counters(mport)
        check(sent2 - sent1 >= grown, "sendfile bytes to the consumer: %d, want >= %d" % (sent2 - sent1, grown))
        eq(copied2 - copied1, 0, "record bytes copied by the leader while serving the consumer")
        log("consumer: %d bytes sent with sendfile, 0 copied" % (sent2 - sent1))


if __name__ == "__main__":
    main(test)

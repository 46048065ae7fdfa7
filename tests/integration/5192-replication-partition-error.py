"""Cluster mode: a follower's error on one partition does not hold up the others of that leader.

ZooKeeper and two brokers in the chroot /gregor/c192, replica.fetch.backoff.ms=10000:

  1. topic "a" (1 partition, replicas [1, 2]) is made; broker 2 is SIGKILLed and
     100 acks=1 records are appended by leader 1; one byte of the last batch in
     leader 1's .log is flipped, so its CRC no longer matches
  2. broker 2 starts again: every Fetch answer carries that batch for "a", which it
     refuses ("append to 'a-0'": the CRC check of part_append_replica)
  3. topic "b" (1 partition, replicas [1, 2], ISR both): after a first record, 20
     idempotent acks=all records sent one at a time (each acknowledged before the
     next is sent) are each acknowledged within message.timeout.ms=5000 at offsets
     1..20; with the old fetcher, the error on "a" either dropped "b"'s data from
     every answer or paused the whole fetcher for replica.fetch.backoff.ms after
     each answer, so they timed out
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from gregor import eq, log, main, wait_until  # noqa: E402
from zookeeper import ZooKeeper, cluster_broker, wait_listed  # noqa: E402

CHROOT = "/gregor/c192"
SETTINGS = {"zookeeper_session_timeout_ms": 6000, "replica_fetch_backoff_ms": 10000}


def leader_of(admin, topic):
    try:
        parts = admin.list_topics(topic, timeout=5).topics[topic].partitions
    except Exception:
        return -1
    return parts[0].leader if 0 in parts else -1


def log_len(b, topic):
    d = b.partition_dir(topic, 0)
    return sum(os.path.getsize(os.path.join(d, n)) for n in os.listdir(d) if n.endswith(".log"))


def send(bootstrap, topic, n, acks, timeout_ms):
    """Sends n records one at a time; returns [(error, offset)]."""
    p = Producer({"bootstrap.servers": bootstrap, "acks": acks, "enable.idempotence": acks == "all",
                  "linger.ms": 0, "message.timeout.ms": timeout_ms})
    out = []
    for i in range(n):
        p.produce(topic, value=b"%d" % i, partition=0,
                  on_delivery=lambda err, m: out.append((err and str(err), m.offset())))
        p.flush(timeout_ms / 1000.0 + 5)
    return out


def test():
    with ZooKeeper() as zk:
        brokers = []
        try:
            b1 = cluster_broker(zk.connect, 1, CHROOT, **SETTINGS)
            b2 = cluster_broker(zk.connect, 2, CHROOT, **SETTINGS)
            brokers = [b1, b2]
            zc = zk.client()
            wait_listed(brokers, controller=True)
            admin = AdminClient({"bootstrap.servers": b1.bootstrap})
            admin.create_topics([NewTopic("a", num_partitions=1, replica_assignment=[[1, 2]])])["a"].result(timeout=30)
            wait_until(lambda: leader_of(admin, "a") == 1, 20, "broker 1 leads a")
            b2.kill9()
            wait_until(lambda: zc.get_children(CHROOT + "/brokers/ids") == ["1"], 30, "broker 2's session expired")
            eq(send(b1.bootstrap, "a", 100, "1", 15000), [(None, i) for i in range(100)], "acks=1 records to a")
            d = b1.partition_dir("a", 0)
            seg = os.path.join(d, sorted(n for n in os.listdir(d) if n.endswith(".log"))[-1])
            with open(seg, "r+b") as f:
                f.seek(os.path.getsize(seg) - 2)
                byte = f.read(1)
                f.seek(-1, os.SEEK_CUR)
                f.write(bytes([byte[0] ^ 0xFF]))
            b2.start()
            wait_listed(brokers, controller=True)
            b2.wait_log("append to 'a-0'", 20)
            log("follower 2 refuses a's corrupt batch: %s" % b2.wait_log("append to 'a-0'", 1).split("WARN ")[-1])

            admin.create_topics([NewTopic("b", num_partitions=1, replica_assignment=[[1, 2]])])["b"].result(timeout=30)
            wait_until(lambda: leader_of(admin, "b") == 1, 20, "broker 1 leads b")
            b2.wait_log("replica: 'b-0' is follower", 20)
            # the follower's first Fetch of b may come before broker 1 leads it (NOT_LEADER_OR_FOLLOWER,
            # b then waits replica.fetch.backoff.ms): one record first, with time for that
            eq(send(b1.bootstrap, "b", 1, "all", 30000), [(None, 0)], "the first acks=all record to b")
            got = send(b1.bootstrap, "b", 20, "all", 5000)
            eq(got, [(None, i) for i in range(1, 21)], "acks=all records to b, one at a time")
            log("20 acks=all records to b acknowledged while a is out of range on the follower")
            for b in brokers:
                eq(b.stop(), 0, "exit status of %s" % b.bootstrap)
        except BaseException:
            for b in brokers:
                b.dump_log()
            raise
        finally:
            for b in brokers:
                b.cleanup(keep=False)


if __name__ == "__main__":
    main(test)

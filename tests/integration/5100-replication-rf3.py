"""Cluster mode: replication factor 3, the data path.

ZooKeeper and three brokers in the chroot /gregor/c100 (docs/cluster.md, "Replication"):

  1. confluent-kafka's AdminClient creates a topic of 6 partitions with replication
     factor 3 and min.insync.replicas=2; every broker logs its role for each
     partition (one leader, two followers each)
  2. an idempotent confluent-kafka producer (acks=all) sends 20,000 numbered records
     over the 6 partitions through broker 1: every one is acknowledged without error
  3. once the high watermarks converged, each partition's .log files hold the same
     bytes on all three brokers (the followers appended the leader's batches byte for
     byte: offsets, producer ids, sequences, leader epochs) and each follower wrote
     replication-offset-checkpoint with the leader's high watermark
  4. kcat reads every record back, each exactly once, in order per partition
"""

import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from gregor import check, eq, log, main, wait_until  # noqa: E402
from zookeeper import running_cluster, wait_listed  # noqa: E402

CHROOT = "/gregor/c100"
TOPIC = "rep3"
NPARTS = 6
N = 20000
SESSION = {"zookeeper_session_timeout_ms": 6000, "replica_high_watermark_checkpoint_interval_ms": 500}


def create_topic(b):
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    fs = admin.create_topics([NewTopic(TOPIC, NPARTS, 3, config={"min.insync.replicas": "2"})],
                             operation_timeout=15)
    fs[TOPIC].result(timeout=30)


def roles_logged(brokers):
    """{partition: sorted roles} from the brokers' logs."""
    roles = {}
    for b in brokers:
        text = b.log_text()
        for p in range(NPARTS):
            for role in ("leader", "follower"):
                if "replica: '%s-%d' is %s" % (TOPIC, p, role) in text:
                    roles.setdefault(p, []).append(role)
    return {p: sorted(r) for p, r in roles.items()}


def produce(b):
    p = Producer({"bootstrap.servers": b.bootstrap, "enable.idempotence": True, "acks": "all",
                  "linger.ms": 5, "message.timeout.ms": 60000})
    errors, acked = [], [0]

    def done(err, msg):
        if err:
            errors.append(err)
        else:
            acked[0] += 1
    for i in range(N):
        while True:
            try:
                p.produce(TOPIC, value=b"%d" % i, partition=i % NPARTS, on_delivery=done)
                break
            except BufferError:
                p.poll(0.05)
        p.poll(0)
    left = p.flush(90)
    eq(left, 0, "records not delivered after flush")
    eq(errors[:5], [], "delivery errors")
    eq(acked[0], N, "records acknowledged")


def log_bytes(b, p):
    d = b.partition_dir(TOPIC, p)
    out = b""
    for name in sorted(os.listdir(d)):
        if name.endswith(".log"):
            with open(os.path.join(d, name), "rb") as f:
                out += f.read()
    return out


def hw_checkpoint(b):
    try:
        with open(os.path.join(b.data_dir, "replication-offset-checkpoint")) as f:
            lines = f.read().split("\n")
    except FileNotFoundError:
        return {}
    eq(lines[0], "0", "replication-offset-checkpoint version")
    out = {}
    for line in lines[2:2 + int(lines[1])]:
        t, p, off = line.split(" ")
        if t == TOPIC:
            out[int(p)] = int(off)
    return out


def kcat_read(b):
    out = subprocess.run(["kcat", "-b", b.bootstrap, "-C", "-t", TOPIC, "-o", "beginning", "-e", "-q",
                          "-f", "%p %s\n"], capture_output=True, timeout=120)
    eq(out.returncode, 0, "kcat: %s" % out.stderr.decode(errors="replace")[-500:])
    got = {}
    for line in out.stdout.decode().split("\n"):
        if line:
            p, v = line.split(" ")
            got.setdefault(int(p), []).append(int(v))
    return got


def test():
    with running_cluster((1, 2, 3), CHROOT, **SESSION) as (zk, zc, brokers):
        wait_listed(brokers)
        create_topic(brokers[0])
        want_roles = {p: ["follower", "follower", "leader"] for p in range(NPARTS)}
        wait_until(lambda: roles_logged(brokers) == want_roles, 20, "a leader and two followers per partition")
        log("topic %s: %d partitions, each with a leader and two followers" % (TOPIC, NPARTS))

        t0 = time.monotonic()
        produce(brokers[0])
        log("%d records acknowledged (acks=all, idempotent) in %.1f s" % (N, time.monotonic() - t0))

        def same_bytes():
            return all(log_bytes(brokers[0], p) == log_bytes(b, p) for b in brokers[1:] for p in range(NPARTS))
        wait_until(same_bytes, 30, "every partition's .log bytes equal on the three brokers")
        sizes = [len(log_bytes(brokers[0], p)) for p in range(NPARTS)]
        check(all(s > 0 for s in sizes), "every partition holds data: %s" % sizes)
        log("the .log files of all %d partitions are byte for byte the same on 3 brokers (%d bytes)" %
            (NPARTS, sum(sizes)))

        want_hw = {p: N // NPARTS + (1 if p < N % NPARTS else 0) for p in range(NPARTS)}
        wait_until(lambda: all(hw_checkpoint(b) == want_hw for b in brokers), 20,
                   "replication-offset-checkpoint of every broker at %s" % want_hw)
        log("replication-offset-checkpoint on every broker: %s" % want_hw)

        got = kcat_read(brokers[1])
        for p in range(NPARTS):
            eq(got.get(p), list(range(p, N, NPARTS)), "records of partition %d read by kcat" % p)
        log("kcat read all %d records, each once, in order" % N)


if __name__ == "__main__":
    main(test)

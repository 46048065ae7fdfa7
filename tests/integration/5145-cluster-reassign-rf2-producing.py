"""Cluster mode: partitions of replication factor 2 moved to other replica sets while an
idempotent acks=all producer keeps writing: nothing acknowledged is lost.

ZooKeeper and three brokers in the chroot /gregor/c145 (docs/cluster.md, "Partition reassignment"):

  1. topic 'rf2' of 3 partitions, replicas [1,2], [2,3], [3,1], min.insync.replicas=2
  2. a confluent-kafka producer (acks=all, idempotent) writes numbered records in a thread
  3. meanwhile gregor-reassign-partitions --execute moves them to [2,3], [3,1], [1,2]
     (each loses its leader and gains another replica): every move completes and each
     partition is led by a broker of its new set (leader epoch + 1)
  4. the producer stops: every record it was told is acknowledged is read back, each once
     per partition in order, from the new leaders
"""

import json
import os
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from gregor import build_bin, check, eq, log, main, run, wait_until  # noqa: E402
from reassign import wait_reassigned  # noqa: E402
from replicas import state  # noqa: E402
from zookeeper import running_cluster, wait_listed  # noqa: E402

CHROOT = "/gregor/c145"
BEFORE = [[1, 2], [2, 3], [3, 1]]
AFTER = [[2, 3], [3, 1], [1, 2]]


def producing(b, stop, acked, errors):
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all", "enable.idempotence": True, "linger.ms": 5,
                  "message.timeout.ms": 120000})

    def done(err, msg):
        if err:
            errors.append(err)
        else:
            acked.setdefault(msg.partition(), []).append(msg.value())
    i = 0
    while not stop.is_set():
        p.produce("rf2", value=b"m%07d" % i, partition=i % 3, on_delivery=done)
        i += 1
        p.poll(0.001 if i % 50 else 0.05)
    p.flush(120)


def read_back(b, p, n):
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "r%d" % p, "enable.auto.commit": False})
    c.assign([TopicPartition("rf2", p, 0)])
    got = []
    wait_until(lambda: got.extend(m.value() for m in c.consume(1000, 1.0) if not m.error()) or len(got) >= n, 60,
               "rf2-%d read back" % p)
    c.close()
    return got


def test():
    with running_cluster(chroot=CHROOT, zookeeper_session_timeout_ms=6000) as (zk, zc, brokers):
        by_id = {1: brokers[0], 2: brokers[1], 3: brokers[2]}
        wait_listed(brokers)
        admin = AdminClient({"bootstrap.servers": brokers[0].bootstrap})
        admin.create_topics([NewTopic("rf2", num_partitions=3, replica_assignment=BEFORE,
                                      config={"min.insync.replicas": "2"})], operation_timeout=15)["rf2"].result(30)
        wait_until(lambda: all(state(zc, CHROOT, "rf2", p)[0] for p in range(3)), 20, "rf2 has leaders")

        stop, acked, errors = threading.Event(), {}, []
        t = threading.Thread(target=producing, args=(brokers[0], stop, acked, errors))
        t.start()
        try:
            wait_until(lambda: sum(len(v) for v in acked.values()) >= 3000, 60, "records acknowledged before")
            plan = os.path.join(tempfile.mkdtemp(), "plan.json")
            with open(plan, "w") as f:
                json.dump({"version": 1, "partitions": [{"topic": "rf2", "partition": p, "replicas": AFTER[p]}
                                                        for p in range(3)]}, f)
            out = run([build_bin("gregor-reassign-partitions"), "--bootstrap-server", brokers[1].bootstrap,
                       "--reassignment-json-file", plan, "--execute"])
            check(b"Successfully started partition reassignments for rf2-0,rf2-1,rf2-2" in out.stdout,
                  "--execute: " + out.stdout.decode())
            for p in range(3):
                st = wait_reassigned(zc, CHROOT, by_id, "rf2", p, AFTER[p], timeout_s=90)
                log("rf2-%d: %s" % (p, st))
            n = sum(len(v) for v in acked.values())
            wait_until(lambda: sum(len(v) for v in acked.values()) >= n + 3000, 60, "records acknowledged after")
        finally:
            stop.set()
            t.join(180)
        log("%d acknowledged, %d delivery errors %s" % (sum(len(v) for v in acked.values()), len(errors),
                                                        errors[:3]))
        for p in range(3):
            leader = state(zc, CHROOT, "rf2", p)[0]["leader"]
            check(leader in AFTER[p], "rf2-%d led by one of its new replicas" % p)
            got = read_back(by_id[leader], p, len(acked.get(p, [])))
            want = set(acked.get(p, []))
            missing = want - set(got)
            eq(sorted(missing)[:5], [], "acknowledged records of rf2-%d missing" % p)
            eq(len(got), len(set(got)), "rf2-%d holds each record once" % p)
            eq(got, sorted(got), "rf2-%d in order" % p)


if __name__ == "__main__":
    main(test)

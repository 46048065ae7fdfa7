#!/usr/bin/python3
"""7061: replication and controller metrics of a 3-broker cluster, before and after kill -9.

ZooKeeper and brokers 1, 2, 3 (chroot /gregor/m7061), each with its own metrics.listener:

  1. A topic of 6 partitions, replication factor 3, min.insync.replicas=2,
     and a topic of 1 partition, replication factor 1, on broker B (one of
     the two brokers that are not the controller): once every ISR is full,
     kafka_server_replicamanager_underreplicatedpartitions is 0 everywhere,
     the leader counts sum to the 7 partitions, the partition counts to 19,
     kafka_controller_kafkacontroller_activecontrollercount sums to 1 (the
     broker named in /controller) and the controller's offline partitions
     are 0; records produced with acks=all make the followers' fetches
     show up as FetchFollower; promtool accepts every exposition.
  1b. A SIGSTOPped past replica.lag.time.max.ms (2 s; well within its
     10 s ZooKeeper session, so the leaders shrink, not the controller): the leaders on the
     other two brokers shrink its partitions' ISRs
     (kafka_server_replicamanager_isrshrinks_total > 0) and, once it goes
     on, expand them again (isrexpands_total > 0, none under-replicated).
  2. The other non-controller broker A gets kill -9: once its session is
     gone the survivors lead all 6 replicated partitions with an ISR of 2
     (under-replicated 6 in all, 6 at min ISR, none under it) and the
     controller reports 0 offline partitions.
  3. B gets kill -9 too: the controller (the last broker) leads the 6 with
     an ISR of 1 (6 under min ISR) and reports 1 offline partition, the
     RF 1 topic's.
On code without these gauges every step finds them missing.
"""
import contextlib
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402
import gregor  # noqa: E402
from gregor import eq, log, main, wait_until  # noqa: E402
from promhttp import promtool_check, sample, scrape  # noqa: E402
from zookeeper import running_cluster, wait_listed, with_metrics  # noqa: E402

CHROOT = "/gregor/m7061"
TOPIC, SOLO = "m7061", "m7061-solo"
NPARTS = 6
URP = "kafka_server_replicamanager_underreplicatedpartitions"
OFFLINE = "kafka_controller_kafkacontroller_offlinepartitionscount"
ACTIVE = "kafka_controller_kafkacontroller_activecontrollercount"
LEADERS = "kafka_server_replicamanager_leadercount"
PARTS = "kafka_server_replicamanager_partitioncount"
AT_MIN = "kafka_server_replicamanager_atminisrpartitioncount"
UNDER_MIN = "kafka_server_replicamanager_underminisrpartitioncount"
SHRINKS = "kafka_server_replicamanager_isrshrinks_total"
EXPANDS = "kafka_server_replicamanager_isrexpands_total"


@contextlib.contextmanager
def cluster():
    """ZooKeeper and brokers 1..3, each with a metrics listener: yields (zc, {id: (broker, metrics port)})."""
    mports = {}
    with running_cluster(chroot=CHROOT, setup=with_metrics(mports), zookeeper_session_timeout_ms=10000,
                         replica_lag_time_max_ms=2000) as (_zk, zc, brokers):
        yield zc, {i: (b, mports[i]) for i, b in zip((1, 2, 3), brokers)}


def total(nodes, name, ids):
    return sum(sample(scrape(nodes[i][1]), name) or 0 for i in ids)


def create_topics(b, solo_on):
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    fs = admin.create_topics([NewTopic(TOPIC, NPARTS, 3, config={"min.insync.replicas": "2"}),
                              NewTopic(SOLO, num_partitions=1, replica_assignment=[[solo_on]])], operation_timeout=15)
    for f in fs.values():
        f.result(timeout=30)


def produce(b):
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all", "linger.ms": 5})
    for i in range(600):
        p.produce(TOPIC, value=b"%d" % i, partition=i % NPARTS)
    eq(p.flush(60), 0, "records not delivered")


def follower_fetches(nodes, ids):
    return sum(v for i in ids for (n, l), v in scrape(nodes[i][1]).items()
               if n == "kafka_network_requestmetrics_requests_total" and ("request", "FetchFollower") in l)


def test():
    with cluster() as (zc, nodes):
        ids = [1, 2, 3]
        ctl = json.loads(zc.get(CHROOT + "/controller")[0])["brokerid"]
        a, b = [i for i in ids if i != ctl]
        wait_listed([n[0] for n in nodes.values()])
        create_topics(nodes[1][0], b)
        wait_until(lambda: total(nodes, LEADERS, ids) == NPARTS + 1 and total(nodes, PARTS, ids) == 3 * NPARTS + 1
                   and total(nodes, URP, ids) == 0, 30, "7 partitions led, 19 replicas, none under-replicated")
        eq(total(nodes, ACTIVE, ids), 1, "active controllers")
        eq(sample(scrape(nodes[ctl][1]), ACTIVE), 1.0, "the active controller is /controller's broker %d" % ctl)
        eq(sample(scrape(nodes[ctl][1]), OFFLINE), 0.0, "offline partitions on the controller")
        eq(total(nodes, AT_MIN, ids) + total(nodes, UNDER_MIN, ids), 0, "partitions at or under min ISR")
        produce(nodes[ctl][0])
        wait_until(lambda: follower_fetches(nodes, ids) > 0, 15, "followers' fetches counted as FetchFollower")
        for i in ids:
            promtool_check(nodes[i][1])
        log("controller %d; leaders sum to 7, replicas to 19, none under-replicated; FetchFollower %d" %
            (ctl, follower_fetches(nodes, ids)))

        import signal
        nodes[a][0].proc.send_signal(signal.SIGSTOP)
        try:
            wait_until(lambda: total(nodes, SHRINKS, [ctl, b]) > 0, 30, "ISR shrinks counted by the leaders")
        finally:
            nodes[a][0].proc.send_signal(signal.SIGCONT)
        wait_until(lambda: total(nodes, EXPANDS, [ctl, b]) > 0 and total(nodes, URP, ids) == 0, 30,
                   "ISR expansions counted, nothing under-replicated")
        log("broker %d stopped and resumed: %d shrinks, %d expands" % (a, total(nodes, SHRINKS, [ctl, b]),
                                                                     total(nodes, EXPANDS, [ctl, b])))

        nodes[a][0].kill9()
        alive = [ctl, b]
        wait_until(lambda: total(nodes, URP, alive) == NPARTS and total(nodes, LEADERS, alive) == NPARTS + 1, 30,
                   "the survivors lead all 7 partitions, the 6 replicated ones under-replicated")
        eq(total(nodes, AT_MIN, alive), NPARTS, "replicated partitions at min ISR")
        eq(total(nodes, UNDER_MIN, alive), 0, "partitions under min ISR")
        eq(sample(scrape(nodes[ctl][1]), OFFLINE), 0.0, "offline partitions with replication factor 3")
        log("broker %d killed: 6 under-replicated on the survivors, 0 offline" % a)

        nodes[b][0].kill9()
        wait_until(lambda: sample(scrape(nodes[ctl][1]), OFFLINE) == 1.0, 30,
                   "the RF 1 topic's partition offline on the controller")
        wait_until(lambda: sample(scrape(nodes[ctl][1]), UNDER_MIN) == NPARTS, 30,
                   "the replicated partitions under min ISR on the last broker")
        eq(sample(scrape(nodes[ctl][1]), ACTIVE), 1.0, "the last broker still the controller")
        promtool_check(nodes[ctl][1])
        log("broker %d killed: 1 offline partition (replication factor 1), 6 under min ISR" % b)


if __name__ == "__main__":
    main(test)

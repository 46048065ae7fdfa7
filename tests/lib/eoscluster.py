"""Exactly-once clients against a three-broker cluster with kill -9: what the
5240-5249 tests share.

    from eoscluster import coordinator, leaders, kill9, restart, numbered, read_values

coordinator() and leaders() ask any live broker (FindCoordinator v1 and
Metadata v1 on the raw protocol), so a test can aim its kill at the broker
that matters: the group's or the transactional id's coordinator, or a
partition's leader.  kill9() sends SIGKILL to a broker the test started;
restart() starts it again on the same port and data dir once ZooKeeper has
dropped its old registration (a broker id still registered would be
refused).  Every wait is bounded.
"""

import signal
import time

from confluent_kafka import Consumer, Producer, TopicPartition

import kwire
from gregor import eq, wait_until

SETTINGS = {"zookeeper_session_timeout_ms": 3000, "zookeeper_connection_timeout_ms": 1000,
            "transaction_state_log_num_partitions": 5, "offsets_topic_num_partitions": 5,
            "group_initial_rebalance_delay_ms": 0, "min_insync_replicas": 2,
            "default_replication_factor": 3, "offsets_topic_replication_factor": 3,
            "transaction_state_log_replication_factor": 3, "transaction_state_log_min_isr": 2}


def find_coordinator(port, key, key_type):
    """FindCoordinator v1 at port -> (error, node id); (-1, -1) if the broker does not answer."""
    try:
        return kwire.find_coordinator(port, key, key_type)[:2]
    except OSError:
        return -1, -1


def coordinator(brokers, key, key_type, timeout_s=30):
    """The node id live brokers name as key's coordinator (key_type 0 group, 1 transactional id)."""
    found = {}

    def named():
        for b in brokers:
            if b.alive():
                err, node = find_coordinator(b.port, key, key_type)
                if err == 0 and brokers[node - 1].alive():
                    found["node"] = node
                    return True
        return False
    wait_until(named, timeout_s, "a live coordinator for '%s'" % key)
    return found["node"]


def leaders(brokers, topic):
    """{partition: leader node id} from the first live broker that answers; {} if none does."""
    for b in brokers:
        if not b.alive():
            continue
        try:
            r = kwire.call(b.port, 3, 1, kwire.metadata_v1_body([topic]))
        except OSError:
            continue
        err, parts = kwire.parse_metadata_v1(r.d[r.p:])["topics"].get(topic, (-1, []))
        if err == 0:
            return {idx: leader for _e, idx, leader in parts}
    return {}


def isr_full(brokers, topics, timeout_s=60):
    """Waits (bounded) until every partition of topics has a leader and all live brokers in its ISR,
    so that the next kill leaves min.insync.replicas in sync."""
    from confluent_kafka.admin import AdminClient
    live = [b for b in brokers if b.alive()]
    admin = AdminClient({"bootstrap.servers": ",".join(b.bootstrap for b in live)})

    def full():
        for t in topics:
            try:
                md = admin.list_topics(topic=t, timeout=5).topics[t]
            except Exception:
                return False
            if md.error is not None or not md.partitions or \
               any(m.leader < 0 or len(m.isrs) < len(live) for m in md.partitions.values()):
                return False
        return True
    wait_until(full, timeout_s, "every partition of %s in sync on %d brokers" % (topics, len(live)), 0.5)


def kill9(broker):
    """SIGKILL a broker this test started, and reap it."""
    broker.proc.send_signal(signal.SIGKILL)
    broker.proc.wait(timeout=10)
    broker.proc = None


def restart(zc, chroot, broker, broker_id, timeout_s=30):
    """Starts a killed broker again once its ZooKeeper registration has expired."""
    path = "%s/brokers/ids/%d" % (chroot, broker_id)
    wait_until(lambda: not zc.exists(path), timeout_s, "broker %d's old registration to expire" % broker_id)
    broker.start()
    wait_until(lambda: zc.exists(path), timeout_s, "broker %d registered again" % broker_id)


def numbered(bootstrap, topic, nparts, n, first=0, pause_s=0):
    """Produces values 'v-first'..'v-(first+n-1)' (acks=all, idempotent) round-robin over nparts
    partitions; a broker may be down meanwhile (the producer retries for up to 120 s).  With pause_s,
    a trickle: every 100 records are flushed and followed by a pause."""
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True, "linger.ms": 20,
                  "message.timeout.ms": 120000, "topic.metadata.refresh.interval.ms": 1000})
    for i in range(first, first + n):
        p.produce(topic, value=b"v-%d" % i, partition=i % nparts)
        if pause_s and i % 100 == 99:
            p.flush(130)
            time.sleep(pause_s)
        elif i % 1000 == 0:
            p.poll(0)
    eq(p.flush(130), 0, "records left unsent")


def read_values(bootstrap, topic, nparts, expect, timeout_s=60):
    """Every value a read_committed reader finds in topic (up to expect of them, then one more
    short poll so a duplicate past expect is caught)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "reader-%s-%f" % (topic, time.time()),
                  "isolation.level": "read_committed", "enable.auto.commit": False,
                  "auto.offset.reset": "earliest", "topic.metadata.refresh.interval.ms": 1000})
    c.assign([TopicPartition(topic, p, 0) for p in range(nparts)])
    got = []
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline and len(got) < expect:
            got += [m.value().decode() for m in c.consume(num_messages=500, timeout=0.5) if not m.error()]
        got += [m.value().decode() for m in c.consume(num_messages=500, timeout=2) if not m.error()]
    finally:
        c.close()
    return got


def end_offsets(bootstrap, topic, nparts):
    """{partition: high watermark}."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "wm-%s" % topic})
    try:
        return {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in range(nparts)}
    finally:
        c.close()


def committed(bootstrap, group, topic, nparts):
    """{partition: the group's committed offset} (-1001 where none)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        return {tp.partition: tp.offset
                for tp in c.committed([TopicPartition(topic, p) for p in range(nparts)], timeout=30)}
    finally:
        c.close()

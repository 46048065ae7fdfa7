"""Cluster mode: a consumer group survives the loss of its coordinator's
broker, with its committed offsets, as in Kafka.

ZooKeeper and three brokers in the chroot /gregor/c201, 3 s ZooKeeper
sessions; __consumer_offsets of 6 partitions, replication factor 3.

  1. a topic of 12 partitions (replication factor 3) holds 150 records per
     partition (acks=all)
  2. three confluent_kafka consumers of one group, bootstrapped on all three
     brokers, consume it; each commits synchronously after every batch
  3. a third of the way through, the broker that coordinates the group is
     killed with -9: FindCoordinator on the others names another broker
     (the new leader of the group's __consumer_offsets partition), the
     consumers find it and go on to the end
  4. no record whose commit was acknowledged is consumed again (only the
     batches whose commit failed around the kill may come twice), and
     every record is consumed
  5. OffsetFetch at the new coordinator answers, for every partition, the
     last offset a consumer was told was committed (150)
"""

import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

import kwire  # noqa: E402
from gregor import check, eq, log, main, wait_until  # noqa: E402
from zookeeper import running_cluster  # noqa: E402

CHROOT = "/gregor/c201"
TOPIC = "failover12"
GROUP = "g5201"
PER_PART = 150
NPARTS = 12
SETTINGS = {"zookeeper_session_timeout_ms": 3000, "zookeeper_connection_timeout_ms": 1000,
            "offsets_topic_num_partitions": 6}


def offset_fetch(port, group, topic, nparts):
    """OffsetFetch v1 -> {partition: (offset, error)}."""
    body = kwire.string(group) + kwire.array([topic], lambda t: kwire.string(t) +
                                             kwire.array(list(range(nparts)), kwire.i32))
    r = kwire.call(port, 9, 1, body)
    topics = r.array(lambda r: (r.string(), r.array(lambda r: (r.i32(), r.i64(), r.string(), r.i16()))))
    return {p: (off, err) for _, parts in topics for p, off, _m, err in parts}


def produce(bootstrap):
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    for part in range(NPARTS):
        for i in range(PER_PART):
            p.produce(TOPIC, value=b"%d-%d" % (part, i), partition=part)
        p.poll(0)
    eq(p.flush(30), 0, "records left unsent")


def consumer(bootstrap, n):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "client.id": "c5201-%d" % n,
                  "enable.auto.commit": False, "auto.offset.reset": "earliest", "session.timeout.ms": 6000,
                  "heartbeat.interval.ms": 500, "partition.assignment.strategy": "range",
                  "topic.metadata.refresh.interval.ms": 1000})
    c.subscribe([TOPIC])
    return c


class Ledger:
    """What the consumers were given and what they were told was committed."""

    def __init__(self):
        self.seen = {}          # (partition, offset) -> times consumed
        self.acked = set()      # (partition, offset) covered by an acknowledged commit
        self.committed = {}     # partition -> highest acknowledged commit
        self.failed_commits = 0
        self.redelivered_acked = []

    def batch(self, c, msgs):
        last = {}
        for m in msgs:
            key = (m.partition(), m.offset())
            if key in self.acked:
                self.redelivered_acked.append(key)
            self.seen[key] = self.seen.get(key, 0) + 1
            last[m.partition()] = max(last.get(m.partition(), -1), m.offset())
        if not last:
            return
        try:
            c.commit(offsets=[TopicPartition(TOPIC, p, o + 1) for p, o in last.items()], asynchronous=False)
        except KafkaException:
            self.failed_commits += 1
            return
        for m in msgs:
            self.acked.add((m.partition(), m.offset()))
        for p, o in last.items():
            self.committed[p] = max(self.committed.get(p, 0), o + 1)


def consume_until(consumers, ledger, pred, timeout_s, what):
    deadline = time.monotonic() + timeout_s
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError("timed out: %s (%d records seen)" % (what, len(ledger.seen)))
        for c in consumers:
            msgs = [m for m in c.consume(num_messages=10, timeout=0.1) if not m.error()]
            ledger.batch(c, msgs)


def test():
    with running_cluster((1, 2, 3), CHROOT, **SETTINGS) as (zk, zc, brokers):
        bootstrap = ",".join(b.bootstrap for b in brokers)
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for f in admin.create_topics([NewTopic(TOPIC, NPARTS, 3)]).values():
            f.result(30)
        wait_until(lambda: kwire.find_coordinator(brokers[0].port, GROUP)[0] == 0, 30, "a coordinator for the group")
        coord = kwire.find_coordinator(brokers[0].port, GROUP)[1]
        produce(bootstrap)
        log("%d records in %d partitions; group coordinator: broker %d" % (NPARTS * PER_PART, NPARTS, coord))

        ledger = Ledger()
        consumers = [consumer(bootstrap, n) for n in range(3)]
        try:
            consume_until(consumers, ledger, lambda: len(ledger.committed) == NPARTS and
                          sum(ledger.committed.values()) >= NPARTS * PER_PART // 3, 60, "a third committed")
            victim = brokers[coord - 1]
            victim.proc.send_signal(signal.SIGKILL)
            victim.proc.wait(timeout=10)
            victim.proc = None
            others = [b for b in brokers if b is not victim]
            log("broker %d (the coordinator) killed with -9 after %d commits" % (coord, len(ledger.acked)))
            consume_until(consumers, ledger, lambda: sum(ledger.committed.values()) == NPARTS * PER_PART, 90,
                          "every record committed after the kill")
        finally:
            for c in consumers:
                c.close()
        for b in others:
            wait_until(lambda: kwire.find_coordinator(b.port, GROUP)[0] == 0 and
                       kwire.find_coordinator(b.port, GROUP)[1] != coord, 15, "a new coordinator named by " + b.bootstrap)
        new = kwire.find_coordinator(others[0].port, GROUP)[1]
        eq(kwire.find_coordinator(others[1].port, GROUP)[1], new, "both brokers name the same coordinator")
        eq(ledger.redelivered_acked, [], "records consumed again after their commit was acknowledged")
        eq(sorted(ledger.seen), [(p, o) for p in range(NPARTS) for o in range(PER_PART)], "records consumed")
        twice = sum(1 for v in ledger.seen.values() if v > 1)
        log("moved to broker %d; %d commits failed around the kill, %d records consumed twice (from those)" %
            (new, ledger.failed_commits, twice))
        check(twice == 0 or ledger.failed_commits > 0, "records consumed twice only after a failed commit")
        port = brokers[new - 1].port
        eq(offset_fetch(port, GROUP, TOPIC, NPARTS), {p: (PER_PART, 0) for p in range(NPARTS)},
           "OffsetFetch at the new coordinator")
        eq(ledger.committed, {p: PER_PART for p in range(NPARTS)}, "commits the consumers were told of")
        log("committed offsets survived the coordinator's loss")


if __name__ == "__main__":
    main(test)

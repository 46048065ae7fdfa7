"""Cluster mode: OffsetForLeaderEpoch after a leader change, and a librdkafka
consumer reading through it.

ZooKeeper and three brokers in the chroot /gregor/c5171, 3 s sessions; a
topic of 6 partitions, replication factor 1.

  1. 10 records per partition (confluent_kafka, acks=all); every partition's
     leader answers epoch 0 ending at 10, the other two brokers
     NOT_LEADER_OR_FOLLOWER; a confluent_kafka consumer (librdkafka) with
     every partition assigned reads the 60 records
  2. the leader of partition 0 is killed (-9) and restarted: it leads its
     partitions again at leader epoch 2 (Metadata).  Its answers: epoch 2
     (asked with CurrentLeaderEpoch 2) ends at the log end offset 10, epoch
     1 (never led here) falls back to epoch 0 ending at 10 where epoch 2
     starts; CurrentLeaderEpoch 0 is FENCED_LEADER_EPOCH, 3
     UNKNOWN_LEADER_EPOCH; its leader-epoch-checkpoint holds "2 10"
  3. 10 more records per partition: the consumer, kept open across the
     change, reads exactly the 60 new records in order with no error;
     epoch 2 of the restarted broker's partitions now ends at 20 and epoch 0
     still at 10, and the records fetched raw carry partitionLeaderEpoch 2
     from offset 10 on (0 before)
"""

import json
import os
import signal
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402

import kwire  # noqa: E402
from epochwire import end_offset  # noqa: E402
from gregor import check, eq, log, main, wait_until  # noqa: E402
from zookeeper import running_cluster  # noqa: E402

CHROOT = "/gregor/c5171"
TOPIC = "epochs6"
NPARTS = 6
PER_PART = 10
SESSION = {"zookeeper_session_timeout_ms": 3000, "zookeeper_connection_timeout_ms": 1000}
NOT_LEADER, FENCED, UNKNOWN_EPOCH = 6, 74, 75


def metadata(b):
    """{partition: (error, leader, leader_epoch)} from b's Metadata v7."""
    r = kwire.call(b.port, 3, 7, kwire.array([TOPIC], kwire.string) + kwire.i8(0))
    r.i32()
    r.array(lambda r: (r.i32(), r.string(), r.i32(), r.string()))
    r.string()
    r.i32()

    def part(r):
        err, idx, leader, epoch = r.i16(), r.i32(), r.i32(), r.i32()
        r.array(lambda r: r.i32()), r.array(lambda r: r.i32()), r.array(lambda r: r.i32())
        return idx, (err, leader, epoch)
    topics = r.array(lambda r: (r.i16(), r.string(), r.i8(), dict(r.array(part))))
    return topics[0][3]


def produce(b, round_):
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all", "linger.ms": 5})
    errors = []
    for part in range(NPARTS):
        for i in range(PER_PART):
            p.produce(TOPIC, value=b"%d-%d-%d" % (round_, part, i), partition=part,
                      on_delivery=lambda err, msg: err and errors.append(err))
    eq(p.flush(30), 0, "records left unsent")
    eq(errors, [], "delivery errors")


def consume(c, round_, timeout_s=40):
    """The next PER_PART records of every partition: in order, no error, nothing else."""
    got, errors = {}, []
    deadline = time.monotonic() + timeout_s
    while sum(len(v) for v in got.values()) < NPARTS * PER_PART and time.monotonic() < deadline:
        m = c.poll(0.2)
        if m is None:
            continue
        if m.error():
            errors.append(str(m.error()))
            continue
        got.setdefault(m.partition(), []).append((m.offset(), m.value()))
    eq(errors, [], "consumer errors")
    for part in range(NPARTS):
        eq(got.get(part), [(round_ * PER_PART + i, b"%d-%d-%d" % (round_, part, i)) for i in range(PER_PART)],
           "round %d of partition %d" % (round_, part))


def batch_epochs(b, part):
    """[(base offset, partitionLeaderEpoch)] of the partition's batches, read raw (Fetch v4)."""
    body = (kwire.i32(-1) + kwire.i32(0) + kwire.i32(1) + kwire.i32(1 << 20) + kwire.i8(0) +
            kwire.array([TOPIC], lambda t: kwire.string(t) + kwire.array(
                [part], lambda p: kwire.i32(p) + kwire.i64(0) + kwire.i32(1 << 20))))
    r = kwire.call(b.port, 1, 4, body)
    r.i32()
    out = []
    topics = r.array(lambda r: (r.string(), r.array(lambda r: (r.i32(), r.i16(), r.i64(), r.i64(),
                                                                 r.array(lambda r: (r.i64(), r.i64())),
                                                                 r.take(r.i32())))))
    data = topics[0][1][0][5]
    pos = 0
    while pos + 17 <= len(data):
        base, length, epoch = struct.unpack(">qii", data[pos:pos + 16])
        out.append((base, epoch))
        pos += 12 + length
    return out


def test():
    with running_cluster((1, 2, 3), CHROOT, **SESSION) as (zk, zc, brokers):
        eq(kwire.create_topic(brokers[0].port, TOPIC, NPARTS)[0], 0, "CreateTopics")
        a = {int(p): r[0] for p, r in
             json.loads(zc.get(CHROOT + "/brokers/topics/" + TOPIC)[0])["partitions"].items()}
        for b in brokers:
            wait_until(lambda: metadata(b) == {p: (0, a[p], 0) for p in range(NPARTS)}, 15,
                       "%s's Metadata" % b.bootstrap)
        produce(brokers[0], 0)
        for p in range(NPARTS):
            for i, b in enumerate(brokers, 1):
                want = (0, 0, PER_PART) if a[p] == i else (NOT_LEADER, -1, -1)
                eq(end_offset(b.port, TOPIC, p, 0, current=0), want, "partition %d on broker %d" % (p, i))
        c = Consumer({"bootstrap.servers": brokers[1].bootstrap, "group.id": "epochs-c", "enable.auto.commit": False,
                      "topic.metadata.refresh.interval.ms": 1000})
        c.assign([TopicPartition(TOPIC, p, 0) for p in range(NPARTS)])
        consume(c, 0)
        log("epoch 0 ends at %d on every leader; the consumer read %d records" % (PER_PART, NPARTS * PER_PART))

        vid = a[0]
        victim = brokers[vid - 1]
        mine = [p for p in range(NPARTS) if a[p] == vid]
        victim.proc.send_signal(signal.SIGKILL)
        victim.proc.wait(timeout=10)
        victim.proc = None
        other = [b for b in brokers if b is not victim][0]
        wait_until(lambda: all(metadata(other)[p][1] == -1 for p in mine), 15, "broker %d's partitions offline" % vid)
        victim.start()
        up = {p: ((0, vid, 2) if a[p] == vid else (0, a[p], 0)) for p in range(NPARTS)}
        for b in brokers:
            wait_until(lambda: metadata(b) == up, 20, "broker %d leads again in %s" % (vid, b.bootstrap))
        for p in mine:
            eq(end_offset(victim.port, TOPIC, p, 2, current=2), (0, 2, PER_PART), "epoch 2 of %d" % p)
            eq(end_offset(victim.port, TOPIC, p, 1, current=2), (0, 0, PER_PART), "epoch 1 of %d" % p)
            eq(end_offset(victim.port, TOPIC, p, 0, current=0), (FENCED, -1, -1), "current 0 of %d" % p)
            eq(end_offset(victim.port, TOPIC, p, 2, current=3), (UNKNOWN_EPOCH, -1, -1), "current 3 of %d" % p)
            with open(os.path.join(victim.partition_dir(TOPIC, p), "leader-epoch-checkpoint")) as f:
                eq(f.read(), "0\n2\n0 0\n2 %d\n" % PER_PART, "leader-epoch-checkpoint of %d" % p)
            for b in brokers:
                if b is not victim:
                    eq(end_offset(b.port, TOPIC, p, 2, current=2)[0], NOT_LEADER, "%d elsewhere" % p)
        log("broker %d leads %r again at epoch 2: epoch 2 starts at %d" % (vid, mine, PER_PART))

        produce(brokers[0], 1)
        consume(c, 1)
        c.close()
        for p in mine:
            eq(end_offset(victim.port, TOPIC, p, 2, current=2), (0, 2, 2 * PER_PART), "epoch 2 of %d after" % p)
            eq(end_offset(victim.port, TOPIC, p, 0, current=2), (0, 0, PER_PART), "epoch 0 of %d after" % p)
            epochs = batch_epochs(victim, p)
            check(epochs and all((e == 0) == (base < PER_PART) for base, e in epochs),
                  "batch epochs of %d: %r" % (p, epochs))
            check(any(e == 2 for _, e in epochs), "a batch of epoch 2 in %d: %r" % (p, epochs))
        log("the consumer read the next %d records across the change; epoch 2 now ends at %d"
            % (NPARTS * PER_PART, 2 * PER_PART))


if __name__ == "__main__":
    main(test)

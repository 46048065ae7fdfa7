"""Cluster mode: brokers act on the controller's partition leadership
(LeaderAndIsr, UpdateMetadata) for replication factor 1.

ZooKeeper and three brokers in the chroot /gregor/c40.

  1. a topic of 12 partitions (RF 1, retention.ms set) created with
     confluent_kafka's admin client through broker 3: every broker's
     Metadata lists it with leaders
     on all three brokers, the same leaders as the state znodes, leader
     epoch 0, replicas = ISR = [leader]; each broker made a local log for
     the partitions it leads and for none led only elsewhere above them,
     made with the topic's override from /config/topics
  2. a confluent_kafka producer bootstrapped on broker 1 writes 30 records to
     each of the 12 partitions; a consumer bootstrapped on broker 2 with
     every partition assigned reads each record exactly once, in order
  3. a consumer group (confluent_kafka, bootstrapped on broker 3) subscribed
     to the topic reads all 360 records and commits; a second consumer of the
     same group, bootstrapped on broker 1, resumes from the commits and finds
     nothing more
  4. a Produce (raw, v3) and a Fetch (raw, v4) sent to a broker that does
     not lead the partition: NOT_LEADER_OR_FOLLOWER, and nothing written
  5. a LeaderAndIsr (raw, v5) with controller epoch 0, older than the one
     the broker has seen: STALE_CONTROLLER_EPOCH; UpdateMetadata likewise
  6. ApiVersions lists LeaderAndIsr 5, StopReplica 3 and UpdateMetadata 5-7
     in cluster mode; a single node lists none of them and closes the
     connection on a LeaderAndIsr
  7. CreatePartitions to 15 (confluent_kafka through broker 2): every broker
     lists 15 partitions, the new ones' replicas made their logs and serve
     them; DeleteTopics: the controller's StopReplica deletes every broker's
     logs of the topic, its znodes go and no broker lists it any more
"""

import json
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, ConfigResource, NewPartitions, NewTopic  # noqa: E402

import kwire  # noqa: E402
from gregor import Broker, check, eq, log, main, wait_until  # noqa: E402
from zookeeper import running_cluster  # noqa: E402

CHROOT = "/gregor/c40"
TOPIC = "led12"
PER_PART = 30


def zjson(zc, path):
    return json.loads(zc.get(CHROOT + path)[0])


def metadata(b, topic):
    """{partition: (error, leader, leader_epoch, replicas, isr)} from b's Metadata v7 (confluent_kafka has no epochs)."""
    r = kwire.call(b.port, 3, 7, kwire.array([topic], kwire.string) + kwire.i8(0))
    r.i32()
    r.array(lambda r: (r.i32(), r.string(), r.i32(), r.string()))
    r.string()
    r.i32()

    def part(r):
        err, idx, leader, epoch = r.i16(), r.i32(), r.i32(), r.i32()
        replicas, isr, _off = r.array(lambda r: r.i32()), r.array(lambda r: r.i32()), r.array(lambda r: r.i32())
        return idx, (err, leader, epoch, replicas, isr)
    topics = r.array(lambda r: (r.i16(), r.string(), r.i8(), dict(r.array(part))))
    eq(len(topics), 1, "topics in %s's Metadata" % b.bootstrap)
    return topics[0][3]


def spread(zc, brokers):
    adm = AdminClient({"bootstrap.servers": brokers[2].bootstrap})
    adm.create_topics([NewTopic(TOPIC, num_partitions=12, replication_factor=1, config={"retention.ms": "86400000"})],
                      request_timeout=15)[TOPIC].result(timeout=20)
    a = {int(p): r[0] for p, r in zjson(zc, "/brokers/topics/" + TOPIC)["partitions"].items()}
    eq(sorted(set(a.values())), [1, 2, 3], "assignment over all brokers: %r" % a)
    want = {p: (0, a[p], 0, [a[p]], [a[p]]) for p in range(12)}
    for b in brokers:
        wait_until(lambda: metadata(b, TOPIC) == want, 15, "%s's Metadata of %s" % (b.bootstrap, TOPIC))
    for p in range(12):
        eq(zjson(zc, "/brokers/topics/%s/partitions/%d/state" % (TOPIC, p))["leader"], a[p], "state of %d" % p)
    for i, b in enumerate(brokers, 1):
        led = [p for p in range(12) if a[p] == i]
        wait_until(lambda: all(os.path.isdir(b.partition_dir(TOPIC, p)) for p in led), 10,
                   "broker %d's logs of %r" % (i, led))
        for p in range(max(led) + 1, 12):
            check(not os.path.exists(b.partition_dir(TOPIC, p)), "broker %d made %s-%d" % (i, TOPIC, p))
    for i, b in enumerate(brokers, 1):  # each replica made its partitions with the topic's overrides
        with open(os.path.join(b.partition_dir(TOPIC, 0), "topic.properties")) as f:
            check("retention.ms=86400000" in f.read().split("\n"), "broker %d's %s config" % (i, TOPIC))
    res = ConfigResource(ConfigResource.Type.TOPIC, TOPIC)
    adm1 = AdminClient({"bootstrap.servers": brokers[0].bootstrap})
    got = adm1.describe_configs([res], request_timeout=15)[res].result(timeout=20)
    eq(got["retention.ms"].value, "86400000", "retention.ms described")
    log("%s: leaders %r" % (TOPIC, [a[p] for p in range(12)]))
    return a


def produce_consume(brokers):
    p = Producer({"bootstrap.servers": brokers[0].bootstrap, "linger.ms": 5, "acks": "all"})
    errors = []
    for part in range(12):
        for i in range(PER_PART):
            p.produce(TOPIC, value=b"%d-%d" % (part, i), partition=part,
                      on_delivery=lambda err, msg: err and errors.append(err))
    eq(p.flush(30), 0, "records left unsent")
    eq(errors, [], "delivery errors")
    c = Consumer({"bootstrap.servers": brokers[1].bootstrap, "group.id": "unused", "enable.auto.commit": False})
    c.assign([TopicPartition(TOPIC, part, 0) for part in range(12)])
    got = read(c, 12 * PER_PART)
    c.close()
    for part in range(12):
        eq(got.get(part), [b"%d-%d" % (part, i) for i in range(PER_PART)], "records of partition %d" % part)
    log("%d records through broker 1, read back through broker 2" % (12 * PER_PART))


def read(c, n, timeout_s=30):
    """{partition: [values]} of n records (and at most 1 s more for any extra)."""
    got, count = {}, 0

    def more():
        nonlocal count
        m = c.poll(0.5)
        if m is not None and not m.error():
            got.setdefault(m.partition(), []).append(m.value())
            count += 1
        elif m is not None:
            log("consumer: %s" % m.error())
        return count >= n
    wait_until(more, timeout_s, "%d records" % n, interval_s=0)
    extra = c.consume(100, 1.0)
    eq([m.value() for m in extra if not m.error()], [], "records after the last")
    return got


def group(brokers):
    conf = {"group.id": "g40", "auto.offset.reset": "earliest", "enable.auto.commit": False,
            "session.timeout.ms": 6000}
    c = Consumer(dict(conf, **{"bootstrap.servers": brokers[2].bootstrap}))
    c.subscribe([TOPIC])
    got = read(c, 12 * PER_PART)
    eq(sum(len(v) for v in got.values()), 12 * PER_PART, "records read by the group")
    c.commit(asynchronous=False)
    c.close()
    c = Consumer(dict(conf, **{"bootstrap.servers": brokers[0].bootstrap}))
    c.subscribe([TOPIC])
    wait_until(lambda: c.poll(0.5) is None and c.assignment(), 20, "second member assigned")
    committed = c.committed([TopicPartition(TOPIC, p) for p in range(12)], timeout=10)
    eq([tp.offset for tp in committed], [PER_PART] * 12, "committed offsets")
    eq([m.value() for m in c.consume(100, 2.0) if not m.error()], [], "records after the commits")
    c.close()
    log("group g40 read every record once and resumed from its commits")


def not_leader(brokers, a):
    part = 0
    other = [b for i, b in enumerate(brokers, 1) if i != a[part]][0]
    body = kwire.produce_v3_body(TOPIC, part, kwire.record_batch([(None, b"wrong broker")]))
    r = kwire.call(other.port, 0, 3, body)
    eq(kwire.parse_produce_v3(r.d[r.p:])[(TOPIC, part)][0], 6, "Produce to a broker not leading %s-%d" % (TOPIC, part))
    body = (kwire.i32(-1) + kwire.i32(0) + kwire.i32(0) + kwire.i32(1 << 20) + kwire.i8(0) + kwire.array(
        [TOPIC], lambda t: kwire.string(t) + kwire.array([part], lambda p: kwire.i32(p) + kwire.i64(0) +
                                                         kwire.i32(1 << 20))))
    r = kwire.call(other.port, 1, 4, body)
    r.i32()
    eq((r.i32(), r.string(), r.i32(), r.i32(), r.i16()), (1, TOPIC, 1, part, 6),
       "Fetch from a broker not leading %s-%d" % (TOPIC, part))
    owner = brokers[a[part] - 1]
    r = kwire.call(owner.port, 2, 1, kwire.i32(-1) + kwire.array([TOPIC], lambda t: kwire.string(t) + kwire.array(
        [part], lambda p: kwire.i32(p) + kwire.i64(-1))))
    (_, parts), = r.array(lambda r: (r.string(), r.array(lambda r: (r.i32(), r.i16(), r.i64(), r.i64()))))
    eq((parts[0][1], parts[0][3]), (0, PER_PART), "end offset of %s-%d on its leader" % (TOPIC, part))


def flexible_call(port, api_key, version, body):
    """One request with header v2 (flexible versions); -> the body after the response header v1."""
    payload = (kwire.i16(api_key) + kwire.i16(version) + kwire.i32(7) + kwire.string("gregor-itest") + b"\0" + body)
    s = kwire.connect(port)
    try:
        s.sendall(kwire.i32(len(payload)) + payload)
        corr, rest = kwire.recv_response(s)
    finally:
        s.close()
    eq(corr, 7, "correlation id")
    return rest[1:]  # the response header's empty tagged fields


def api_versions(port):
    r = kwire.call(port, 18, 0, kwire.api_versions_v0_body())
    return kwire.parse_api_versions_v0(r.d[r.p:])[1]


def advertised(brokers):
    """The controller's requests: advertised in cluster mode only, at the versions served."""
    want = {4: (5, 5), 5: (3, 3), 6: (5, 7)}
    for b in brokers:
        eq({k: v for k, v in api_versions(b.port).items() if k in want}, want, "ApiVersions of " + b.bootstrap)
    with Broker() as single:
        eq(sorted(k for k in api_versions(single.port) if k in want), [], "ApiVersions of a single node")
        body = kwire.i32(2) + kwire.i32(9) + kwire.i64(-1) + kwire.i8(0) + b"\x01" + b"\x01" + b"\0"
        closed = False
        try:
            flexible_call(single.port, 4, 5, body)
        except (ConnectionError, OSError):
            closed = True
        check(closed, "a single node answered LeaderAndIsr")


def grow_and_delete(zc, brokers):
    """CreatePartitions to 15: the replicas add them and serve them; DeleteTopics: StopReplica empties every broker."""
    adm = AdminClient({"bootstrap.servers": brokers[1].bootstrap})
    adm.create_partitions([NewPartitions(TOPIC, 15)], request_timeout=15)[TOPIC].result(timeout=20)
    a = {int(p): r[0] for p, r in zjson(zc, "/brokers/topics/" + TOPIC)["partitions"].items()}
    for b in brokers:
        wait_until(lambda: sorted(metadata(b, TOPIC)) == list(range(15)), 15, "15 partitions in " + b.bootstrap)
    p = Producer({"bootstrap.servers": brokers[0].bootstrap})
    for part in (12, 13, 14):
        p.produce(TOPIC, value=b"new-%d" % part, partition=part)
    eq(p.flush(20), 0, "records to the new partitions unsent")
    c = Consumer({"bootstrap.servers": brokers[2].bootstrap, "group.id": "unused", "enable.auto.commit": False})
    c.assign([TopicPartition(TOPIC, part, 0) for part in (12, 13, 14)])
    eq({k: v for k, v in read(c, 3).items()}, {part: [b"new-%d" % part] for part in (12, 13, 14)}, "new partitions")
    c.close()
    for part in (12, 13, 14):
        check(os.path.isdir(brokers[a[part] - 1].partition_dir(TOPIC, part)), "log of %s-%d" % (TOPIC, part))
    adm.delete_topics([TOPIC], request_timeout=15)[TOPIC].result(timeout=20)
    for i, b in enumerate(brokers, 1):
        wait_until(lambda: not any(os.path.exists(b.partition_dir(TOPIC, part)) for part in range(15)), 15,
                   "broker %d's logs of %s deleted" % (i, TOPIC))
    wait_until(lambda: not zc.exists(CHROOT + "/brokers/topics/" + TOPIC), 10, "znodes of %s deleted" % TOPIC)
    for b in brokers:
        wait_until(lambda: kwire.metadata_topic_error(b.port, TOPIC) == 3, 10, "%s gone from %s" % (TOPIC, b.bootstrap))
    log("%s grown to 15 partitions and served; deleted from every broker" % TOPIC)


def stale(brokers):
    lai = kwire.i32(2) + kwire.i32(0) + kwire.i64(-1) + kwire.i8(0) + b"\x01" + b"\x01" + b"\0"
    for b in brokers:
        eq(struct.unpack(">h", flexible_call(b.port, 4, 5, lai)[:2])[0], 11, "LeaderAndIsr epoch 0 to " + b.bootstrap)
    um = kwire.i32(2) + kwire.i32(0) + kwire.i64(-1) + b"\x01" + b"\x01" + b"\0"
    eq(struct.unpack(">h", flexible_call(brokers[0].port, 6, 7, um)[:2])[0], 11, "UpdateMetadata epoch 0")
    eq(len(metadata(brokers[0], TOPIC)), 12, "the metadata cache after a stale UpdateMetadata")


def test():
    with running_cluster((1, 2, 3), CHROOT) as (zk, zc, brokers):
        a = spread(zc, brokers)
        produce_consume(brokers)
        not_leader(brokers, a)
        group(brokers)
        stale(brokers)
        advertised(brokers)
        grow_and_delete(zc, brokers)


if __name__ == "__main__":
    main(test)

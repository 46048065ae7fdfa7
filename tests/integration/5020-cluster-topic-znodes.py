"""Cluster mode: CreateTopics through any broker writes the topic to
ZooKeeper as Kafka does, which makes topic names unique across the cluster.

ZooKeeper (tests/lib/zookeeper.py) and three brokers in the chroot
/gregor/c20; the znodes are read back with kazoo.

  1. a topic of 12 partitions, RF 1, created through broker 2 (raw CreateTopics
     v1 to that broker: clients send it to the controller; with one config): /brokers/topics/<t> has Kafka's version 3 JSON (partitions
     {"0":[id],...}, topic_id, adding_replicas, removing_replicas), the 12
     partitions spread over all three brokers, 4 each; /config/topics/<t> holds
     {"version":1,"config":{...}}; broker 2's Metadata lists the topic once the
     controller told it (UpdateMetadata)
  2. the same name through broker 3: TOPIC_ALREADY_EXISTS, the first assignment
     stays, and broker 3's Metadata lists the one topic
  3. RF 4 with 3 live brokers (confluent_kafka): INVALID_REPLICATION_FACTOR, nothing
     written; RF 2 is written with two distinct brokers per partition; a manual
     assignment naming a broker twice is INVALID_REPLICA_ASSIGNMENT; two
     billion partitions (an assignment no znode holds) are INVALID_PARTITIONS
     at once, where the broker used to build it in memory
  4. validate_only writes nothing; a manual assignment to a live broker is written
     as given, one to an unknown broker is INVALID_REPLICA_ASSIGNMENT
  5. CreatePartitions of that topic to two billion: INVALID_PARTITIONS, nothing
     written; to 15 through broker 2: the assignment in
     ZooKeeper gets partitions 12-14, continuing the round-robin from partition
     0's broker as Kafka does; the controller gives them leaders (states)
  6. a topic auto-created by a Metadata request to broker 1 is written to
     ZooKeeper and answered LEADER_NOT_AVAILABLE as Kafka does; once the
     controller told the brokers, broker 2 lists it and writes nothing again
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from confluent_kafka import KafkaError, KafkaException  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

import kwire  # noqa: E402
from gregor import check, eq, log, main, wait_until  # noqa: E402
from zookeeper import running_cluster  # noqa: E402

CHROOT = "/gregor/c20"
TOPIC = "spread12"
HUGE = 2_000_000_000
INVALID_PARTITIONS = 37


def zjson(zc, path):
    return json.loads(zc.get(CHROOT + path)[0])


def create(b, topic, **kw):
    """CreateTopics of one topic through b (confluent_kafka) -> KafkaError code, or None."""
    adm = AdminClient({"bootstrap.servers": b.bootstrap})  # kept until answered: its destruction fails the future
    fs = adm.create_topics([NewTopic(topic, **kw)], request_timeout=15)
    try:
        fs[topic].result(timeout=20)
        return None
    except KafkaException as e:
        return e.args[0].code()


def brokers_seen(b):
    return sorted(AdminClient({"bootstrap.servers": b.bootstrap}).list_topics(timeout=10).brokers)


def create_raw(b, topic, nparts, configs=()):
    """CreateTopics v1 of one topic, RF 1, sent to broker b itself -> (error code, message)."""
    return kwire.create_topic(b.port, topic, nparts, configs)


def spread(zc, brokers):
    eq(create_raw(brokers[1], TOPIC, 12, [("retention.ms", "86400000")]), (0, None),
       "CreateTopics of %s through broker 2" % TOPIC)
    doc = zjson(zc, "/brokers/topics/" + TOPIC)
    eq(sorted(doc), ["adding_replicas", "partitions", "removing_replicas", "topic_id", "version"], "topic keys")
    eq((doc["version"], doc["adding_replicas"], doc["removing_replicas"]), (3, {}, {}), "topic version, reassignments")
    eq(len(doc["topic_id"]), 22, "topic_id is a base64 uuid")
    eq(sorted(doc["partitions"], key=int), [str(p) for p in range(12)], "partition keys")
    check(all(len(r) == 1 for r in doc["partitions"].values()), "RF 1: %r" % doc["partitions"])
    leaders = [doc["partitions"][str(p)][0] for p in range(12)]
    eq(sorted(leaders.count(i) for i in (1, 2, 3)), [4, 4, 4], "12 partitions over 3 brokers: %r" % leaders)
    eq([(leaders[p + 1] - leaders[p]) % 3 for p in range(11)], [1] * 11, "round-robin order: %r" % leaders)
    eq(zjson(zc, "/config/topics/" + TOPIC), {"version": 1, "config": {"retention.ms": "86400000"}}, "config")
    wait_until(lambda: kwire.metadata_topic_error(brokers[1].port, TOPIC) == 0, 10,
               "%s in broker 2's Metadata" % TOPIC)
    log("%s: partitions on brokers %r" % (TOPIC, leaders))


def already_exists(zc, brokers):
    err, msg = create_raw(brokers[2], TOPIC, 3)
    eq(err, KafkaError.TOPIC_ALREADY_EXISTS, "CreateTopics of %s through broker 3 (%s)" % (TOPIC, msg))
    wait_until(lambda: kwire.metadata_topic_error(brokers[2].port, TOPIC) == 0, 10,
               "%s in broker 3's Metadata" % TOPIC)
    eq(len(zjson(zc, "/brokers/topics/" + TOPIC)["partitions"]), 12, "the first assignment stays")


def create_partitions(b, count):
    body = (kwire.array([TOPIC], lambda t: kwire.string(t) + kwire.i32(count) + kwire.i32(-1)) + kwire.i32(15000) +
            kwire.i8(0))
    r = kwire.call(b.port, 37, 1, body)
    r.i32()
    return r.array(lambda r: (r.string(), r.i16(), r.string()))


def grow(zc, brokers):
    leaders = [zjson(zc, "/brokers/topics/" + TOPIC)["partitions"][str(p)][0] for p in range(12)]
    [(_name, err, msg)] = create_partitions(brokers[1], HUGE)
    eq(err, INVALID_PARTITIONS, "CreatePartitions to %d" % HUGE)
    check(msg and "ZooKeeper node" in msg, "the message says why: %r" % msg)
    eq(len(zjson(zc, "/brokers/topics/" + TOPIC)["partitions"]), 12, "nothing written")
    eq(create_partitions(brokers[1], 15), [(TOPIC, 0, None)], "CreatePartitions to 15")
    doc = zjson(zc, "/brokers/topics/" + TOPIC)
    eq(sorted(doc["partitions"], key=int), [str(p) for p in range(15)], "partitions after CreatePartitions")
    eq([doc["partitions"][str(p)][0] for p in range(12, 15)], leaders[:3], "new partitions continue the round-robin")
    eq(len(doc["topic_id"]), 22, "topic_id kept")

    def states_ok():
        for p in range(12, 15):
            path = CHROOT + "/brokers/topics/%s/partitions/%d/state" % (TOPIC, p)
            if not zc.exists(path) or json.loads(zc.get(path)[0])["leader"] != doc["partitions"][str(p)][0]:
                return False
        return True
    wait_until(states_ok, 10, "leaders of the added partitions")


def metadata_autocreate(b, topic):
    """Metadata v4 for topic with AllowAutoTopicCreation -> the topic's error code."""
    r = kwire.call(b.port, 3, 4, kwire.array([topic], kwire.string) + kwire.i8(1))
    r.i32()
    r.array(lambda r: (r.i32(), r.string(), r.i32(), r.string()))
    r.string()
    r.i32()
    eq(r.i32(), 1, "topics in the answer")
    return r.i16()


def autocreate(zc, brokers):
    eq(metadata_autocreate(brokers[0], "auto1"), KafkaError.LEADER_NOT_AVAILABLE, "auto-creation through broker 1")
    doc = zjson(zc, "/brokers/topics/auto1")
    eq((doc["version"], len(doc["partitions"])), (3, 1), "auto1's assignment (num.partitions 1)")
    eq(zjson(zc, "/config/topics/auto1"), {"version": 1, "config": {}}, "auto1's config")
    version = zc.get(CHROOT + "/brokers/topics/auto1")[1].version
    wait_until(lambda: metadata_autocreate(brokers[1], "auto1") == 0, 10, "auto1 through broker 2")
    eq(zc.get(CHROOT + "/brokers/topics/auto1")[1].version, version, "auto1's assignment written once")


def refused(zc, brokers):
    eq(create(brokers[0], "rf4", num_partitions=1, replication_factor=4), KafkaError.INVALID_REPLICATION_FACTOR,
       "RF 4 with 3 brokers")
    eq(create(brokers[0], "rf2", num_partitions=1, replication_factor=2), None, "RF 2")
    rf2 = zjson(zc, "/brokers/topics/rf2")["partitions"]["0"]
    eq((len(rf2), len(set(rf2)), set(rf2) <= {1, 2, 3}), (2, 2, True), "RF 2's assignment %s" % rf2)
    eq(create(brokers[0], "dup", num_partitions=1, replica_assignment=[[1, 1]]), KafkaError.INVALID_REPLICA_ASSIGNMENT,
       "an assignment naming a broker twice")
    err, msg = kwire.create_topic(brokers[0].port, "huge", HUGE)
    eq(err, INVALID_PARTITIONS, "CreateTopics of %d partitions" % HUGE)
    check(msg and "ZooKeeper node" in msg, "the message says why: %r" % msg)
    adm = AdminClient({"bootstrap.servers": brokers[0].bootstrap})
    fs = adm.create_topics([NewTopic("checked", num_partitions=2, replication_factor=1)], validate_only=True,
                           request_timeout=15)
    fs["checked"].result(timeout=20)
    eq(create(brokers[0], "manual", num_partitions=2, replica_assignment=[[3], [1]]), None, "manual assignment")
    eq(zjson(zc, "/brokers/topics/manual")["partitions"], {"0": [3], "1": [1]}, "manual assignment as given")
    eq(create(brokers[0], "nowhere", num_partitions=1, replica_assignment=[[7]]), KafkaError.INVALID_REPLICA_ASSIGNMENT,
       "assignment to an unknown broker")
    for t in ("rf4", "dup", "huge", "checked", "nowhere"):
        check(not zc.exists(CHROOT + "/brokers/topics/" + t), "/brokers/topics/%s written" % t)
        check(not zc.exists(CHROOT + "/config/topics/" + t), "/config/topics/%s written" % t)


def test():
    with running_cluster((1, 2, 3), CHROOT) as (zk, zc, brokers):
        wait_until(lambda: all(brokers_seen(b) == [1, 2, 3] for b in brokers), 20, "each broker sees all three")
        spread(zc, brokers)
        already_exists(zc, brokers)
        refused(zc, brokers)
        autocreate(zc, brokers)
        grow(zc, brokers)


main(test)

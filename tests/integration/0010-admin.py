"""0010-admin: topic administration and topic configs through real admin clients.

CreateTopics / DeleteTopics / CreatePartitions / DeleteRecords /
DescribeConfigs / AlterConfigs / IncrementalAlterConfigs, exact Kafka error
codes per topic / resource, ValidateOnly, and that a restart keeps
partition counts and topic configs.

Clients: confluent_kafka's AdminClient (librdkafka) for the common paths,
kafka-python's protocol classes for exact per-entry codes and for the APIs
neither client library of this vintage wraps (DeleteRecords,
IncrementalAlterConfigs), sent through KafkaAdminClient's connection.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

from gregor import Broker, eq, check, log, main  # noqa: E402

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import (AdminClient, ConfigResource, ConfigSource,  # noqa: E402
                                   NewPartitions, NewTopic)
from kafka.admin import KafkaAdminClient  # noqa: E402
from kafka.protocol.admin import (CreateTopicsRequest, DeleteTopicsRequest,  # noqa: E402
                                  DescribeConfigsRequest)
from kafka.protocol.api import Request, Response  # noqa: E402
from kafka.protocol.types import (Array, Boolean, Int8, Int16, Int32, Int64,  # noqa: E402
                                  Schema, String)

# Kafka error codes
NONE = 0
OFFSET_OUT_OF_RANGE = 1
UNKNOWN_TOPIC_OR_PARTITION = 3
INVALID_TOPIC_EXCEPTION = 17
TOPIC_ALREADY_EXISTS = 36
INVALID_PARTITIONS = 37
INVALID_REPLICATION_FACTOR = 38
INVALID_REPLICA_ASSIGNMENT = 39
INVALID_CONFIG = 40
INVALID_REQUEST = 42
TOPIC_DELETION_DISABLED = 73

TOPIC, BROKER = 2, 4
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


# -- APIs kafka-python 2.0.2 has no classes for ---------------------------

class DeleteRecordsResponse_v0(Response):
    API_KEY = 21
    API_VERSION = 0
    SCHEMA = Schema(
        ("throttle_time_ms", Int32),
        ("topics", Array(("name", String("utf-8")),
                         ("partitions", Array(("partition", Int32), ("low_watermark", Int64),
                                              ("error_code", Int16))))))


class DeleteRecordsRequest_v0(Request):
    API_KEY = 21
    API_VERSION = 0
    RESPONSE_TYPE = DeleteRecordsResponse_v0
    SCHEMA = Schema(
        ("topics", Array(("name", String("utf-8")),
                         ("partitions", Array(("partition", Int32), ("offset", Int64))))),
        ("timeout_ms", Int32))


class IncrementalAlterConfigsResponse_v0(Response):
    API_KEY = 44
    API_VERSION = 0
    SCHEMA = Schema(
        ("throttle_time_ms", Int32),
        ("responses", Array(("error_code", Int16), ("error_message", String("utf-8")),
                            ("resource_type", Int8), ("resource_name", String("utf-8")))))


class IncrementalAlterConfigsRequest_v0(Request):
    API_KEY = 44
    API_VERSION = 0
    RESPONSE_TYPE = IncrementalAlterConfigsResponse_v0
    SCHEMA = Schema(
        ("resources", Array(("resource_type", Int8), ("resource_name", String("utf-8")),
                            ("configs", Array(("name", String("utf-8")), ("config_operation", Int8),
                                              ("value", String("utf-8")))))),
        ("validate_only", Boolean))


def kp_send(kadmin, req):
    """One request on kafka-python's admin connection; returns the response."""
    fut = kadmin._send_request_to_node(kadmin._client.least_loaded_node(), req)
    kadmin._wait_for_futures([fut])
    return fut.value


def kp_create(kadmin, topics, validate_only=False, version=3):
    """topics: [(name, nparts, rf, assignments, configs)] -> {index: (name, code, message)}"""
    req = CreateTopicsRequest[version](create_topic_requests=topics, timeout=10000,
                                       validate_only=validate_only)
    resp = kp_send(kadmin, req)
    return [(t[0], t[1], t[2] if len(t) > 2 else None) for t in resp.topic_errors]


def kp_codes(kadmin, topics, **kw):
    return [code for _, code, _ in kp_create(kadmin, topics, **kw)]


def topic_names(admin):
    return set(admin.list_topics(timeout=10).topics)


def nparts(admin, topic):
    return len(admin.list_topics(topic=topic, timeout=10).topics[topic].partitions)


def describe(admin, topic):
    res = ConfigResource(ConfigResource.Type.TOPIC, topic)
    return admin.describe_configs([res], request_timeout=10)[res].result()


def incremental(kadmin, resources, validate_only=False):
    resp = kp_send(kadmin, IncrementalAlterConfigsRequest_v0(resources=resources,
                                                             validate_only=validate_only))
    return [(r[0], r[1]) for r in resp.responses]


# -- the test ---------------------------------------------------------------

def test_create(admin, kadmin):
    log("CreateTopics: valid, invalid name, exists, 0 partitions, RF 3, bad configs, duplicates")
    fs = admin.create_topics([NewTopic("t1", num_partitions=2, replication_factor=1)], request_timeout=10)
    fs["t1"].result()
    eq(nparts(admin, "t1"), 2, "t1 partitions")

    got = kp_create(kadmin, [
        ("bad name!", 1, 1, [], []),
        ("t1", 1, 1, [], []),
        ("zero", 0, 1, [], []),
        ("rf3", 1, 3, [], []),
        ("rf0", 1, 0, [], []),
        ("unk", 1, 1, [], [("no.such.config", "1")]),
        ("badval", 1, 1, [], [("retention.ms", "soon")]),
        ("dup", 1, 1, [], []),
        ("dup", 1, 1, [], []),
        ("assign-ok", -1, -1, [(0, [0]), (1, [0])], []),
        ("assign-bad", -1, -1, [(0, [5])], []),
        ("t.1", 1, 1, [], []),
        ("t_1", 1, 1, [], []),
    ])
    eq([c for _, c, _ in got],
       [INVALID_TOPIC_EXCEPTION, TOPIC_ALREADY_EXISTS, INVALID_PARTITIONS, INVALID_REPLICATION_FACTOR,
        INVALID_REPLICATION_FACTOR, INVALID_CONFIG, INVALID_CONFIG, INVALID_REQUEST, INVALID_REQUEST,
        NONE, INVALID_REPLICA_ASSIGNMENT, NONE, INVALID_TOPIC_EXCEPTION], "CreateTopics codes")
    check(got[5][2] and "no.such.config" in got[5][2], "unknown config message names the key: %r" % (got[5][2],))
    eq(nparts(admin, "assign-ok"), 2, "manually assigned partitions")

    # v4 defaults: -1 partitions -> num.partitions (3 in this broker), -1 RF -> 1
    eq(kp_codes(kadmin, [("defaults", -1, -1, [], [])], version=3), [NONE], "-1/-1 defaults")
    eq(nparts(admin, "defaults"), 3, "num.partitions default")

    # librdkafka's error path too
    fs = admin.create_topics([NewTopic("rf3b", num_partitions=1, replication_factor=3)], request_timeout=10)
    try:
        fs["rf3b"].result()
        raise AssertionError("RF 3 accepted")
    except KafkaException as e:
        eq(e.args[0].code(), INVALID_REPLICATION_FACTOR, "librdkafka RF 3 error")

    log("CreateTopics validate_only creates nothing")
    eq(kp_codes(kadmin, [("vo", 4, 1, [], [("retention.ms", "1000")])], validate_only=True), [NONE],
       "validate_only ok")
    eq(kp_codes(kadmin, [("vo2", 0, 1, [], [])], validate_only=True), [INVALID_PARTITIONS],
       "validate_only still validates")
    fs = admin.create_topics([NewTopic("vo3", num_partitions=1, replication_factor=1)], validate_only=True,
                             request_timeout=10)
    fs["vo3"].result()
    names = topic_names(admin)
    check("vo" not in names and "vo3" not in names, "validate_only created a topic: %r" % (names,))
    for bad in ("bad name!", "zero", "rf3", "unk", "dup", "assign-bad", "t_1"):
        check(bad not in names, "failed create left topic %r" % bad)


def test_configs(admin, kadmin):
    log("DescribeConfigs / AlterConfigs / IncrementalAlterConfigs")
    admin.create_topics([NewTopic("cfg", num_partitions=1, replication_factor=1,
                                  config={"cleanup.policy": "delete"})], request_timeout=10)["cfg"].result()
    c = describe(admin, "cfg")
    eq(c["retention.ms"].value, "604800000", "retention.ms default value")
    eq(c["retention.ms"].source, ConfigSource.DEFAULT_CONFIG.value, "retention.ms default source")
    eq(c["cleanup.policy"].source, ConfigSource.DYNAMIC_TOPIC_CONFIG.value, "cleanup.policy set at create")
    eq(c["segment.bytes"].source, ConfigSource.STATIC_BROKER_CONFIG.value, "segment.bytes from server.properties")
    eq(c["segment.bytes"].value, "2000000", "segment.bytes broker value")
    check(not c["retention.ms"].is_read_only, "topic configs are not read-only")
    # synonyms (librdkafka keys them by name, so look at the wire with kafka-python)
    resp = kp_send(kadmin, DescribeConfigsRequest[1](resources=[(TOPIC, "cfg", ["segment.bytes", "cleanup.policy"])],
                                                     include_synonyms=True))
    # (kafka-python 2.0.2 names v1's config_source "is_default", a bool: not compared here)
    got = {e[0]: (e[1], [tuple(s) for s in e[5]]) for e in resp.resources[0][4]}
    eq(got, {"segment.bytes": ("2000000",
                               [("log.segment.bytes", "2000000", ConfigSource.STATIC_BROKER_CONFIG.value),
                                ("log.segment.bytes", "1073741824", ConfigSource.DEFAULT_CONFIG.value)]),
             "cleanup.policy": ("delete",
                                [("cleanup.policy", "delete", ConfigSource.DYNAMIC_TOPIC_CONFIG.value),
                                 ("log.cleanup.policy", "delete", ConfigSource.DEFAULT_CONFIG.value)])},
       "DescribeConfigs v1 synonyms")

    # kafka-python DescribeConfigs v0: is_default, and v1 unknown topic
    resp = kp_send(kadmin, DescribeConfigsRequest[0](resources=[(TOPIC, "cfg", ["retention.ms"]),
                                                                (TOPIC, "nope", None),
                                                                (7, "x", None)]))
    eq([r[0] for r in resp.resources], [NONE, UNKNOWN_TOPIC_OR_PARTITION, INVALID_REQUEST], "describe v0 codes")
    eq([(e[0], e[1], e[3]) for e in resp.resources[0][4]], [("retention.ms", "604800000", True)],
       "v0 entry with is_default")

    # broker resource: own id ok (read-only, static source), other id INVALID_REQUEST
    node = str(list(admin.list_topics(timeout=10).brokers)[0])
    resp = kp_send(kadmin, DescribeConfigsRequest[1](resources=[(BROKER, node, ["num.partitions"]),
                                                                (BROKER, "99", None)],
                                                     include_synonyms=False))
    eq([r[0] for r in resp.resources], [NONE, INVALID_REQUEST], "broker describe codes")
    eq([(e[0], e[1], e[2]) for e in resp.resources[0][4]], [("num.partitions", "3", True)], "num.partitions entry")
    res = ConfigResource(ConfigResource.Type.BROKER, node)
    bc = admin.describe_configs([res], request_timeout=10)[res].result()
    eq((bc["num.partitions"].value, bc["num.partitions"].source, bc["num.partitions"].is_read_only),
       ("3", ConfigSource.STATIC_BROKER_CONFIG.value, True), "broker num.partitions")
    eq((bc["log.retention.hours"].value, bc["log.retention.hours"].source),
       ("168", ConfigSource.DEFAULT_CONFIG.value), "broker log.retention.hours")

    # AlterConfigs replaces the whole set: cleanup.policy goes back to default
    res = ConfigResource(ConfigResource.Type.TOPIC, "cfg", set_config={"retention.ms": "3600000"})
    admin.alter_configs([res], request_timeout=10)[res].result()
    c = describe(admin, "cfg")
    eq((c["retention.ms"].value, c["retention.ms"].source), ("3600000", ConfigSource.DYNAMIC_TOPIC_CONFIG.value),
       "retention.ms after alter")
    eq(c["cleanup.policy"].source, ConfigSource.DEFAULT_CONFIG.value, "AlterConfigs dropped cleanup.policy")

    bad = ConfigResource(ConfigResource.Type.TOPIC, "cfg", set_config={"retention.ms": "x"})
    try:
        admin.alter_configs([bad], request_timeout=10)[bad].result()
        raise AssertionError("bad retention.ms accepted")
    except KafkaException as e:
        eq(e.args[0].code(), INVALID_CONFIG, "alter bad value")
    eq(describe(admin, "cfg")["retention.ms"].value, "3600000", "failed alter changed nothing")
    vo = ConfigResource(ConfigResource.Type.TOPIC, "cfg", set_config={"retention.ms": "1"})
    admin.alter_configs([vo], validate_only=True, request_timeout=10)[vo].result()
    eq(describe(admin, "cfg")["retention.ms"].value, "3600000", "validate_only alter changed nothing")

    got = incremental(kadmin, [
        (TOPIC, "cfg", [("max.message.bytes", SET, "2000"), ("retention.ms", DELETE, None)]),
        (TOPIC, "cfg", [("retention.bytes", APPEND, "5")]),
        (TOPIC, "cfg", [("no.such", SET, "1")]),
        (TOPIC, "cfg", [("segment.ms", SET, "100"), ("segment.ms", SET, "200")]),
        (TOPIC, "nope", [("retention.ms", SET, "1")]),
        (BROKER, node, [("num.partitions", SET, "5")]),
        (TOPIC, "cfg", [("leader.replication.throttled.replicas", APPEND, "0:0")]),
    ])
    eq([g[0] for g in got], [NONE, INVALID_CONFIG, INVALID_CONFIG, INVALID_REQUEST, UNKNOWN_TOPIC_OR_PARTITION,
                             INVALID_REQUEST, NONE], "incremental codes")
    c = describe(admin, "cfg")
    eq((c["max.message.bytes"].value, c["max.message.bytes"].source),
       ("2000", ConfigSource.DYNAMIC_TOPIC_CONFIG.value), "incremental SET")
    eq(c["retention.ms"].source, ConfigSource.DEFAULT_CONFIG.value, "incremental DELETE")
    eq(c["leader.replication.throttled.replicas"].value, "0:0", "incremental APPEND")
    check(c["segment.ms"].value not in ("100", "200"), "duplicate-key resource changed nothing")
    eq(incremental(kadmin, [(TOPIC, "cfg", [("leader.replication.throttled.replicas", SUBTRACT, "0:0")])]),
       [(NONE, None)], "incremental SUBTRACT")
    eq(describe(admin, "cfg")["leader.replication.throttled.replicas"].value, "", "after SUBTRACT")


def test_partitions(admin):
    log("CreatePartitions 2 -> 5, then 3 is an error")
    admin.create_topics([NewTopic("grow", num_partitions=2, replication_factor=1)],
                        request_timeout=10)["grow"].result()
    admin.create_partitions([NewPartitions("grow", 5)], request_timeout=10)["grow"].result()
    eq(nparts(admin, "grow"), 5, "grown partitions")
    for count, want in ((3, INVALID_PARTITIONS), (5, INVALID_PARTITIONS)):
        try:
            admin.create_partitions([NewPartitions("grow", count)], request_timeout=10)["grow"].result()
            raise AssertionError("shrink to %d accepted" % count)
        except KafkaException as e:
            eq(e.args[0].code(), want, "create_partitions %d" % count)
    try:
        admin.create_partitions([NewPartitions("nope", 3)], request_timeout=10)["nope"].result()
        raise AssertionError("unknown topic accepted")
    except KafkaException as e:
        eq(e.args[0].code(), UNKNOWN_TOPIC_OR_PARTITION, "create_partitions unknown topic")
    try:
        admin.create_partitions([NewPartitions("grow", 6, replica_assignment=[[7]])],
                                request_timeout=10)["grow"].result()
        raise AssertionError("foreign broker assignment accepted")
    except KafkaException as e:
        eq(e.args[0].code(), INVALID_REPLICA_ASSIGNMENT, "create_partitions foreign broker")
    admin.create_partitions([NewPartitions("grow", 8)], validate_only=True, request_timeout=10)["grow"].result()
    eq(nparts(admin, "grow"), 5, "validate_only create_partitions")


def test_records(b, admin, kadmin):
    log("DeleteRecords moves the low watermark")
    admin.create_topics([NewTopic("recs", num_partitions=1, replication_factor=1)],
                        request_timeout=10)["recs"].result()
    p = Producer({"bootstrap.servers": b.bootstrap})
    for i in range(10):
        p.produce("recs", value=b"v%d" % i, partition=0)
    eq(p.flush(10), 0, "all produced")
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "g0010"})
    eq(c.get_watermark_offsets(TopicPartition("recs", 0), timeout=10), (0, 10), "watermarks before")

    def delete(entries):
        resp = kp_send(kadmin, DeleteRecordsRequest_v0(topics=entries, timeout_ms=10000))
        return [(t[0], [(pp[0], pp[1], pp[2]) for pp in t[1]]) for t in resp.topics]

    got = delete([("recs", [(0, 4), (1, 0)]), ("nope", [(0, 1)])])
    eq(got, [("recs", [(0, 4, NONE), (1, -1, UNKNOWN_TOPIC_OR_PARTITION)]),
             ("nope", [(0, -1, UNKNOWN_TOPIC_OR_PARTITION)])], "DeleteRecords results")
    eq(c.get_watermark_offsets(TopicPartition("recs", 0), timeout=10), (4, 10), "watermarks after 4")
    eq(delete([("recs", [(0, 11)])]), [("recs", [(0, -1, OFFSET_OUT_OF_RANGE)])], "beyond HW")
    eq(delete([("recs", [(0, -5)])]), [("recs", [(0, -1, OFFSET_OUT_OF_RANGE)])], "negative offset")
    eq(delete([("recs", [(0, 2)])]), [("recs", [(0, 4, NONE)])], "below log start is a no-op")
    eq(delete([("recs", [(0, -1)])]), [("recs", [(0, 10, NONE)])], "-1 = high watermark")
    eq(c.get_watermark_offsets(TopicPartition("recs", 0), timeout=10), (10, 10), "watermarks after -1")
    c.close()


def test_delete(admin, kadmin):
    log("DeleteTopics")
    admin.delete_topics(["t1"], request_timeout=10)["t1"].result()
    check("t1" not in topic_names(admin), "deleted topic still listed")
    resp = kp_send(kadmin, DeleteTopicsRequest[1](topics=["t1", "grow", "grow"], timeout=10000))
    eq([(t[0], t[1]) for t in resp.topic_error_codes],
       [("t1", UNKNOWN_TOPIC_OR_PARTITION), ("grow", INVALID_REQUEST), ("grow", INVALID_REQUEST)],
       "DeleteTopics codes")
    # the name can be reused, with fresh data
    admin.create_topics([NewTopic("t1", num_partitions=1, replication_factor=1)], request_timeout=10)["t1"].result()
    eq(nparts(admin, "t1"), 1, "recreated t1")


def test_kafka_python(admin, kadmin):
    log("kafka-python KafkaAdminClient: create, describe, alter, grow, delete")
    from kafka.admin import ConfigResource as KConfigResource, ConfigResourceType, NewPartitions as KNewPartitions
    from kafka.admin import NewTopic as KNewTopic
    from kafka.errors import TopicAlreadyExistsError
    resp = kadmin.create_topics([KNewTopic("kp", 2, 1, topic_configs={"retention.ms": "1000"})])
    eq([(t[0], t[1]) for t in resp.topic_errors], [("kp", NONE)], "kafka-python create_topics")
    try:
        kadmin.create_topics([KNewTopic("kp", 2, 1)])
        raise AssertionError("kafka-python created 'kp' twice")
    except TopicAlreadyExistsError:
        pass
    resp = kadmin.describe_configs([KConfigResource(ConfigResourceType.TOPIC, "kp", {"retention.ms": None})])
    eq([(e[0], e[1]) for e in resp[0].resources[0][4]], [("retention.ms", "1000")], "kafka-python describe")
    resp = kadmin.alter_configs([KConfigResource(ConfigResourceType.TOPIC, "kp", configs={"retention.ms": "2000"})])
    eq([r[0] for r in resp.resources], [NONE], "kafka-python alter_configs")
    eq(describe(admin, "kp")["retention.ms"].value, "2000", "after kafka-python alter")
    resp = kadmin.create_partitions({"kp": KNewPartitions(4)})
    eq([(r[0], r[1]) for r in resp.topic_errors], [("kp", NONE)], "kafka-python create_partitions")
    eq(nparts(admin, "kp"), 4, "kafka-python grown")
    resp = kadmin.delete_topics(["kp"])
    eq([(t[0], t[1]) for t in resp.topic_error_codes], [("kp", NONE)], "kafka-python delete_topics")
    check("kp" not in topic_names(admin), "kafka-python deleted topic still listed")


def test():
    props = {"num.partitions": "3", "log.segment.bytes": "2000000"}
    with Broker(props=props) as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        kadmin = KafkaAdminClient(bootstrap_servers=b.bootstrap, api_version=(2, 3, 0))
        test_create(admin, kadmin)
        test_configs(admin, kadmin)
        test_partitions(admin)
        test_records(b, admin, kadmin)
        test_delete(admin, kadmin)
        test_kafka_python(admin, kadmin)
        kadmin.close()

        log("restart keeps partition counts and configs")
        b.restart()
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        eq(nparts(admin, "grow"), 5, "grow after restart")
        eq(nparts(admin, "assign-ok"), 2, "assign-ok after restart")
        c = describe(admin, "cfg")
        eq((c["max.message.bytes"].value, c["max.message.bytes"].source),
           ("2000", ConfigSource.DYNAMIC_TOPIC_CONFIG.value), "config after restart")
        eq(c["retention.ms"].source, ConfigSource.DEFAULT_CONFIG.value, "deleted key stays deleted")
        check("vo" not in topic_names(admin), "validate_only topic after restart")
        cons = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "g0010b"})
        eq(cons.get_watermark_offsets(TopicPartition("recs", 0), timeout=10), (10, 10), "log start after restart")
        cons.close()

    log("delete.topic.enable=false: TOPIC_DELETION_DISABLED (v3+), INVALID_REQUEST before v3")
    with Broker(props={"delete.topic.enable": "false"}) as b:
        kadmin = KafkaAdminClient(bootstrap_servers=b.bootstrap, api_version=(2, 3, 0))
        eq(kp_codes(kadmin, [("keep", 1, 1, [], [])]), [NONE], "create keep")
        for version, want in ((3, TOPIC_DELETION_DISABLED), (1, INVALID_REQUEST), (0, INVALID_REQUEST)):
            resp = kp_send(kadmin, DeleteTopicsRequest[version](topics=["keep"], timeout=10000))
            eq([(t[0], t[1]) for t in resp.topic_error_codes], [("keep", want)], "DeleteTopics v%d" % version)
        check("keep" in topic_names(AdminClient({"bootstrap.servers": b.bootstrap})), "topic kept")
        kadmin.close()


if __name__ == "__main__":
    main(test)

"""Topic settings that used to be accepted and then ignored now act, or are
refused (confluent-kafka-python AdminClient and Producer):
  * min.insync.replicas=2 on a single broker: acks=all produce fails with
    NOT_ENOUGH_REPLICAS and appends nothing; acks=1 is unaffected (Kafka's
    check); AlterConfigs back to 1 makes acks=all succeed;
  * flush.ms=1000 under the relaxed flush policy (log.flush.interval.messages
    set, so acks=1 data is not synced at once): that topic's .log is fsynced
    within a few seconds (counted by the LD_PRELOAD shim), while a topic
    without flush.ms stays unsynced (the checkpoint interval, whose flush of
    idle partitions would sync it too, is 10 minutes here);
  * segment.jitter.ms: with segment.ms=4 s and segment.jitter.ms=4 s, a
    second append 2 s after the first rolls some of 24 partitions' segments
    early; without jitter none rolls;
  * preallocate: a value other than true/false (CreateTopics and
    AlterConfigs) is refused with INVALID_CONFIG naming the key; true and
    false are accepted and described back (what true does: 1100);
  * Kafka 3.x topic keys with no effect on one node are accepted by
    CreateTopics and described back with the value set, and unset ones
    with Kafka's defaults."""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, eq, check, log, main  # noqa: E402
from syncshim import SyncShim  # noqa: E402

from confluent_kafka import KafkaError, KafkaException, Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic  # noqa: E402

def create(admin, name, config=None, parts=1):
    admin.create_topics([NewTopic(name, parts, 1, config=config or {})], request_timeout=10)[name].result()


def describe(admin, topic):
    res = ConfigResource(ConfigResource.Type.TOPIC, topic)
    return admin.describe_configs([res], request_timeout=10)[res].result()


def alter(admin, topic, cfg):
    res = ConfigResource(ConfigResource.Type.TOPIC, topic, set_config=cfg)
    admin.alter_configs([res], request_timeout=10)[res].result()


def produce_one(b, topic, acks, value=b"v", timestamp=None):
    """-> the delivery error code (0 for success) and offset."""
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": acks, "retries": 0,
                  "message.send.max.retries": 0, "enable.idempotence": False})
    got = []
    kw = {"timestamp": timestamp} if timestamp is not None else {}
    p.produce(topic, value=value, partition=0, on_delivery=lambda err, m: got.append((err, m.offset())), **kw)
    eq(p.flush(15), 0, "unflushed")
    err, off = got[0]
    return (err.code() if err else 0), off


def check_min_insync(b, admin):
    create(admin, "mir", {"min.insync.replicas": "2"})
    eq(produce_one(b, "mir", "all")[0], KafkaError.NOT_ENOUGH_REPLICAS, "acks=all with min.insync.replicas=2")
    eq(produce_one(b, "mir", "1"), (0, 0), "acks=1 with min.insync.replicas=2")
    alter(admin, "mir", {"min.insync.replicas": "1"})
    eq(produce_one(b, "mir", "all"), (0, 1), "acks=all after min.insync.replicas=1")
    log("min.insync.replicas: NOT_ENOUGH_REPLICAS for acks=all above 1")


def check_flush_ms(b, admin, shim):
    create(admin, "fl-ms", {"flush.ms": "1000"})
    create(admin, "fl-none")
    for t in ("fl-ms", "fl-none"):
        for _ in range(5):
            eq(produce_one(b, t, "1")[0], 0, "produce to " + t)
    seg = "-0/00000000000000000000.log"
    deadline = time.monotonic() + 20
    while shim.sync_count("fl-ms" + seg) == 0:
        check(time.monotonic() < deadline, "flush.ms topic not synced")
        time.sleep(0.5)
    eq(shim.sync_count("fl-none" + seg), 0, "syncs of the topic without flush.ms")
    eq(describe(admin, "fl-ms")["flush.ms"].value, "1000", "flush.ms described")
    log("flush.ms: the topic's data was synced by time")


def segments(b, topic, part=0):
    return sorted(f for f in os.listdir(b.partition_dir(topic, part)) if f.endswith(".log"))


def check_jitter(b, admin):
    """segment.ms counts broker time from a segment's first append.  With
    segment.ms=4 s and segment.jitter.ms=4 s each partition's active
    segment rolls after 4 s minus a jitter drawn from [0, 4 s): appending
    again 2 s later rolls the partitions whose jitter is above 2 s, about
    half of 24 (none with odds of 1 in 16 million); without jitter none."""
    n = 24
    create(admin, "jit", {"segment.ms": "4000", "segment.jitter.ms": "4000"}, parts=n)
    create(admin, "nojit", {"segment.ms": "4000"}, parts=n)
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": "1", "linger.ms": 0})
    for _ in range(2):
        t0 = time.monotonic()
        for t in ("jit", "nojit"):
            for part in range(n):
                p.produce(t, value=b"v", partition=part)
        eq(p.flush(15), 0, "unflushed")
        check(time.monotonic() - t0 < 1.5, "appends took under 1.5 s")
        time.sleep(2.0)
    rolled = {t: sum(1 for part in range(n) if len(segments(b, t, part)) > 1) for t in ("jit", "nojit")}
    eq(rolled["nojit"], 0, "partitions rolled without jitter")
    check(rolled["jit"] > 0, "some partition rolled early with segment.jitter.ms: %r" % rolled)
    log("segment.jitter.ms: %d of %d segments rolled before segment.ms" % (rolled["jit"], n))


def expect_invalid_config(fn, what):
    try:
        fn()
    except KafkaException as e:
        err = e.args[0]
        eq(err.code(), KafkaError.INVALID_CONFIG, what)
        check("preallocate" in err.str(), "%s: message names the key: %s" % (what, err.str()))
        return
    raise AssertionError("%s: accepted" % what)


def check_preallocate(b, admin):
    expect_invalid_config(lambda: create(admin, "pre", {"preallocate": "yes"}), "CreateTopics preallocate=yes")
    create(admin, "pre", {"preallocate": "true"})
    eq(describe(admin, "pre")["preallocate"].value, "true", "preallocate described")
    expect_invalid_config(lambda: alter(admin, "pre", {"preallocate": "yes"}), "AlterConfigs preallocate=yes")
    alter(admin, "pre", {"preallocate": "false"})
    eq(describe(admin, "pre")["preallocate"].value, "false", "preallocate described after AlterConfigs")
    log("preallocate: true/false accepted, other values refused")


INFORMATIONAL = {
    "message.format.version": "2.8-IV1",
    "message.downconversion.enable": "false",
    "follower.replication.throttled.replicas": "0:0",
    "leader.replication.throttled.replicas": "0:0",
    "unclean.leader.election.enable": "true",
    "local.retention.ms": "1000",
    "local.retention.bytes": "1000",
    "remote.storage.enable": "false",
    "file.delete.delay.ms": "1000",
}
KAFKA_DEFAULTS = dict(INFORMATIONAL, **{
    "message.format.version": "3.0-IV1", "message.downconversion.enable": "true",
    "follower.replication.throttled.replicas": "", "leader.replication.throttled.replicas": "",
    "unclean.leader.election.enable": "false", "local.retention.ms": "-2", "local.retention.bytes": "-2",
    "file.delete.delay.ms": "60000", "index.interval.bytes": "4096", "segment.index.bytes": "10485760",
    "min.insync.replicas": "1", "preallocate": "false", "segment.jitter.ms": "0"})


def check_informational(b, admin):
    create(admin, "info", INFORMATIONAL)
    got = describe(admin, "info")
    eq({k: got[k].value for k in INFORMATIONAL}, INFORMATIONAL, "informational keys described back")
    create(admin, "info-default")
    got = describe(admin, "info-default")
    eq({k: got[k].value for k in KAFKA_DEFAULTS}, KAFKA_DEFAULTS, "Kafka's defaults")
    log("informational topic keys accepted and described")


def test():
    with Broker() as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        check_min_insync(b, admin)
        check_jitter(b, admin)
        check_preallocate(b, admin)
        check_informational(b, admin)
    relaxed = {"log.flush.interval.messages": "1000000000", "log.flush.offset.checkpoint.interval.ms": "600000"}
    shim = SyncShim()
    with Broker(props=relaxed, env=shim.env()) as b:
        check_flush_ms(b, AdminClient({"bootstrap.servers": b.bootstrap}), shim)


main(test)

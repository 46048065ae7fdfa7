"""ACLs enforced on real clients (confluent_kafka/librdkafka over SASL/PLAIN,
kafka-python for the ACLs): alice may Write t1 but not Read it (produce ok,
fetch TOPIC_AUTHORIZATION_FAILED); bob may Read t1 but not the group
(GROUP_AUTHORIZATION_FAILED); prefixed topic and group ACLs let bob consume
orders-* in bob-* groups with committed offsets; a deny of Write beats an
allow of All; auto-creation needs Create; Metadata lists only the topics a principal may describe; a
super user passes everything; the ACLs hold after a restart. Without an
authorizer (first) the same users may do everything, as before."""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, eq, check, main, wait_until  # noqa: E402

from confluent_kafka import Consumer, Producer, KafkaError, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402
from kafka.admin import (KafkaAdminClient, ACL, ResourcePattern, ACLOperation, ACLPermissionType,  # noqa: E402
                         ResourceType, ACLResourcePatternType)

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret" '
        'user_alice="alice-secret" user_bob="bob-secret" user_carol="carol-secret";')
LIT, PRE = ACLResourcePatternType.LITERAL, ACLResourcePatternType.PREFIXED
ALLOW, DENY = ACLPermissionType.ALLOW, ACLPermissionType.DENY


def conf(b, user, **kw):
    c = {"bootstrap.servers": b.bootstrap, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
         "sasl.username": user, "sasl.password": user + "-secret"}
    c.update(kw)
    return c


def acl(who, op, perm, restype, name, pattern=LIT):
    return ACL(principal="User:" + who, host="*", operation=op, permission_type=perm,
               resource_pattern=ResourcePattern(restype, name, pattern))


def produce(b, user, topic, n=10):
    """Delivery error codes (None: delivered) of n records."""
    p = Producer(conf(b, user, **{"acks": "all", "message.timeout.ms": 8000}))
    res = []
    for i in range(n):
        p.produce(topic, b"%s-%d" % (user.encode(), i), on_delivery=lambda e, m: res.append(e and e.code()))
    p.flush(15)
    return res


def consume(b, user, topic, group, n, commit=False):
    """(values read, error codes seen) reading partition 0 from offset 0 (subscribed when commit)."""
    c = Consumer(conf(b, user, **{"group.id": group, "enable.auto.commit": False,
                                  "auto.offset.reset": "earliest", "session.timeout.ms": 6000}))
    if commit:
        c.subscribe([topic])
    else:
        c.assign([TopicPartition(topic, 0, 0)])
    vals, errs = [], set()
    deadline = time.time() + 12
    while len(vals) < n and time.time() < deadline and not errs:
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            if m.error().code() != KafkaError._PARTITION_EOF:
                errs.add(m.error().code())
            continue
        vals.append(m.value())
    if commit and vals:
        c.commit(asynchronous=False)
        got = c.committed([TopicPartition(topic, 0)], timeout=10)
        eq(got[0].offset, len(vals), "committed offset of %s" % group)
    c.close()
    return vals, errs


def topics_seen(b, user):
    md = AdminClient(conf(b, user)).list_topics(timeout=10)
    return sorted(t for t in md.topics if not t.startswith("__"))


def setup(b):
    a = AdminClient(conf(b, "admin"))
    for f in a.create_topics([NewTopic(t, 1, 1) for t in ("t1", "orders-eu", "secret")]).values():
        f.result()
    k = KafkaAdminClient(bootstrap_servers=b.bootstrap, security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                         sasl_plain_username="admin", sasl_plain_password="admin-secret")
    r = k.create_acls([
        acl("alice", ACLOperation.WRITE, ALLOW, ResourceType.TOPIC, "t1"),
        acl("alice", ACLOperation.READ, ALLOW, ResourceType.GROUP, "alice-g"),
        acl("bob", ACLOperation.READ, ALLOW, ResourceType.TOPIC, "t1"),
        acl("bob", ACLOperation.READ, ALLOW, ResourceType.TOPIC, "orders-", PRE),
        acl("bob", ACLOperation.READ, ALLOW, ResourceType.GROUP, "bob-", PRE),
        acl("carol", ACLOperation.ALL, ALLOW, ResourceType.TOPIC, "*"),
        acl("carol", ACLOperation.WRITE, DENY, ResourceType.TOPIC, "t1"),
    ])
    eq(r["failed"], [], "CreateAcls failures")
    k.close()


def checks(b):
    eq(produce(b, "alice", "t1"), [None] * 10, "alice produces to t1")
    vals, errs = consume(b, "alice", "t1", "alice-g", 10)
    eq((vals, errs), ([], {KafkaError.TOPIC_AUTHORIZATION_FAILED}), "alice reads t1")
    vals, errs = consume(b, "bob", "t1", "other-g", 10, commit=True)
    eq((vals, errs), ([], {KafkaError.GROUP_AUTHORIZATION_FAILED}), "bob in a group he may not read")
    eq(produce(b, "carol", "t1", 3), [KafkaError.TOPIC_AUTHORIZATION_FAILED] * 3, "carol denied Write on t1")
    eq(produce(b, "carol", "orders-eu", 5), [None] * 5, "carol writes orders-eu (All on *)")
    vals, errs = consume(b, "bob", "orders-eu", "bob-g", 5, commit=True)
    eq((len(vals), errs), (5, set()), "bob reads orders-eu in group bob-g (prefixed ACLs)")
    eq(topics_seen(b, "alice"), ["t1"], "topics alice may describe")
    eq(topics_seen(b, "bob"), ["orders-eu", "t1"], "topics bob may describe")
    eq(produce(b, "alice", "auto-x", 1), [KafkaError.TOPIC_AUTHORIZATION_FAILED], "alice's produce to a new topic")
    eq(produce(b, "carol", "auto-y", 1), [None], "carol's produce auto-creates (All on *, so Create)")
    eq(topics_seen(b, "admin"), ["auto-y", "orders-eu", "secret", "t1"], "topics of a super user (no auto-x)")
    vals, errs = consume(b, "admin", "t1", "any-group", 10)
    eq((len(vals), errs), (10, set()), "the super user reads t1")


def authorizer_off(b):
    a = AdminClient(conf(b, "alice"))
    for f in a.create_topics([NewTopic(t, 1, 1) for t in ("t1", "orders-eu", "secret")]).values():
        f.result()
    eq(produce(b, "carol", "t1", 3), [None] * 3, "carol produces without an authorizer")
    vals, errs = consume(b, "bob", "t1", "other-g", 3, commit=True)
    eq((len(vals), errs), (3, set()), "bob reads in any group without an authorizer")
    eq(topics_seen(b, "alice"), ["orders-eu", "secret", "t1"], "alice sees every topic without an authorizer")
    for f in a.delete_topics(["t1", "orders-eu", "secret"]).values():
        f.result()


def test():
    with Broker(start=False) as b:
        b.overrides.update({"listeners": "SASL_PLAINTEXT://%s" % b.bootstrap, "sasl.enabled.mechanisms": "PLAIN",
                            "sasl.jaas.config": JAAS, "group.initial.rebalance.delay.ms": "0"})
        b.start()
        authorizer_off(b)
        b.stop()
        b.overrides.update({"super.users": "User:admin",
                            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"})
        b.start()
        wait_until(lambda: not topics_seen(b, "admin"), 15, "the deleted topics gone")
        setup(b)
        checks(b)
        b.stop()
        b.start()
        eq(produce(b, "carol", "t1", 2), [KafkaError.TOPIC_AUTHORIZATION_FAILED] * 2, "deny after a restart")
        eq(topics_seen(b, "alice"), ["t1"], "alice's topics after a restart")


if __name__ == "__main__":
    main(test)

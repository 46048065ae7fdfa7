"""ACLs of producer ids and transactions (confluent_kafka/librdkafka over
SASL/PLAIN): a transactional producer without Write on its transactional id
is refused (TRANSACTIONAL_ID_AUTHORIZATION_FAILED) and succeeds once a
prefixed TransactionalId ACL grants it, committing records a read_committed
reader sees; an idempotent producer needs Write on some topic or
IdempotentWrite on the cluster (CLUSTER_AUTHORIZATION_FAILED otherwise).
AddPartitionsToTxn v4 (a partition leader verifying a produce, raw over a
PLAINTEXT listener as User:ANONYMOUS) needs ClusterAction, not Write on the
transactional id or the topic: CLUSTER_AUTHORIZATION_FAILED without it,
the coordinator's verdict with it."""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, eq, check, free_port, main  # noqa: E402
import txnwire as tw  # noqa: E402

from confluent_kafka import Consumer, Producer, KafkaError, KafkaException, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402
from kafka.admin import (KafkaAdminClient, ACL, ResourcePattern, ACLOperation, ACLPermissionType,  # noqa: E402
                         ResourceType, ACLResourcePatternType)

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret" '
        'user_dave="dave-secret" user_erin="erin-secret";')


def conf(b, user, **kw):
    c = {"bootstrap.servers": b.bootstrap, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
         "sasl.username": user, "sasl.password": user + "-secret"}
    c.update(kw)
    return c


def add_acls(b, acls):
    k = KafkaAdminClient(bootstrap_servers=b.bootstrap, security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                         sasl_plain_username="admin", sasl_plain_password="admin-secret")
    eq(k.create_acls(acls)["failed"], [], "CreateAcls failures")
    k.close()


def acl(who, op, restype, name, pattern=ACLResourcePatternType.LITERAL):
    return ACL(principal="User:" + who, host="*", operation=op, permission_type=ACLPermissionType.ALLOW,
               resource_pattern=ResourcePattern(restype, name, pattern))


def init_txn_error(b, user, txn_id):
    p = Producer(conf(b, user, **{"transactional.id": txn_id, "transaction.timeout.ms": 10000}))
    try:
        p.init_transactions(15)
        return p, None
    except KafkaException as e:
        return None, e.args[0].code()


def idempotent_errors(b, user, topic):
    errs = []

    def on_error(e):  # a fatal error comes as _FATAL, its cause named in the text
        errs.append(KafkaError.CLUSTER_AUTHORIZATION_FAILED if "Cluster authorization failed" in e.str() else e.code())
    p = Producer(conf(b, user, **{"enable.idempotence": True, "message.timeout.ms": 8000}, error_cb=on_error))
    res = []
    try:
        p.produce(topic, b"x", on_delivery=lambda e, m: res.append(e and e.code()))
    except KafkaException as e:  # the producer may have failed fatally already (InitProducerId refused)
        errs.append(e.args[0].code())
        p.poll(1)  # the error callbacks that say why
        return res, errs
    deadline = time.time() + 10
    while not res and time.time() < deadline:
        try:
            p.poll(0.2)
        except KafkaException as e:  # a fatal error is raised by poll()
            errs.append(e.args[0].code())
            break
    return res, errs


def test():
    with Broker(start=False) as b:
        plain = free_port()
        b.overrides.update({"listeners": "SASL_PLAINTEXT://%s,PLAINTEXT://127.0.0.1:%d" % (b.bootstrap, plain),
                            "sasl.enabled.mechanisms": "PLAIN",
                            "sasl.jaas.config": JAAS, "super.users": "User:admin",
                            "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
                            "transaction.state.log.replication.factor": "1"})
        b.start()
        a = AdminClient(conf(b, "admin"))
        for f in a.create_topics([NewTopic("tx", 1, 1)]).values():
            f.result()
        add_acls(b, [acl("dave", ACLOperation.WRITE, ResourceType.TOPIC, "tx"),
                     acl("erin", ACLOperation.READ, ResourceType.TOPIC, "tx")])
        _, err = init_txn_error(b, "dave", "tx-app-1")
        eq(err, KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, "init_transactions without a TransactionalId ACL")
        add_acls(b, [acl("dave", ACLOperation.WRITE, ResourceType.TRANSACTIONAL_ID, "tx-",
                         ACLResourcePatternType.PREFIXED)])
        p, err = init_txn_error(b, "dave", "tx-app-1")
        eq(err, None, "init_transactions with Write on tx-*")
        p.begin_transaction()
        for i in range(5):
            p.produce("tx", b"%d" % i)
        p.commit_transaction(15)
        c = Consumer(conf(b, "admin", **{"group.id": "check", "isolation.level": "read_committed",
                                         "enable.auto.commit": False}))
        c.assign([TopicPartition("tx", 0, 0)])
        got = []
        deadline = time.time() + 10
        while len(got) < 5 and time.time() < deadline:
            m = c.poll(0.5)
            if m is not None and not m.error():
                got.append(m.value())
        c.close()
        eq(got, [b"%d" % i for i in range(5)], "committed records")
        res, _ = idempotent_errors(b, "dave", "tx")
        eq(res, [None], "idempotent producer with Write on a topic")
        res, errs = idempotent_errors(b, "erin", "tx")
        check(KafkaError.CLUSTER_AUTHORIZATION_FAILED in errs + res,
              "idempotent producer without Write anywhere: %s %s" % (res, errs))

        cl = tw.Client(plain)
        eq(cl.verify_partitions("tx-app-1", 0, 0, "tx", [0]), (31, []),
           "AddPartitionsToTxn v4 without ClusterAction: CLUSTER_AUTHORIZATION_FAILED")
        add_acls(b, [acl("ANONYMOUS", ACLOperation.CLUSTER_ACTION, ResourceType.CLUSTER, "kafka-cluster")])
        eq(cl.verify_partitions("tx-ghost", 0, 0, "tx", [0]), (0, [(0, 49)]),
           "AddPartitionsToTxn v4 with ClusterAction only: the verdict (unknown id), no Write needed")


if __name__ == "__main__":
    main(test)

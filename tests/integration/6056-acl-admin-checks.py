"""Admin APIs under ACLs (confluent_kafka's AdminClient over SASL/PLAIN, the
ACLs made by a super user with kafka-python): without ACLs alice may not
create, grow, describe the configs of, alter or delete topics
(TOPIC_AUTHORIZATION_FAILED) nor describe the broker's configs
(CLUSTER_AUTHORIZATION_FAILED); Create on the cluster, Alter,
DescribeConfigs and Delete on the topic let each of them through."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, eq, main  # noqa: E402

from confluent_kafka import KafkaException  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic, NewPartitions, ConfigResource  # noqa: E402
from kafka.admin import (KafkaAdminClient, ACL, ResourcePattern, ACLOperation, ACLPermissionType,  # noqa: E402
                         ResourceType, ACLResourcePatternType)

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret" '
        'user_alice="alice-secret";')


def conf(b, user):
    return {"bootstrap.servers": b.bootstrap, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
            "sasl.username": user, "sasl.password": user + "-secret"}


def outcome(futures):
    """The error name of the one future in futures, None on success."""
    try:
        list(futures.values())[0].result()
        return None
    except KafkaException as e:
        return e.args[0].name()


def grant(b, op, restype, name):
    k = KafkaAdminClient(bootstrap_servers=b.bootstrap, security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                         sasl_plain_username="admin", sasl_plain_password="admin-secret")
    acl = ACL(principal="User:alice", host="*", operation=op, permission_type=ACLPermissionType.ALLOW,
              resource_pattern=ResourcePattern(restype, name, ACLResourcePatternType.LITERAL))
    eq(k.create_acls([acl])["failed"], [], "CreateAcls")
    k.close()


def checks(b):
    a = AdminClient(conf(b, "alice"))
    topic_cfg = ConfigResource(ConfigResource.Type.TOPIC, "t")
    broker_cfg = ConfigResource(ConfigResource.Type.BROKER, "0")
    TAF = "TOPIC_AUTHORIZATION_FAILED"
    eq(outcome(a.create_topics([NewTopic("t", 1, 1)])), TAF, "CreateTopics without Create")
    grant(b, ACLOperation.CREATE, ResourceType.CLUSTER, "kafka-cluster")
    eq(outcome(a.create_topics([NewTopic("t", 1, 1)])), None, "CreateTopics with Create on the cluster")
    eq(outcome(a.create_partitions([NewPartitions("t", 2)])), TAF, "CreatePartitions without Alter")
    grant(b, ACLOperation.ALTER, ResourceType.TOPIC, "t")
    eq(outcome(a.create_partitions([NewPartitions("t", 2)])), None, "CreatePartitions with Alter")
    eq(outcome(a.describe_configs([topic_cfg])), TAF, "DescribeConfigs of the topic without DescribeConfigs")
    eq(outcome(a.describe_configs([broker_cfg])), "CLUSTER_AUTHORIZATION_FAILED", "DescribeConfigs of the broker")
    grant(b, ACLOperation.ALTER_CONFIGS, ResourceType.TOPIC, "t")
    eq(outcome(a.describe_configs([topic_cfg])), None, "DescribeConfigs implied by AlterConfigs")
    topic_cfg.set_config("retention.ms", "60000")
    eq(outcome(a.alter_configs([topic_cfg])), None, "AlterConfigs with AlterConfigs")
    eq(outcome(a.delete_topics(["t"])), TAF, "DeleteTopics without Delete")
    grant(b, ACLOperation.DELETE, ResourceType.TOPIC, "t")
    eq(outcome(a.delete_topics(["t"])), None, "DeleteTopics with Delete")


def test():
    with Broker(start=False) as b:
        b.overrides.update({"listeners": "SASL_PLAINTEXT://%s" % b.bootstrap, "sasl.enabled.mechanisms": "PLAIN",
                            "sasl.jaas.config": JAAS, "super.users": "User:admin",
                            "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"})
        b.start()
        checks(b)


if __name__ == "__main__":
    main(test)

"""Cluster mode: ACLs live in ZooKeeper in Kafka's layout and every broker
enforces them.

ZooKeeper and two brokers (chroot /gregor/c6055) with an authorizer and
allow.everyone.if.no.acl.found (so the brokers' own ANONYMOUS requests to
each other need no ACL):

  1. CreateAcls (kafka-python) through broker 1: a literal deny of Write on
     topic t-deny and a prefixed deny of Write on sec-; the znodes are
     Kafka's (/kafka-acl/Topic/t-deny with {"version":1,"acls":[...]},
     /kafka-acl-extended/prefixed/Topic/sec-) and a notification is under
     /kafka-acl-changes and /kafka-acl-extended-changes
  2. a raw Produce to broker 2 (and 1) for t-deny and sec-x gets
     TOPIC_AUTHORIZATION_FAILED, for t-open not; DescribeAcls on broker 2
     lists both ACLs
  3. a third broker started now reads the ACLs at registration
  4. DeleteAcls through broker 2: broker 1 lets the Produce through again
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import kwire  # noqa: E402
from gregor import check, eq, main, wait_until  # noqa: E402
from zookeeper import running_cluster, cluster_broker  # noqa: E402

from kafka.admin import (KafkaAdminClient, ACL, ACLFilter, ResourcePattern, ResourcePatternFilter,  # noqa: E402
                         ACLOperation, ACLPermissionType, ResourceType, ACLResourcePatternType)

CHROOT = "/gregor/c6055"
TAF = 29
SETTINGS = {"authorizer_class_name": "kafka.security.authorizer.AclAuthorizer",
            "allow_everyone_if_no_acl_found": "true"}


def produce_error(b, topic):
    batch = kwire.record_batch([(None, b"v")])
    r = kwire.call(b.port, 0, 3, kwire.produce_v3_body(topic, 0, batch))
    return kwire.parse_produce_v3(r.take(r.left()))[(topic, 0)][0]


def admin(b):
    return KafkaAdminClient(bootstrap_servers=b.bootstrap, request_timeout_ms=15000)


def deny(name, pattern):
    return ACL(principal="User:ANONYMOUS", host="*", operation=ACLOperation.WRITE,
               permission_type=ACLPermissionType.DENY,
               resource_pattern=ResourcePattern(ResourceType.TOPIC, name, pattern))


def all_filter():
    return ACLFilter(principal=None, host=None, operation=ACLOperation.ANY, permission_type=ACLPermissionType.ANY,
                     resource_pattern=ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY))


def denied_everywhere(brokers, want):
    return all((produce_error(b, "t-deny") == TAF) == want and (produce_error(b, "sec-x") == TAF) == want
               for b in brokers)


def test():
    with running_cluster(ids=(1, 2), chroot=CHROOT, **SETTINGS) as (zk, zc, brokers):
        b1, b2 = brokers
        a1 = admin(b1)
        r = a1.create_acls([deny("t-deny", ACLResourcePatternType.LITERAL),
                            deny("sec-", ACLResourcePatternType.PREFIXED)])
        eq(r["failed"], [], "CreateAcls through broker 1")
        data, _ = zc.get(CHROOT + "/kafka-acl/Topic/t-deny")
        eq(json.loads(data), {"version": 1, "acls": [{"principal": "User:ANONYMOUS", "permissionType": "Deny",
                                                      "operation": "Write", "host": "*"}]}, "t-deny's znode")
        check(zc.exists(CHROOT + "/kafka-acl-extended/prefixed/Topic/sec-"), "the prefixed ACL's znode")
        check(zc.get_children(CHROOT + "/kafka-acl-changes"), "a literal change notification")
        check(zc.get_children(CHROOT + "/kafka-acl-extended-changes"), "a prefixed change notification")
        wait_until(lambda: denied_everywhere(brokers, True), 15, "both brokers deny Write on t-deny and sec-*")
        check(produce_error(b2, "t-open") != TAF, "t-open is not denied")
        a2 = admin(b2)
        acls, _ = a2.describe_acls(all_filter())
        eq(sorted(x.resource_pattern.resource_name for x in acls), ["sec-", "t-deny"], "DescribeAcls on broker 2")
        b3 = cluster_broker(zk.connect, 3, CHROOT, **SETTINGS)
        brokers.append(b3)
        wait_until(lambda: denied_everywhere([b3], True), 15, "a broker started later denies too")
        res = a2.delete_acls([all_filter()])
        eq(len(res[0][1]), 2, "ACLs deleted through broker 2")
        wait_until(lambda: denied_everywhere(brokers, False), 15, "every broker allows again")
        eq(json.loads(zc.get(CHROOT + "/kafka-acl/Topic/t-deny")[0])["acls"], [], "t-deny's znode emptied")
        a1.close()
        a2.close()


if __name__ == "__main__":
    main(test)

"""ACL admin APIs with kafka-python's KafkaAdminClient (CreateAcls,
DescribeAcls, DeleteAcls v1): without an authorizer they answer
SECURITY_DISABLED; with one, a super user creates literal and prefixed
ACLs, describes them with filters (MATCH included), deletes some, a user
without Alter/Describe on the cluster is refused (CLUSTER_AUTHORIZATION_FAILED),
and what is left survives a restart; an unknown authorizer.class.name stops
the broker with a message naming it."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, eq, check, run, main  # noqa: E402

from kafka.admin import (KafkaAdminClient, ACL, ACLFilter, ResourcePattern, ResourcePatternFilter,  # noqa: E402
                         ACLOperation, ACLPermissionType, ResourceType, ACLResourcePatternType)
from kafka.errors import KafkaError  # noqa: E402

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'user_admin="admin-secret" user_alice="alice-secret" user_bob="bob-secret";')
AUTHZ = "kafka.security.authorizer.AclAuthorizer"
LIT, PRE = ACLResourcePatternType.LITERAL, ACLResourcePatternType.PREFIXED


def admin(b, user=None):
    kw = {}
    if user:
        kw = dict(security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                  sasl_plain_username=user, sasl_plain_password=user + "-secret")
    return KafkaAdminClient(bootstrap_servers=b.bootstrap, request_timeout_ms=15000, **kw)


def create(a, acls):
    r = a.create_acls(acls)
    failed = {id(acl): err.__name__ for acl, err in r["failed"]}
    return [failed.get(id(acl)) for acl in acls]


def describe(a, flt):
    acls, err = a.describe_acls(flt)
    return sorted((x.resource_pattern.resource_type.name, x.resource_pattern.resource_name,
                   x.resource_pattern.pattern_type.name, x.principal, x.host, x.operation.name,
                   x.permission_type.name) for x in acls)


def any_filter(restype=ResourceType.ANY, name=None, pattern=ACLResourcePatternType.ANY, principal=None,
               perm=ACLPermissionType.ANY):
    return ACLFilter(principal=principal, host=None, operation=ACLOperation.ANY, permission_type=perm,
                     resource_pattern=ResourcePatternFilter(restype, name, pattern))


def acl(who, host, op, perm, restype, name, pattern=LIT):
    return ACL(principal=who, host=host, operation=op, permission_type=perm,
               resource_pattern=ResourcePattern(restype, name, pattern))


B = [
    acl("User:alice", "*", ACLOperation.WRITE, ACLPermissionType.ALLOW, ResourceType.TOPIC, "t1"),
    acl("User:alice", "*", ACLOperation.READ, ACLPermissionType.ALLOW, ResourceType.TOPIC, "orders-", PRE),
    acl("User:bob", "127.0.0.1", ACLOperation.READ, ACLPermissionType.DENY, ResourceType.GROUP, "*"),
    acl("User:bob", "*", ACLOperation.IDEMPOTENT_WRITE, ACLPermissionType.ALLOW, ResourceType.CLUSTER,
        "kafka-cluster"),
]


def secured(b):
    a = admin(b, "admin")
    eq(create(a, B), [None] * 4, "CreateAcls results")
    eq(create(a, B[:1]), [None], "creating an existing ACL again")
    bad = acl("User:x", "*", ACLOperation.ALTER, ACLPermissionType.ALLOW, ResourceType.CLUSTER, "other")
    eq(create(a, [bad, B[0]]), ["InvalidRequestError", None], "a cluster resource not named kafka-cluster")
    eq(len(describe(a, any_filter())), 4, "all ACLs")
    eq(describe(a, any_filter(ResourceType.TOPIC, "orders-eu", ACLResourcePatternType.MATCH)),
       [("TOPIC", "orders-", "PREFIXED", "User:alice", "*", "READ", "ALLOW")], "MATCH filter")
    eq(describe(a, any_filter(principal="User:bob", perm=ACLPermissionType.DENY)),
       [("GROUP", "*", "LITERAL", "User:bob", "127.0.0.1", "READ", "DENY")], "principal + deny filter")
    alice = admin(b, "alice")  # no Describe or Alter on the cluster
    try:
        alice.describe_acls(any_filter())
        check(False, "alice described the ACLs")
    except KafkaError as e:
        check("ClusterAuthorizationFailed" in type(e).__name__, "DescribeAcls by alice: %r" % e)
    eq(create(alice, B[:1]), ["ClusterAuthorizationFailedError"], "CreateAcls by alice")
    res = a.delete_acls([any_filter(ResourceType.GROUP)])
    eq([(x.resource_pattern.resource_name, x.principal) for x, err in res[0][1]], [("*", "User:bob")],
       "DeleteAcls")
    eq(len(describe(a, any_filter())), 3, "ACLs after the delete")
    alice.close()
    a.close()


def security_disabled(b):
    a = admin(b)
    eq(create(a, B[:1]), ["SecurityDisabledError"], "CreateAcls without an authorizer")
    a.close()


def test():
    with Broker(start=False) as b:
        b.start()
        security_disabled(b)
        b.stop()
        b.overrides.update({"listeners": "SASL_PLAINTEXT://%s" % b.bootstrap,
                            "sasl.enabled.mechanisms": "PLAIN", "sasl.jaas.config": JAAS,
                            "authorizer.class.name": AUTHZ, "super.users": "User:admin"})
        b.start()
        secured(b)
        before = describe(admin(b, "admin"), any_filter())
        b.stop()
        b.start()
        eq(describe(admin(b, "admin"), any_filter()), before, "ACLs after a restart")
        b.stop()
        p = run(b.command() + ["--override", "authorizer.class.name=com.example.MyAuthorizer"],
                timeout_s=20, check_rc=False)
        check(p.returncode != 0, "an unknown authorizer starts")
        out = (p.stdout + p.stderr).decode(errors="replace")
        check("authorizer.class.name 'com.example.MyAuthorizer'" in out, "message:\n" + out[-2000:])


if __name__ == "__main__":
    main(test)

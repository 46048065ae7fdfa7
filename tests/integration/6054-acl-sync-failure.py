"""CreateAcls and DeleteAcls when the ACL file cannot be made durable
(LD_PRELOAD shim): the next fsync of acls(.tmp) fails with EIO, the
request answers KAFKA_STORAGE_ERROR and changes nothing (DescribeAcls shows
the ACLs from before), and after a
restart the file holds the ACLs from before the failed change; a torn
or garbled ACL file stops the broker at start-up instead of serving with
fewer ACLs than were granted."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, BrokerError, check, eq, main  # noqa: E402
from syncshim import SyncShim  # noqa: E402
import kwire  # noqa: E402

from kafka.admin import (KafkaAdminClient, ACL, ACLFilter, ResourcePattern, ResourcePatternFilter,  # noqa: E402
                         ACLOperation, ACLPermissionType, ResourceType, ACLResourcePatternType)


def admin(b):
    return KafkaAdminClient(bootstrap_servers=b.bootstrap, request_timeout_ms=15000)


def acl(name, perm):
    return ACL(principal="User:ANONYMOUS", host="*", operation=ACLOperation.WRITE, permission_type=perm,
               resource_pattern=ResourcePattern(ResourceType.TOPIC, name, ACLResourcePatternType.LITERAL))


def names(a):
    acls, _ = a.describe_acls(ACLFilter(principal=None, host=None, operation=ACLOperation.ANY,
                                        permission_type=ACLPermissionType.ANY,
                                        resource_pattern=ResourcePatternFilter(ResourceType.ANY, None,
                                                                               ACLResourcePatternType.ANY)))
    return sorted((x.resource_pattern.resource_name, x.permission_type.name) for x in acls)


KAFKA_STORAGE_ERROR = 56


def create_deny_raw(b, name):
    """CreateAcls v1 of a Write deny for User:ANONYMOUS on topic name: each creation's error code."""
    creation = (kwire.i8(2) + kwire.string(name) + kwire.i8(3) + kwire.string("User:ANONYMOUS") +
                kwire.string("*") + kwire.i8(4) + kwire.i8(2))
    r = kwire.call(b.port, 30, 1, kwire.array([creation]))
    r.i32()
    return r.array(lambda r: (r.i16(), r.string())[0])


def test():
    shim = SyncShim()
    with Broker(start=False, env=shim.env()) as b:
        b.overrides.update({"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
                            "allow.everyone.if.no.acl.found": "true"})
        b.start()
        a = admin(b)
        eq(a.create_acls([acl("t1", ACLPermissionType.ALLOW)])["failed"], [], "first CreateAcls")
        before = names(a)
        shim.fail_next("/acls")
        eq(create_deny_raw(b, "t1"), [KAFKA_STORAGE_ERROR], "CreateAcls when the file cannot be synced")
        check(not shim.fail_pending(), "the armed fsync failure happened")
        eq(names(a), before, "ACLs after the failed CreateAcls")
        shim.fail_next("/acls")
        res = a.delete_acls([ACLFilter(principal=None, host=None, operation=ACLOperation.ANY,
                                       permission_type=ACLPermissionType.ANY,
                                       resource_pattern=ResourcePatternFilter(ResourceType.ANY, None,
                                                                              ACLResourcePatternType.ANY))])
        eq(res[0][1], [], "DeleteAcls when the file cannot be synced: nothing deleted")
        check(not shim.fail_pending(), "the second armed fsync failure happened")
        eq(names(a), before, "ACLs after the failed DeleteAcls")
        a.close()
        b.restart()
        a = admin(b)
        eq(names(a), before, "ACLs after a restart")
        a.close()
        b.stop()
        path = os.path.join(b.data_dir, "acls")
        with open(path, "rb") as f:
            text = f.read()
        with open(path, "wb") as f:
            f.write(text[:len(text) // 2])
        try:
            b.start()
            check(False, "the broker started with a torn ACL file")
        except BrokerError as e:
            check("cannot read the ACLs" in str(e), "start-up message: %s" % e)


if __name__ == "__main__":
    main(test)

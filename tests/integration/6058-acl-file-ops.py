"""An ACL file written by hand in the log dir (the documented format) is
what a PLAINTEXT client (User:ANONYMOUS, no super user) is held to, and
DescribeGroups v3 reports its authorized operations on a group from it
(KIP-430): Read on g1 gives Read and the Describe it implies; g2, with no
ACL, answers GROUP_AUTHORIZATION_FAILED; CreateAcls without Alter on the
cluster gets CLUSTER_AUTHORIZATION_FAILED."""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import kwire  # noqa: E402
from gregor import Broker, eq, main  # noqa: E402

READ, DESCRIBE = 3, 8
ACLS = {"version": 1, "acls": [
    {"resourceType": "Group", "patternType": "LITERAL", "name": "g1", "principal": "User:ANONYMOUS",
     "host": "*", "operation": "Read", "permissionType": "Allow"},
]}


def describe_group(b, group):
    """DescribeGroups v3 with IncludeAuthorizedOperations: (error, authorized operations)."""
    r = kwire.call(b.port, 15, 3, kwire.array([group], kwire.string) + kwire.i8(1))
    r.i32()
    groups = r.array(lambda r: (r.i16(), r.string(), r.string(), r.string(), r.string(),
                                r.array(lambda r: (r.string(), r.string(), r.string(), r.nbytes(), r.nbytes())),
                                r.i32()))
    return groups[0][0], groups[0][6]


def create_acl_error(b):
    creation = (kwire.i8(2) + kwire.string("t") + kwire.i8(3) + kwire.string("User:ANONYMOUS") +
                kwire.string("*") + kwire.i8(4) + kwire.i8(3))
    r = kwire.call(b.port, 30, 1, kwire.array([creation]))
    r.i32()
    return r.array(lambda r: (r.i16(), r.string())[0])[0]


def test():
    with Broker(start=False) as b:
        with open(os.path.join(b.data_dir, "acls"), "w") as f:
            json.dump(ACLS, f)
        b.overrides["authorizer.class.name"] = "kafka.security.authorizer.AclAuthorizer"
        b.start()
        kwire.wait_coordinator(b.port, "g1")
        eq(describe_group(b, "g1"), (0, (1 << READ) | (1 << DESCRIBE)), "g1: no error, Read and Describe")
        eq(describe_group(b, "g2")[0], 30, "g2: GROUP_AUTHORIZATION_FAILED")
        eq(create_acl_error(b), 31, "CreateAcls: CLUSTER_AUTHORIZATION_FAILED")


if __name__ == "__main__":
    main(test)

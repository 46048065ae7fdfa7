"""DescribeCluster (API 60, v0) answers from the same view of the cluster
as Metadata: every live broker with its endpoint, the controller and the
cluster id.

ZooKeeper and two brokers in the chroot /gregor/c80 (broker 2 with a
rack), the request sent on the raw wire (flexible header v2, response
header v1) to each broker:

  1. error 0, ClusterId = /cluster/id, ControllerId = /controller's
     broker id, the brokers 1 and 2 at their host:port (rack of broker 2
     given, broker 1 null), as Metadata lists them
  2. ClusterAuthorizedOperations -2147483648 when not asked for; asked
     for, a bit field holding DESCRIBE (8) and ALTER_CONFIGS (11)
  3. ApiVersions advertises key 60 with versions 0-0
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import kwire  # noqa: E402
from gregor import check, eq, main, wait_until  # noqa: E402
from zookeeper import ZooKeeper, cluster_broker, wait_listed  # noqa: E402

CHROOT = "/gregor/c80"


def uvarint(r):
    v, shift = 0, 0
    while True:
        b = r.i8() & 0xFF
        v |= (b & 0x7F) << shift
        if not b & 0x80:
            return v
        shift += 7


def cstring(r):
    n = uvarint(r) - 1
    return None if n < 0 else r.take(n).decode()


def describe_cluster(port, include_ops):
    """DescribeCluster v0 on a connection of its own: the decoded response."""
    body = b"\x00" + (b"\x01" if include_ops else b"\x00") + b"\x00"  # header tags, the flag, body tags
    r = kwire.call(port, 60, 0, body)
    eq(uvarint(r), 0, "response header tagged fields")
    out = {"throttle": r.i32(), "error": r.i16(), "message": cstring(r), "cluster_id": cstring(r),
           "controller": r.i32(), "brokers": {}}
    for _ in range(uvarint(r) - 1):
        bid, host, port_, rack = r.i32(), cstring(r), r.i32(), cstring(r)
        eq(uvarint(r), 0, "broker tagged fields")
        out["brokers"][bid] = (host, port_, rack)
    out["ops"] = r.i32()
    eq(uvarint(r), 0, "body tagged fields")
    eq(r.left(), 0, "bytes after the response")
    return out


def metadata_brokers(port):
    r = kwire.call(port, 3, 1, kwire.metadata_v1_body([]))
    return {bid: (host, p) for bid, host, p, _rack in r.array(lambda r: (r.i32(), r.string(), r.i32(), r.string()))}


def api_range(port, key):
    r = kwire.call(port, 18, 0, kwire.api_versions_v0_body())
    return kwire.parse_api_versions_v0(r.d[r.p:])[1].get(key)


def test():
    brokers = []
    with ZooKeeper() as zk:
        try:
            zc = zk.client()
            brokers = [cluster_broker(zk.connect, 1, CHROOT),
                       cluster_broker(zk.connect, 2, CHROOT, broker_rack="rack-b")]
            wait_until(lambda: zc.exists(CHROOT + "/controller") and
                       len(zc.get_children(CHROOT + "/brokers/ids")) == 2, 20, "two brokers and a controller")
            wait_listed(brokers)
            cid = json.loads(zc.get(CHROOT + "/cluster/id")[0])["id"]
            ctl = json.loads(zc.get(CHROOT + "/controller")[0])["brokerid"]
            want = {1: (brokers[0].host, brokers[0].port, None), 2: (brokers[1].host, brokers[1].port, "rack-b")}
            for b in brokers:
                eq(api_range(b.port, 60), (0, 0), "ApiVersions range of DescribeCluster on %s" % b.bootstrap)
                d = describe_cluster(b.port, False)
                eq(d["error"], 0, "DescribeCluster error on %s" % b.bootstrap)
                eq(d["message"], None, "DescribeCluster error message")
                eq(d["cluster_id"], cid, "DescribeCluster cluster id (/cluster/id)")
                eq(d["controller"], ctl, "DescribeCluster controller id (/controller)")
                eq(d["brokers"], want, "DescribeCluster brokers on %s" % b.bootstrap)
                eq({k: v[:2] for k, v in d["brokers"].items()}, metadata_brokers(b.port),
                   "DescribeCluster and Metadata list the same brokers")
                eq(d["ops"], -2147483648, "ClusterAuthorizedOperations when not asked for")
                ops = describe_cluster(b.port, True)["ops"]
                check(ops != -2147483648 and ops & (1 << 8) and ops & (1 << 11),
                      "ClusterAuthorizedOperations asked for: %#x" % ops)
            for b in brokers:
                eq(b.stop(), 0, "exit status of %s" % b.bootstrap)
        except BaseException:
            for b in brokers:
                b.dump_log()
            raise


if __name__ == "__main__":
    main(test)

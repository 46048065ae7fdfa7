"""Cluster mode: __consumer_offsets is a replicated topic in ZooKeeper and a
group's coordinator is the leader of its partition, as in Kafka.

ZooKeeper and three brokers in the chroot /gregor/c200.

  1. the first FindCoordinator answers COORDINATOR_NOT_AVAILABLE and writes
     /brokers/topics/__consumer_offsets: offsets.topic.num.partitions (here
     10) partitions of offsets.topic.replication.factor (default 3) replicas,
     /config/topics/__consumer_offsets with cleanup.policy=compact
  2. from every broker, FindCoordinator v1 and v4 (all keys in one request)
     of each group (ASCII, non-ASCII,
     a 4-byte UTF-8 character, Java hash INT_MIN, negative hashes) names the
     Metadata leader of partition abs(String.hashCode) % 10, computed here
     from Java's definition over UTF-16 code units, with that broker's port
  3. JoinGroup and OffsetFetch of a group sent to a broker that does not
     lead its partition answer NOT_COORDINATOR (16)
  4. with offsets.topic.replication.factor=5 on 3 live brokers the topic is
     created with 3 replicas (clamped, with a warning in the log)
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import kwire  # noqa: E402
from gregor import check, eq, log, main, wait_until  # noqa: E402
from idemwire import compact_nstring, read_compact_string, uvarint  # noqa: E402
from logdirswire import read_array, skip_tags  # noqa: E402
from zookeeper import running_cluster, wait_listed  # noqa: E402

CHROOT = "/gregor/c200"
NPARTS = 10
GROUPS = ["my-group", "grüppe", "g😀x", "polygenelubricants", "consumer-group-7", "a", "", "Z" * 60]
TOPIC = "__consumer_offsets"


def find_coordinators_v4(port, keys):
    """FindCoordinator v4 (flexible, batched keys) -> {key: (error, node id, port)}."""
    body = kwire.i8(0) + uvarint(len(keys) + 1) + b"".join(compact_nstring(k) for k in keys) + uvarint(0)
    hdr = kwire.i16(10) + kwire.i16(4) + kwire.i32(7) + kwire.string("itest-5200") + uvarint(0)
    sock = kwire.connect(port)
    try:
        sock.sendall(kwire.i32(len(hdr) + len(body)) + hdr + body)
        corr, resp = kwire.recv_response(sock)
    finally:
        sock.close()
    eq(corr, 7, "correlation id")
    r = kwire.Reader(resp)
    skip_tags(r)
    r.i32()

    def coord(r):
        key, node, _host, port_, err = read_compact_string(r), r.i32(), read_compact_string(r), r.i32(), r.i16()
        read_compact_string(r)
        skip_tags(r)
        return key, (err, node, port_)
    out = dict(read_array(r, 2, coord))
    skip_tags(r)
    return out


def leaders(port):
    """{partition: leader} of __consumer_offsets from Metadata v1 of broker port."""
    r = kwire.call(port, 3, 1, kwire.array([TOPIC], kwire.string))
    t = kwire.parse_metadata_v1(r.d[r.p:])["topics"].get(TOPIC)
    if not t or t[0] != 0:
        return {}
    return {idx: leader for err, idx, leader in t[1] if err == 0 and leader >= 0}


def join_error(port, group):
    """JoinGroup v0 of a new member -> its error code."""
    body = (kwire.string(group) + kwire.i32(10000) + kwire.string("") + kwire.string("consumer") +
            kwire.array([("range", b"")], lambda p: kwire.string(p[0]) + kwire.nbytes(p[1])))
    r = kwire.call(port, 11, 0, body)
    return r.i16()


def offset_fetch_error(port, group):
    """OffsetFetch v3 of every offset of group -> the top-level error code."""
    r = kwire.call(port, 9, 3, kwire.string(group) + kwire.i32(-1))
    r.i32()
    r.array(lambda r: (r.string(), r.array(lambda r: (r.i32(), r.i64(), r.string(), r.i16()))))
    return r.i16()


def test_placement():
    with running_cluster((1, 2, 3), CHROOT, offsets_topic_num_partitions=NPARTS) as (zk, zc, brokers):
        port_of = {i + 1: b.port for i, b in enumerate(brokers)}
        wait_listed(brokers)  # the topic's replication factor is clamped to the brokers known live
        eq(kwire.find_coordinator(brokers[0].port, "my-group")[0], 15, "the first FindCoordinator")
        wait_until(lambda: zc.exists(CHROOT + "/brokers/topics/" + TOPIC), 10, "__consumer_offsets in zookeeper")
        parts = json.loads(zc.get(CHROOT + "/brokers/topics/" + TOPIC)[0])["partitions"]
        eq(len(parts), NPARTS, "partitions of __consumer_offsets")
        eq({len(r) for r in parts.values()}, {3}, "replicas per partition")
        eq(json.loads(zc.get(CHROOT + "/config/topics/" + TOPIC)[0])["config"].get("cleanup.policy"), "compact",
           "cleanup.policy")
        for b in brokers:
            wait_until(lambda: len(leaders(b.port)) == NPARTS, 20, "every partition led in %s" % b.bootstrap)
        for b in brokers:
            lead = leaders(b.port)
            for g in GROUPS:
                p = kwire.coordinator_partition(g, NPARTS)
                wait_until(lambda: kwire.find_coordinator(b.port, g)[0] == 0, 15, "coordinator of %r" % g)
                eq(kwire.find_coordinator(b.port, g), (0, lead[p], port_of[lead[p]]),
                   "FindCoordinator(%r) from broker %s (partition %d)" % (g, b.bootstrap, p))
        for b in brokers:
            lead = leaders(b.port)
            want = {g: (0, lead[kwire.coordinator_partition(g, NPARTS)],
                        port_of[lead[kwire.coordinator_partition(g, NPARTS)]]) for g in GROUPS}
            eq(find_coordinators_v4(b.port, GROUPS), want, "FindCoordinator v4 of every group from " + b.bootstrap)
        log("FindCoordinator v1 and v4 agree with Java's hash and the Metadata leaders, from every broker")
        lead = leaders(brokers[0].port)
        for g in ["my-group", "grüppe", "polygenelubricants"]:
            coord = lead[kwire.coordinator_partition(g, NPARTS)]
            other = [b for i, b in enumerate(brokers) if i + 1 != coord][0]
            eq(join_error(other.port, g), 16, "JoinGroup(%r) at a broker that does not lead its partition" % g)
            eq(offset_fetch_error(other.port, g), 16, "OffsetFetch(%r) there" % g)
            wait_until(lambda: join_error(port_of[coord], g) in (0, 79), 15, "JoinGroup(%r) at its coordinator" % g)
        log("JoinGroup and OffsetFetch elsewhere: NOT_COORDINATOR")


def test_clamped():
    with running_cluster((1, 2, 3), CHROOT + "x", offsets_topic_num_partitions=4,
                         offsets_topic_replication_factor=5) as (zk, zc, brokers):
        wait_listed(brokers)  # the clamp counts the brokers this one knows to be live
        kwire.find_coordinator(brokers[1].port, "g")
        wait_until(lambda: zc.exists(CHROOT + "x/brokers/topics/" + TOPIC), 10, "__consumer_offsets in zookeeper")
        parts = json.loads(zc.get(CHROOT + "x/brokers/topics/" + TOPIC)[0])["partitions"]
        eq({len(r) for r in parts.values()}, {3}, "replicas per partition, clamped to the live brokers")
        check("replication factor 5 is more than the 3 live brokers" in brokers[1].log_text(),
              "the clamp is logged")
        wait_until(lambda: kwire.find_coordinator(brokers[1].port, "g")[0] == 0, 20, "a coordinator")
        log("offsets.topic.replication.factor=5 on 3 brokers: 3 replicas, warned")


def test():
    test_placement()
    test_clamped()


if __name__ == "__main__":
    main(test)

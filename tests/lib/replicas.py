"""Replicated topics in cluster mode, over the raw protocol (kwire) and kazoo: CreateTopics
with a replication factor, the state znodes, AlterPartition (api 56) and ElectLeaders (api 43)."""

import json
import socket
import struct
import time

import kwire
from kwire import Reader, array, i8, i16, i32, i64, string


def create_topic(port, topic, nparts, rf, configs=(), timeout_ms=15000):
    """CreateTopics v1 of one topic with replication factor rf -> (error code, message)."""
    body = (array([topic], lambda t: string(t) + i32(nparts) + i16(rf) + array([]) +
                  array(list(configs), lambda c: string(c[0]) + string(c[1]))) + i32(timeout_ms) + i8(0))
    r = kwire.call(port, 19, 1, body)
    return kwire.parse_create_topics_v1(r.d[r.p:])[topic]


def state(zc, chroot, topic, p):
    """(state dict, znode version) of a partition, or (None, -1)."""
    path = "%s/brokers/topics/%s/partitions/%d/state" % (chroot, topic, p)
    if not zc.exists(path):
        return None, -1
    data, stat = zc.get(path)
    return json.loads(data), stat.version


def assignment(zc, chroot, topic):
    """{partition: [replicas]} of /brokers/topics/<topic>."""
    data, _ = zc.get("%s/brokers/topics/%s" % (chroot, topic))
    return {int(p): r for p, r in json.loads(data)["partitions"].items()}


def uvarint(v):
    out = b""
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def cstring(s):
    """Compact string (flexible versions)."""
    e = s.encode()
    return uvarint(len(e) + 1) + e


def carray(items, enc=lambda x: x):
    """Compact array (flexible versions)."""
    return uvarint(len(items) + 1) + b"".join(enc(x) for x in items)


TAGS = b"\x00"  # an empty tagged-field section


def flex_call(port, api_key, version, body):
    """A request with header v2 (flexible): the response body after its header's tagged fields."""
    hdr = struct.pack(">hhi", api_key, version, 7) + struct.pack(">h", 5) + b"itest" + TAGS
    frame = hdr + body
    with socket.create_connection(("127.0.0.1", port), timeout=20) as s:
        s.sendall(struct.pack(">i", len(frame)) + frame)
        size = struct.unpack(">i", kwire.recv_exact(s, 4))[0]
        data = kwire.recv_exact(s, size)
    rd = FlexReader(data)
    rd.i32()  # correlation id
    rd.tags()
    return rd


class FlexReader(Reader):
    def uvarint(self):
        v = shift = 0
        while True:
            b = self.take(1)[0]
            v |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return v

    def cstring(self):
        n = self.uvarint() - 1
        return None if n < 0 else self.take(n).decode()

    def carray(self, fn):
        n = self.uvarint() - 1
        return None if n < 0 else [fn(self) for _ in range(n)]

    def tags(self):
        for _ in range(self.uvarint()):
            self.uvarint()
            self.take(self.uvarint())


def topic_id(zc, chroot, topic):
    """The 16 bytes of the topic id in /brokers/topics/<topic>."""
    import base64
    data, _ = zc.get("%s/brokers/topics/%s" % (chroot, topic))
    return base64.urlsafe_b64decode(json.loads(data)["topic_id"] + "==")


def alter_partition(port, broker_id, broker_epoch, topic, partition, leader_epoch, isr, partition_epoch,
                    version=1):
    """AlterPartition of one partition, v0/v1 by topic name, v2 by topic id (topic: its 16 bytes)
    -> (top error, partition dict)."""
    part = (i32(partition) + i32(leader_epoch) + carray(isr, i32) + (i8(0) if version >= 1 else b"") +
            i32(partition_epoch) + TAGS)
    name = (lambda t: t) if version >= 2 else cstring
    body = i32(broker_id) + i64(broker_epoch) + carray([topic], lambda t: name(t) + carray([part]) + TAGS) + TAGS
    r = flex_call(port, 56, version, body)
    r.i32()  # throttle
    top = r.i16()

    def rpart(r):
        d = dict(partition=r.i32(), error=r.i16(), leader=r.i32(), leader_epoch=r.i32(),
                 isr=r.carray(lambda r: r.i32()))
        if version >= 1:
            d["leader_recovery_state"] = r.i8()
        d["partition_epoch"] = r.i32()
        r.tags()
        return d

    def rtopic(r):
        name = r.take(16) if version >= 2 else r.cstring()
        parts = r.carray(rpart)
        r.tags()
        return name, parts
    topics = r.carray(rtopic)
    return top, (topics[0][1][0] if topics else None)


def elect_leaders(port, election_type, topic_parts, version=1):
    """ElectLeaders v1 (election_type 0 preferred, 1 unclean; topic_parts {topic: [p]} or None for all)
    -> (top error, {(topic, partition): error})."""
    if topic_parts is None:
        tp = i32(-1)
    else:
        tp = array(sorted(topic_parts.items()), lambda t: string(t[0]) + array(t[1], i32))
    r = kwire.call(port, 43, version, i8(election_type) + tp + i32(30000))
    rd = Reader(r.d[r.p:])
    rd.i32()
    top = rd.i16()
    out = {}
    for _ in range(rd.i32()):
        t = rd.string()
        for _ in range(rd.i32()):
            p, err = rd.i32(), rd.i16()
            rd.string()
            out[(t, p)] = err
    return top, out


def read_to_hws(bootstrap, topic, hws, group):
    """{partition: [(offset, int value)]} read by a consumer (check.crcs on) from the beginning of
    each partition of hws ({partition: high watermark}) up to its high watermark, at most 60 s;
    fails the test on a consumer error or a partition not read to its end."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
    from gregor import check, eq

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                  "check.crcs": True, "enable.partition.eof": True})
    got = {p: [] for p in hws}
    c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in hws])
    at_end = set(p for p in hws if hws[p] == 0)
    deadline = time.monotonic() + 60
    try:
        while len(at_end) < len(hws) and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                check(m.error().code() == -191, "consumer error: %s" % m.error())  # _PARTITION_EOF
                if m.offset() >= hws[m.partition()]:
                    at_end.add(m.partition())
                continue
            got[m.partition()].append((m.offset(), int(m.value())))
    finally:
        c.close()
    eq(sorted(at_end), sorted(hws), "partitions of %s read to their high watermark %s" % (topic, hws))
    return got

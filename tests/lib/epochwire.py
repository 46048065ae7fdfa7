"""Raw OffsetForLeaderEpoch (api key 23) client, versions 0-4, for tests 5170-5189.

v0-v3 are non-flexible; v4 flexible (compact strings and arrays, request
header v2, tagged fields after every struct).  v1 adds the answer's
LeaderEpoch, v2 the request's CurrentLeaderEpoch and ThrottleTimeMs, v3
the request's ReplicaId.  See src/proto/schema/OffsetForLeaderEpoch.api.
"""

import kwire as kw
from gregor import eq
from idemwire import compact_nstring, read_compact_string, read_uvarint, uvarint
from logdirswire import read_array, skip_tags

API_KEY = 23
UNDEFINED = (-1, -1)


def request_body(version, parts, replica_id=-1):
    """parts: [(topic, partition, current_leader_epoch, leader_epoch)], grouped by topic in order."""
    topics = []
    for t, p, cur, ep in parts:
        if not topics or topics[-1][0] != t:
            topics.append((t, []))
        topics[-1][1].append((p, cur, ep))

    def part(p):
        return kw.i32(p[0]) + (kw.i32(p[1]) if version >= 2 else b"") + kw.i32(p[2]) + \
            (uvarint(0) if version >= 4 else b"")
    body = kw.i32(replica_id) if version >= 3 else b""
    if version < 4:
        return body + kw.array(topics, lambda t: kw.string(t[0]) + kw.array(t[1], part))
    return body + uvarint(len(topics) + 1) + b"".join(
        compact_nstring(t[0]) + uvarint(len(t[1]) + 1) + b"".join(part(p) for p in t[1]) + uvarint(0)
        for t in topics) + uvarint(0)


def frame(version, body, corr=1):
    hdr = kw.i16(API_KEY) + kw.i16(version) + kw.i32(corr) + kw.string("epoch-itest")
    if version >= 4:
        hdr += uvarint(0)
    return kw.i32(len(hdr) + len(body)) + hdr + body


def parse_response(version, body):
    """-> {(topic, partition): (error, leader_epoch, end_offset)} (leader_epoch None before v1)."""
    flex = version >= 4
    r = kw.Reader(body)
    if flex:
        eq(r.take(1), b"\x00", "response header tagged fields")
    if version >= 2:
        r.i32()  # throttle
    rs = read_compact_string if flex else kw.Reader.string

    def part(r):
        err, idx = r.i16(), r.i32()
        epoch = r.i32() if version >= 1 else None
        end = r.i64()
        if flex:
            skip_tags(r)
        return idx, (err, epoch, end)

    out = {}

    def topic(r):
        name = rs(r)
        for idx, v in read_array(r, 2 if flex else 0, part):
            out[(name, idx)] = v
        if flex:
            skip_tags(r)

    read_array(r, 2 if flex else 0, topic)
    if flex:
        skip_tags(r)
    eq(r.left(), 0, "bytes left after the v%d response" % version)
    return out


def query(port, version, parts, replica_id=-1):
    s = kw.connect(port)
    try:
        s.sendall(frame(version, request_body(version, parts, replica_id)))
        corr, body = kw.recv_response(s)
        eq(corr, 1, "correlation id")
        return parse_response(version, body)
    finally:
        s.close()


def end_offset(port, topic, partition, leader_epoch, current=-1, version=4, replica_id=-1):
    """(error, leader_epoch, end_offset) of one partition."""
    return query(port, version, [(topic, partition, current, leader_epoch)], replica_id)[(topic, partition)]

"""Raw DescribeLogDirs (api key 35) client, versions 0-4, for tests 8020-8029.

v0-v1 are non-flexible (int16 strings, int32 arrays); v2+ flexible (compact
strings and arrays, request header v2, tagged fields after every struct);
v3 adds the response's top-level ErrorCode, v4 each directory's TotalBytes
and UsableBytes. See docs/schema-format.md and
src/proto/schema/DescribeLogDirs.api.
"""

import kwire as kw
from gregor import check, eq
from idemwire import compact_nstring, read_compact_string, read_uvarint, uvarint

API_KEY = 35


def request_body(version, topics):
    """topics: None (all) or [(name, [partitions])]."""
    if version < 2:
        return kw.array(topics, lambda t: kw.string(t[0]) + kw.array(t[1], kw.i32))
    if topics is None:
        return uvarint(0) + uvarint(0)
    return uvarint(len(topics) + 1) + b"".join(
        compact_nstring(t[0]) + uvarint(len(t[1]) + 1) + b"".join(kw.i32(p) for p in t[1]) + uvarint(0)
        for t in topics) + uvarint(0)


def frame(version, body, corr=1):
    hdr = kw.i16(API_KEY) + kw.i16(version) + kw.i32(corr) + kw.string("logdirs-itest")
    if version >= 2:
        hdr += uvarint(0)
    return kw.i32(len(hdr) + len(body)) + hdr + body


def skip_tags(r):
    for _ in range(read_uvarint(r)):
        read_uvarint(r)
        r.take(read_uvarint(r))


def read_array(r, version, fn):
    n = r.i32() if version < 2 else read_uvarint(r) - 1
    return None if n < 0 else [fn(r) for _ in range(n)]


def parse_response(version, body):
    """-> dict(error, dirs=[dict(error, path, total, usable, parts={(topic, p): (size, lag, future)})])."""
    flex = version >= 2
    r = kw.Reader(body)
    if flex:
        eq(r.take(1), b"\x00", "response header tagged fields")
    r.i32()  # throttle
    out = {"error": r.i16() if version >= 3 else None, "dirs": []}
    rs = read_compact_string if flex else kw.Reader.string

    def part(r):
        p = (r.i32(), r.i64(), r.i64(), r.i8())
        if flex:
            skip_tags(r)
        return p

    def topic(r):
        name = rs(r)
        parts = read_array(r, version, part)
        if flex:
            skip_tags(r)
        return name, parts

    def result(r):
        d = {"error": r.i16(), "path": rs(r), "parts": {}}
        for name, parts in read_array(r, version, topic):
            for idx, size, lag, future in parts:
                check((name, idx) not in d["parts"], "%s-%d answered twice" % (name, idx))
                d["parts"][(name, idx)] = (size, lag, future)
        d["total"], d["usable"] = (r.i64(), r.i64()) if version >= 4 else (None, None)
        if flex:
            skip_tags(r)
        return d

    out["dirs"] = read_array(r, version, result)
    if flex:
        skip_tags(r)
    eq(r.left(), 0, "bytes left after the v%d response" % version)
    return out


def describe(port, version, topics=None):
    s = kw.connect(port)
    try:
        s.sendall(frame(version, request_body(version, topics)))
        corr, body = kw.recv_response(s)
        eq(corr, 1, "correlation id")
        return parse_response(version, body)
    finally:
        s.close()

"""Raw DescribeClientQuotas (api key 48) and AlterClientQuotas (api key 49)
clients, versions 0-1, for tests 7020-7039 (no Python client has these
admin calls). v0 is non-flexible; v1 flexible (compact strings and arrays,
request header v2, tagged fields after every struct). See
src/proto/schema/DescribeClientQuotas.api and AlterClientQuotas.api.

An entity is a list of (type, name) pairs, name None for <default>:
[("client-id", "app")], [("user", None), ("client-id", "app")].
"""

import struct

import kwire as kw
from idemwire import compact_nstring, read_compact_string, read_uvarint, uvarint

DESCRIBE, ALTER = 48, 49
MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2


def _s(version, s):
    return compact_nstring(s) if version >= 1 else kw.string(s)


def _arr(version, items, enc):
    if version >= 1:
        return uvarint(len(items) + 1) + b"".join(enc(x) + uvarint(0) for x in items)
    return kw.array(items, enc)


def alter_body(version, entries, validate_only=False):
    """entries: [(entity, [(key, value, remove)])]."""
    def entity(e):
        return _s(version, e[0]) + _s(version, e[1])

    def op(o):
        return _s(version, o[0]) + struct.pack(">d", o[1]) + kw.i8(1 if o[2] else 0)

    def entry(en):
        return _arr(version, en[0], entity) + _arr(version, en[1], op)
    body = _arr(version, entries, entry) + kw.i8(1 if validate_only else 0)
    return body + (uvarint(0) if version >= 1 else b"")


def describe_body(version, components, strict=False):
    """components: [(entity_type, match_type, match)]."""
    def comp(c):
        return _s(version, c[0]) + kw.i8(c[1]) + _s(version, c[2])
    body = _arr(version, components, comp) + kw.i8(1 if strict else 0)
    return body + (uvarint(0) if version >= 1 else b"")


def call(port, api_key, version, body, client_id="quota-itest"):
    hdr = kw.i16(api_key) + kw.i16(version) + kw.i32(7) + kw.string(client_id)
    if version >= 1:
        hdr += uvarint(0)
    s = kw.connect(port)
    try:
        s.sendall(kw.i32(len(hdr) + len(body)) + hdr + body)
        corr, body = kw.recv_response(s)
    finally:
        s.close()
    r = kw.Reader(body)
    if version >= 1:
        assert r.take(1) == b"\x00", "response header tagged fields"
    return r


def _skip_tags(r):
    for _ in range(read_uvarint(r)):
        read_uvarint(r)
        r.take(read_uvarint(r))


def _rarr(r, version, fn):
    n = r.i32() if version < 1 else read_uvarint(r) - 1
    if n < 0:
        return None
    out = []
    for _ in range(n):
        out.append(fn(r))
        if version >= 1:
            _skip_tags(r)
    return out


def _rstr(r, version):
    return read_compact_string(r) if version >= 1 else r.string()


def alter(port, entries, version=1, validate_only=False):
    """-> [(error, message, entity)] in request order."""
    r = call(port, ALTER, version, alter_body(version, entries, validate_only))
    r.i32()

    def entity(r):
        return (_rstr(r, version), _rstr(r, version))

    def entry(r):
        err = r.i16()
        msg = _rstr(r, version)
        return (err, msg, _rarr(r, version, entity))
    return _rarr(r, version, entry)


def describe(port, components, strict=False, version=1):
    """-> (error, message, {tuple(sorted(entity)): {key: value}} or None)."""
    r = call(port, DESCRIBE, version, describe_body(version, components, strict))
    r.i32()
    err = r.i16()
    msg = _rstr(r, version)

    def entity(r):
        return (_rstr(r, version), _rstr(r, version))

    def value(r):
        k = _rstr(r, version)
        return (k, struct.unpack(">d", r.take(8))[0])

    def entry(r):
        return (tuple(sorted(_rarr(r, version, entity), key=lambda e: e[0])), dict(_rarr(r, version, value)))
    entries = _rarr(r, version, entry)
    return err, msg, (None if entries is None else dict(entries))


def set_quota(port, entity, **values):
    """Sets key=value pairs on entity (None removes the key); asserts success."""
    res = alter(port, [(entity, [(k, v or 0.0, v is None) for k, v in values.items()])])
    assert res[0][0] == 0, "AlterClientQuotas failed: %r" % (res,)

"""DescribeClientQuotas and AlterClientQuotas (KIP-546) against the real broker.

- ApiVersions advertises DescribeClientQuotas 0-1 and AlterClientQuotas 0-1.
- Raw protocol, v0 and v1 (flexible): quotas set on a client-id, a user, a
  user + client-id, the <default> client-id and the <default> user are
  described back exactly (keys and values), by exact name, by default, by
  "any specified name", with and without strict; a value of one key is
  removed (Remove true) and the rest stays; removing every key drops the
  entity; validate_only changes nothing.
- Bad input gets INVALID_REQUEST for its entry only: unknown key, negative
  or zero value, a fractional byte rate, unknown entity type, a component
  given twice, an empty entity; DescribeClientQuotas with an unknown
  entity type or match type gets INVALID_REQUEST.
- The settings survive a clean restart and a kill -9 (written with
  durable_replace before the answer).
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, check, eq, log, main  # noqa: E402
import kwire as kw  # noqa: E402
import quotawire as qw  # noqa: E402

INVALID_REQUEST = 42
CLIENT = [("client-id", "app-1")]
USER = [("user", "ANONYMOUS")]
USER_CLIENT = [("user", "ANONYMOUS"), ("client-id", "app-1")]
DEF_CLIENT = [("client-id", None)]
DEF_USER = [("user", None)]


def key(entity):
    return tuple(sorted(entity, key=lambda e: e[0]))


def check_versions(b):
    s = kw.connect(b.port)
    try:
        s.sendall(kw.request(18, 0, 1, b""))
        _, body = kw.recv_response(s)
    finally:
        s.close()
    r = kw.Reader(body)
    eq(r.i16(), 0, "ApiVersions error")
    keys = {k: (lo, hi) for k, lo, hi in r.array(lambda r: (r.i16(), r.i16(), r.i16()))}
    eq(keys.get(48), (0, 1), "DescribeClientQuotas versions")
    eq(keys.get(49), (0, 1), "AlterClientQuotas versions")


def set_all(b, version):
    res = qw.alter(b.port, [
        (CLIENT, [("producer_byte_rate", 1048576, False), ("consumer_byte_rate", 2097152, False)]),
        (USER, [("request_percentage", 12.5, False)]),
        (USER_CLIENT, [("producer_byte_rate", 4096, False)]),
        (DEF_CLIENT, [("consumer_byte_rate", 500000, False)]),
        (DEF_USER, [("producer_byte_rate", 777, False)]),
    ], version=version)
    eq([e[0] for e in res], [0] * 5, "AlterClientQuotas v%d errors" % version)
    eq(res[0][2], CLIENT, "entity echoed back")


WANT = {
    key(CLIENT): {"producer_byte_rate": 1048576.0, "consumer_byte_rate": 2097152.0},
    key(USER): {"request_percentage": 12.5},
    key(USER_CLIENT): {"producer_byte_rate": 4096.0},
    key(DEF_CLIENT): {"consumer_byte_rate": 500000.0},
    key(DEF_USER): {"producer_byte_rate": 777.0},
}


def check_describe(b, version):
    err, _, got = qw.describe(b.port, [], version=version)
    eq(err, 0, "describe all error")
    eq(got, WANT, "every quota (v%d)" % version)
    _, _, got = qw.describe(b.port, [("client-id", qw.MATCH_EXACT, "app-1")], version=version)
    eq(got, {k: WANT[k] for k in (key(CLIENT), key(USER_CLIENT))}, "client-id app-1, not strict")
    _, _, got = qw.describe(b.port, [("client-id", qw.MATCH_EXACT, "app-1")], strict=True, version=version)
    eq(got, {key(CLIENT): WANT[key(CLIENT)]}, "client-id app-1, strict")
    _, _, got = qw.describe(b.port, [("client-id", qw.MATCH_DEFAULT, None)], version=version)
    eq(got, {key(DEF_CLIENT): WANT[key(DEF_CLIENT)]}, "default client-id")
    _, _, got = qw.describe(b.port, [("user", qw.MATCH_EXACT, None)], strict=True, version=version)
    eq(got, {key(DEF_USER): WANT[key(DEF_USER)]}, "exact null = default user")
    _, _, got = qw.describe(b.port, [("user", qw.MATCH_SPECIFIED, None)], version=version)
    eq(got, {k: WANT[k] for k in (key(USER), key(USER_CLIENT))}, "any named user")
    _, _, got = qw.describe(b.port, [("client-id", qw.MATCH_EXACT, "nobody")], version=version)
    eq(got, {}, "no match")


def check_remove(b):
    qw.set_quota(b.port, CLIENT, consumer_byte_rate=None)
    _, _, got = qw.describe(b.port, [("client-id", qw.MATCH_EXACT, "app-1")], strict=True)
    eq(got, {key(CLIENT): {"producer_byte_rate": 1048576.0}}, "after removing consumer_byte_rate")
    qw.set_quota(b.port, USER_CLIENT, producer_byte_rate=None)
    _, _, got = qw.describe(b.port, [("user", qw.MATCH_SPECIFIED, None), ("client-id", qw.MATCH_SPECIFIED, None)])
    eq(got, {}, "user+client entity gone with its last key")
    res = qw.alter(b.port, [(DEF_USER, [("producer_byte_rate", 1, False)])], validate_only=True)
    eq(res[0][0], 0, "validate_only error")
    _, _, got = qw.describe(b.port, [("user", qw.MATCH_DEFAULT, None)])
    eq(got, {key(DEF_USER): {"producer_byte_rate": 777.0}}, "validate_only changed nothing")


def check_invalid(b):
    bad = [
        (CLIENT, [("producer_byte_rat", 10, False)]),
        (CLIENT, [("producer_byte_rate", -5, False)]),
        (CLIENT, [("consumer_byte_rate", 0, False)]),
        (CLIENT, [("producer_byte_rate", 10.5, False)]),
        ([("group", "x")], [("producer_byte_rate", 10, False)]),
        ([("client-id", "a"), ("client-id", "b")], [("producer_byte_rate", 10, False)]),
        ([], [("producer_byte_rate", 10, False)]),
        (CLIENT, [("request_percentage", -1.0, False)]),
    ]
    for version in (0, 1):
        res = qw.alter(b.port, bad + [([("client-id", "ok")], [("request_percentage", 50, False)])],
                       version=version)
        eq([e[0] for e in res], [INVALID_REQUEST] * len(bad) + [0], "errors per entry (v%d)" % version)
        check(all(e[1] for e in res[:-1]), "every rejected entry says why")
    _, _, got = qw.describe(b.port, [("client-id", qw.MATCH_EXACT, "app-1")], strict=True)
    eq(got, {key(CLIENT): {"producer_byte_rate": 1048576.0}}, "rejected entries changed nothing")
    err, msg, got = qw.describe(b.port, [("group", qw.MATCH_EXACT, "x")])
    eq((err, got), (INVALID_REQUEST, None), "describe with an unknown entity type")
    err, msg, got = qw.describe(b.port, [("user", 7, None)])
    eq(err, INVALID_REQUEST, "describe with an unknown match type")
    qw.set_quota(b.port, [("client-id", "ok")], request_percentage=None)


def test():
    with Broker() as b:
        check_versions(b)
        for version in (0, 1):
            set_all(b, version)
            check_describe(b, version)
        check_remove(b)
        check_invalid(b)
        _, _, before = qw.describe(b.port, [])
        eq(len(before), 4, "entities before the restart")
        b.restart()
        _, _, got = qw.describe(b.port, [])
        eq(got, before, "quotas after a clean restart")
        qw.set_quota(b.port, [("client-id", "after \u00e9 space")], producer_byte_rate=123)
        b.kill9()
        b.start()
        _, _, got = qw.describe(b.port, [("client-id", qw.MATCH_EXACT, "after \u00e9 space")])
        eq(got, {(("client-id", "after \u00e9 space"),): {"producer_byte_rate": 123.0}}, "quota set just before kill -9")
        log("quotas described, removed, rejected and kept across restarts")


if __name__ == "__main__":
    main(test)

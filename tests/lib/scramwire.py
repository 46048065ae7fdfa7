"""Raw DescribeUserScramCredentials (api key 50) and
AlterUserScramCredentials (api key 51) v0 clients (KIP-554; flexible:
compact strings and arrays, request header v2), for the 608x tests and
because the Debian clients (librdkafka 2.0.2, confluent_kafka 1.7,
kafka-python 2.0) have no call for them. See
src/proto/schema/DescribeUserScramCredentials.api and
AlterUserScramCredentials.api.

Mechanisms are Kafka's numbers: 1 SCRAM-SHA-256, 2 SCRAM-SHA-512. The
client sends the salt and PBKDF2(password, salt, iterations), as KIP-554
specifies; salted_password() computes that.
"""

import hashlib
import os

import kwire as kw
from idemwire import compact_nstring, read_uvarint, uvarint
from quotawire import _arr, _rarr, _rstr

DESCRIBE, ALTER = 50, 51
SHA256, SHA512 = 1, 2
MECH_NAMES = {SHA256: "SCRAM-SHA-256", SHA512: "SCRAM-SHA-512"}


def call(port, api_key, body):
    """One flexible v0 request (header v2) on a new connection; a reader past the response header."""
    hdr = kw.i16(api_key) + kw.i16(0) + kw.i32(7) + kw.string("scram-itest") + uvarint(0)
    s = kw.connect(port)
    try:
        s.sendall(kw.i32(len(hdr) + len(body)) + hdr + body)
        _, body = kw.recv_response(s)
    finally:
        s.close()
    r = kw.Reader(body)
    assert r.take(1) == b"\x00", "response header tagged fields"
    return r


def _cbytes(b):
    return uvarint(len(b) + 1) + b


def salted_password(mech, password, salt, iterations):
    return hashlib.pbkdf2_hmac("sha256" if mech == SHA256 else "sha512", password.encode(), salt, iterations)


def upsertion(name, mech, password, iterations=4096, salt=None, salted=None):
    salt = os.urandom(32) if salt is None else salt
    if salted is None:
        salted = salted_password(mech, password, salt, iterations)
    return (name, mech, iterations, salt, salted)


def alter(port, deletions=(), upsertions=()):
    """deletions: [(name, mech)]; upsertions: [upsertion(...)]. Returns [(user, error_code, message)]."""
    def dele(d):
        return compact_nstring(d[0]) + kw.i8(d[1])

    def ups(u):
        return compact_nstring(u[0]) + kw.i8(u[1]) + kw.i32(u[2]) + _cbytes(u[3]) + _cbytes(u[4])
    body = _arr(1, list(deletions), dele) + _arr(1, list(upsertions), ups) + uvarint(0)
    r = call(port, ALTER, body)
    r.i32()

    def result(r):
        return (_rstr(r, 1), r.i16(), _rstr(r, 1))
    return _rarr(r, 1, result)


def describe(port, users=None):
    """users None: every user. Returns (error_code, [(user, error_code, message, [(mech, iterations)])])."""
    if users is None:
        body = uvarint(0) + uvarint(0)
    else:
        body = _arr(1, list(users), compact_nstring) + uvarint(0)
    r = call(port, DESCRIBE, body)
    r.i32()
    err = r.i16()
    _rstr(r, 1)

    def info(r):
        return (r.i8(), r.i32())

    def result(r):
        return (_rstr(r, 1), r.i16(), _rstr(r, 1), _rarr(r, 1, info))
    return err, _rarr(r, 1, result)


__all__ = ["alter", "describe", "upsertion", "salted_password", "SHA256", "SHA512", "read_uvarint"]

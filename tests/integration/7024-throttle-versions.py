"""How a client over its quota is throttled, per version (KIP-219), raw.

- producer_byte_rate 1000 B/s on client-id "old": a 12 KB Produce v3 (older
  than KIP-219's v6) is answered only after its throttle time, and the
  answer carries ThrottleTimeMs (about 2 s: 12 KB at 1000 B/s over the
  10 s the rate is measured over).
- The same on client-id "new" with Produce v7: answered at once with
  ThrottleTimeMs > 0, and the connection is muted: an ApiVersions request
  sent right after on that connection is answered only after the throttle
  time, while a connection of another client is answered at once.
- request_percentage on client-id "busy": a Metadata v8 answer (KIP-219
  version) carries ThrottleTimeMs > 0 and the next request on that
  connection waits.
- acks=0 produce over the quota: no answer, but the connection is muted.
- A clean shutdown while a v3 answer is held back exits 0 at once (the
  held request is freed: under ASan, no leak).
"""

import os
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, check, eq, log, main  # noqa: E402
import kwire as kw  # noqa: E402
import quotawire as qw  # noqa: E402

from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402


def send(s, api_key, version, corr, body, client_id):
    s.sendall(kw.request(api_key, version, corr, body, client_id=client_id))


def produce_body(acks=1):
    batch = kw.record_batch([(None, b"x" * 1000)] * 12)
    return kw.produce_v3_body("thr", 0, batch, acks=acks)


def api_versions_within(s, timeout_s, client_id):
    """Sends ApiVersions v0; returns seconds to the answer, or None if none came within timeout_s."""
    t0 = time.monotonic()
    send(s, 18, 0, 99, b"", client_id)
    s.settimeout(timeout_s)
    try:
        corr, _ = kw.recv_response(s)
    except socket.timeout:
        return None
    eq(corr, 99, "ApiVersions correlation id")
    return time.monotonic() - t0


def check_old(b):
    s = kw.connect(b.port)
    t0 = time.monotonic()
    send(s, 0, 3, 1, produce_body(), "old")
    _, body = kw.recv_response(s)
    waited = time.monotonic() - t0
    thr = kw.Reader(body[-4:]).i32()
    log("Produce v3: ThrottleTimeMs %d, answered after %.2f s" % (thr, waited))
    check(1000 <= thr <= 4000, "ThrottleTimeMs %d of a 12 KB produce at 1000 B/s" % thr)
    check(waited >= 0.8 * thr / 1000.0, "a v3 answer held back for its throttle time (%.2f s)" % waited)
    s.close()


def check_new(b):
    s = kw.connect(b.port)
    t0 = time.monotonic()
    send(s, 0, 7, 1, produce_body(), "new")
    _, body = kw.recv_response(s)
    waited = time.monotonic() - t0
    thr = kw.Reader(body[-4:]).i32()
    log("Produce v7: ThrottleTimeMs %d, answered after %.2f s" % (thr, waited))
    check(1000 <= thr <= 4000, "ThrottleTimeMs %d of a 12 KB produce at 1000 B/s" % thr)
    check(waited < 0.5 * thr / 1000.0, "a v7 answer not held back (%.2f s)" % waited)
    other = kw.connect(b.port)
    got = api_versions_within(other, 5, "someone-else")
    check(got is not None and got < 0.5 * thr / 1000.0, "another client answered at once (%r s)" % got)
    got = api_versions_within(s, 10, "new")
    log("ApiVersions on the muted connection answered after %r s" % got)
    check(got is not None and got >= 0.7 * thr / 1000.0 - waited, "the throttled connection muted (%r s)" % got)
    s.close()
    other.close()


def check_acks0(b):
    s = kw.connect(b.port)
    send(s, 0, 7, 1, produce_body(acks=0), "zero")
    got = api_versions_within(s, 0.7, "zero")
    check(got is None, "a connection over its quota with acks=0 is muted (answered after %r s)" % got)
    s.close()


def check_request_percentage(b):
    s = kw.connect(b.port)
    send(s, 3, 8, 1, kw.i32(-1) + kw.i8(0) + kw.i8(0) + kw.i8(0), "busy")
    _, body = kw.recv_response(s)
    thr = kw.Reader(body[:4]).i32()
    log("Metadata v8 of client busy: ThrottleTimeMs %d" % thr)
    check(thr > 0, "request_percentage throttles Metadata")
    got = api_versions_within(s, 0.7, "busy")
    check(got is None, "the busy client's connection muted (answered after %r s)" % got)
    s.close()


def test():
    with Broker() as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        admin.create_topics([NewTopic("thr", 1, 1)])["thr"].result(10)
        for client in ("old", "new", "zero"):
            qw.set_quota(b.port, [("client-id", client)], producer_byte_rate=1000)
        qw.set_quota(b.port, [("client-id", "busy")], request_percentage=0.000001)
        check_old(b)
        check_new(b)
        check_acks0(b)
        check_request_percentage(b)
        s = kw.connect(b.port)
        send(s, 0, 3, 2, produce_body(), "old")
        s.settimeout(0.5)
        try:
            kw.recv_response(s)
            check(False, "a v3 produce far over its quota answered within 0.5 s")
        except socket.timeout:
            pass
        t0 = time.monotonic()
        eq(b.stop(), 0, "exit status of a shutdown with a held answer")
        check(time.monotonic() - t0 < 5, "shutdown not held by the throttled answer")
        s.close()


if __name__ == "__main__":
    main(test)

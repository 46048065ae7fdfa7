"""Malformed input over raw sockets. Each case uses its own connection; after
each, the broker process is still alive and a new connection doing a normal
ApiVersions v0 + Metadata v1 gets correct answers (Redis protocol.tcl style).

Cases and the answer Kafka gives (DESIGN.md decision 1, PROTOCOL-NOTES 5.3):
  frame size 200 MiB / negative size / HTTP text   -> connection closed, no reply
  truncated frame then close                       -> (nothing to answer)
  random garbage                                   -> (anything but a crash)
  unknown api key 999                              -> connection closed, no reply
  ApiVersions v99                                  -> v0 body: error 35, key 18 listed; socket stays open
  Metadata v0/v1 with count -7 / 0x7fffffff        -> connection closed (or an answer), no crash
  Produce v3, batch length too long / too short,
  wrong CRC                                        -> partition error CORRUPT_MESSAGE (2), nothing appended,
  record count lying, truncated batch              -> CORRUPT_MESSAGE or INVALID_RECORD (87),
                                                      connection stays usable
"""

import os
import random
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, eq, check, log, main, wait_until  # noqa: E402
import kwire  # noqa: E402
from kwire import i16, i32, request  # noqa: E402

API_PRODUCE, API_METADATA, API_VERSIONS = 0, 3, 18
CORRUPT_MESSAGE, UNSUPPORTED_VERSION, INVALID_RECORD = 2, 35, 87
TOPIC = "itest-malformed"

corr = [100]


def next_corr():
    corr[0] += 1
    return corr[0]


def api_versions(sock):
    c = next_corr()
    sock.sendall(request(API_VERSIONS, 0, c, kwire.api_versions_v0_body()))
    got_c, body = kwire.recv_response(sock)
    eq(got_c, c, "ApiVersions v0 correlation id")
    return kwire.parse_api_versions_v0(body)


def metadata(sock, topics=None):
    c = next_corr()
    sock.sendall(request(API_METADATA, 1, c, kwire.metadata_v1_body(topics)))
    got_c, body = kwire.recv_response(sock)
    eq(got_c, c, "Metadata v1 correlation id")
    return kwire.parse_metadata_v1(body)


def healthy(b, after):
    """The broker survived `after`: alive, and a fresh connection works."""
    check(b.alive(), "broker process died after: %s" % after)
    with kwire.connect(b.port) as s:
        err, keys, left = api_versions(s)
        eq(err, 0, "ApiVersions v0 error after %s" % after)
        eq(left, 0, "bytes left after ApiVersions v0 body")
        for k in (API_PRODUCE, 1, 2, API_METADATA, API_VERSIONS):
            check(k in keys, "ApiVersions after %s does not list api key %d: %r" % (after, k, sorted(keys)))
        md = metadata(s)
        eq([(h, p) for _id, h, p, _rack in md["brokers"]], [("127.0.0.1", b.port)],
           "Metadata v1 brokers after %s" % after)
        eq(md["left"], 0, "bytes left after Metadata v1 body")
    log("healthy after: %s" % after)


def expect_closed(b, data, what, timeout_s=5.0):
    """Send data; the broker must close this connection without a reply."""
    with kwire.connect(b.port) as s:
        try:
            s.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass
        closed, got = kwire.wait_closed(s, timeout_s)
        check(closed, "%s: connection still open after %.0fs (want closed)" % (what, timeout_s))
        eq(got, b"", "%s: bytes sent back before closing" % what)
    healthy(b, what)


def send_and_close(b, data, what):
    with kwire.connect(b.port) as s:
        try:
            s.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass
    healthy(b, what)


def case_api_versions_99(b):
    with kwire.connect(b.port) as s:
        # Unknown future version: the body may be anything (here flexible-looking bytes).
        s.sendall(request(API_VERSIONS, 99, 4242, b"\x00\x05gregor\x001.0\x00\x00\x00"))
        c, body = kwire.recv_response(s)
        eq(c, 4242, "ApiVersions v99 correlation id (response header v0)")
        err, keys, left = kwire.parse_api_versions_v0(body)
        eq(err, UNSUPPORTED_VERSION, "ApiVersions v99 error code")
        check(API_VERSIONS in keys, "ApiVersions v99 reply does not list key 18: %r" % keys)
        lo, hi = keys[API_VERSIONS]
        eq(lo, 0, "ApiVersions min version")
        check(hi >= 3, "ApiVersions max version %d < 3" % hi)
        eq(left, 0, "bytes after the v0 ApiVersions body")
        # The same connection still works.
        err, keys, _ = api_versions(s)
        eq(err, 0, "ApiVersions v0 on the same connection after v99")
    healthy(b, "ApiVersions v99")


def case_unknown_api(b):
    expect_closed(b, request(999, 0, 7, b""), "unknown api key 999")
    expect_closed(b, request(-1, 0, 7, b""), "api key -1")


def case_metadata_negative(b):
    for version, count in ((1, -7), (0, -7), (1, 0x7FFFFFFF), (0, -2147483648)):
        what = "Metadata v%d with topic count %d" % (version, count)
        with kwire.connect(b.port) as s:
            s.sendall(request(API_METADATA, version, 55, i32(count) + kwire.string(TOPIC)))
            closed, got = kwire.wait_closed(s, 5.0)
            if not closed:
                # An answer is acceptable only if it is a well-formed reply to our request.
                check(len(got) >= 8, "%s: connection open, no reply after 5s" % what)
                eq(struct.unpack(">i", got[4:8])[0], 55, "%s: reply correlation id" % what)
        healthy(b, what)


def produce(s, records):
    c = next_corr()
    s.sendall(request(API_PRODUCE, 3, c, kwire.produce_v3_body(TOPIC, 0, records)))
    got_c, body = kwire.recv_response(s)
    eq(got_c, c, "Produce v3 correlation id")
    res = kwire.parse_produce_v3(body)
    eq(sorted(res), [(TOPIC, 0)], "Produce v3 response partitions")
    return res[(TOPIC, 0)]


def case_produce_corrupt(b):
    with kwire.connect(b.port) as s:
        # Auto-create the topic through Metadata, then a valid batch lands at 0.
        def ready():
            t = metadata(s, [TOPIC])["topics"].get(TOPIC)
            return t is not None and t[0] == 0 and [p[0] for p in t[1]] == [0]
        wait_until(ready, 10, "topic %s auto-created with 1 partition" % TOPIC)
        good = kwire.record_batch([(b"k0", b"good-0"), (b"k1", b"good-1")])
        eq(produce(s, good), (0, 0), "(error, base offset) of a valid batch")

        bl = struct.unpack(">i", good[8:12])[0]
        too_long = good[:8] + i32(bl + 100) + good[12:]
        too_short = good[:8] + i32(bl - 10) + good[12:]
        bad_crc = bytearray(good)
        bad_crc[17] ^= 0x01
        lying_count = kwire.record_batch([(b"k", b"one record")], record_count=5)
        # The first three must be CORRUPT_MESSAGE. For the last two Kafka's
        # answer depends on its version: CORRUPT_MESSAGE, or INVALID_RECORD
        # (87) since KIP-467; either is right, success is not.
        cases = [("batchLength 100 bytes too long", too_long, {CORRUPT_MESSAGE}),
                 ("batchLength 10 bytes too short", too_short, {CORRUPT_MESSAGE}),
                 ("wrong CRC", bytes(bad_crc), {CORRUPT_MESSAGE}),
                 ("recordCount 5 for 1 record (valid CRC)", lying_count, {CORRUPT_MESSAGE, INVALID_RECORD}),
                 ("truncated batch header (30 bytes)", good[:30], {CORRUPT_MESSAGE, INVALID_RECORD})]
        for what, recs, want in cases:
            err, _base = produce(s, recs)
            check(err in want, "Produce %s: partition error code %d, want %s" % (what, err, sorted(want)))
            log("produce %s -> error %d" % (what, err))
        # Nothing corrupt was appended: the next valid batch lands at offset 2.
        eq(produce(s, kwire.record_batch([(b"k2", b"good-2")])), (0, 2),
           "(error, base offset) of a valid batch after the corrupt ones")
    healthy(b, "corrupt Produce batches")


def test():
    with Broker(overrides={"auto.create.topics.enable": "true", "num.partitions": "1"}) as b:
        healthy(b, "start")
        expect_closed(b, i32(200 << 20) + b"\x00\x12\x00\x00" + b"x" * 100, "frame size 200 MiB")
        expect_closed(b, i32(-5) + b"\x00" * 16, "frame size -5")
        expect_closed(b, b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", "HTTP request (size 0x47455420)")
        send_and_close(b, i32(100) + b"\x00\x12\x00\x00\x00\x00", "truncated frame, then close")
        send_and_close(b, request(API_VERSIONS, 0, 1, b"")[:7], "truncated header, then close")
        rnd = random.Random(9001)
        for n in range(5):
            junk = bytes(rnd.randrange(256) for _ in range(1024))
            send_and_close(b, junk, "1 KiB of random bytes #%d" % n)
        # Frame-sized garbage: a plausible size, then random bytes.
        junk = bytes(rnd.randrange(256) for _ in range(200))
        send_and_close(b, i32(len(junk)) + junk, "200-byte frame of random bytes")
        case_unknown_api(b)
        case_api_versions_99(b)
        case_metadata_negative(b)
        case_produce_corrupt(b)
        # A request with a header but an empty body where a body is required.
        send_and_close(b, request(API_METADATA, 1, 9, b""), "Metadata v1 with no body")
        healthy(b, "all cases")


main(test)

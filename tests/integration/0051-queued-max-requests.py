"""queued.max.requests bounds the requests one connection has read but not
yet answered (raw protocol, tests/lib/kwire.py).  One connection pipelines
two long-poll Fetch requests (offset 0 of an empty partition, max wait
2 s) and then a Produce of one record:
  * queued.max.requests=2: the Produce is not read while both fetches are
    parked, so the first fetch times out empty, and only then is the record
    appended (at offset 0);
  * the default (500): the Produce is read at once, its append wakes the
    parked fetches, and the first fetch answers with the record.
Then the broker still serves a fresh connection (ApiVersions)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, eq, log, main  # noqa: E402
import kwire  # noqa: E402
from kwire import i8, i32, i64, string, array  # noqa: E402

TOPIC = "itest-0051"


def fetch_v4_body(topic, offset, max_wait_ms):
    part = lambda p: i32(p) + i64(offset) + i32(1 << 20)  # noqa: E731
    return (i32(-1) + i32(max_wait_ms) + i32(1) + i32(1 << 20) + i8(0) +
            array([topic], lambda t: string(t) + array([0], part)))


def parse_fetch_v4(body):
    """-> {(topic, partition): (error_code, high_watermark, records_bytes)}"""
    r = kwire.Reader(body)
    r.i32()  # throttle_time_ms
    out = {}

    def part(r):
        idx, err, hw = r.i32(), r.i16(), r.i64()
        r.i64()  # last_stable_offset
        r.array(lambda r: (r.i64(), r.i64()))
        n = r.i32()
        return idx, err, hw, r.take(n) if n > 0 else b""

    for name, parts in r.array(lambda r: (r.string(), r.array(part))):
        for idx, err, hw, recs in parts:
            out[(name, idx)] = (err, hw, recs)
    return out


def pipeline(b):
    """Fetch, Fetch, Produce on one connection; -> (fetch1, fetch2, produce) answers."""
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(15)
    port = int(b.bootstrap.rsplit(":", 1)[1])
    s = kwire.connect(port)
    batch = kwire.record_batch([(None, b"late")])
    s.sendall(kwire.request(1, 4, 1, fetch_v4_body(TOPIC, 0, 2000)) +
              kwire.request(1, 4, 2, fetch_v4_body(TOPIC, 0, 2000)) +
              kwire.request(0, 3, 3, kwire.produce_v3_body(TOPIC, 0, batch, acks=1)))
    got = []
    for corr in (1, 2, 3):
        c, body = kwire.recv_response(s)
        eq(c, corr, "correlation id")
        got.append(parse_fetch_v4(body)[(TOPIC, 0)] if corr < 3 else kwire.parse_produce_v3(body)[(TOPIC, 0)])
    s.close()
    s = kwire.connect(port)
    s.sendall(kwire.request(18, 0, 9, kwire.api_versions_v0_body()))
    eq(kwire.recv_response(s)[0], 9, "fresh connection answered")
    s.close()
    return got


def test():
    with Broker(overrides={"queued.max.requests": "2"}) as b:
        f1, f2, prod = pipeline(b)
        eq((f1[0], f1[1], f1[2]), (0, 0, b""), "first fetch with 2 requests queued: empty after its wait")
        eq(prod, (0, 0), "produce read after the first fetch was answered")
        log("queued.max.requests=2: the third request waited for the first answer")
    with Broker() as b:
        f1, f2, prod = pipeline(b)
        eq((f1[0], f1[1], len(f1[2]) > 0), (0, 1, True), "first fetch with the default: woken by the produce")
        eq(prod, (0, 0), "produce")
        log("default queued.max.requests: the produce was read at once")


main(test)

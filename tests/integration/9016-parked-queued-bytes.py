#!/usr/bin/python3
"""9016: a parked fetch's memory counts in queued.max.request.bytes.

queued.max.request.bytes is 4 MiB.  One client parks a Fetch (MaxWaitMs
3 s) naming one idle partition PARTS times: its frame is about 1 MiB, the
state it holds while parked (response arrays and partition watches) several
MiB more.  Another client then sends a 512 KiB produce request, a frame
larger than the 64 KiB read buffer, which the broker starts only when it
fits under the limit.  So it must be answered only after the parked fetch
is (by its timeout): the produce answer arrives with the fetch answer
already there.  (The old broker counted only the frame: the produce was
answered at once while the fetch stayed parked.)  Both answers are
correct, and another small request is served meanwhile (a connection with
nothing in flight may always send one that fits its read buffer).
"""
import os
import select
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import kwire as kw  # noqa: E402
from gregor import Broker, check, eq, log, main  # noqa: E402

PARTS = 40000


def fetch_body(topic, n, max_wait_ms):
    part = kw.i32(0) + kw.i64(1) + kw.i32(1 << 20)
    return (kw.i32(-1) + kw.i32(max_wait_ms) + kw.i32(1) + kw.i32(1 << 20) + kw.i8(0) +
            kw.array([topic], lambda t: kw.string(t) + kw.i32(n) + part * n))


def produce(s, corr, topic, size):
    s.sendall(kw.request(0, 3, corr, kw.produce_v3_body(topic, 0, kw.record_batch([(b"k", b"p" * size)]))))


def test():
    with Broker(props={"queued.max.request.bytes": 4 << 20, "num.partitions": 1}) as b:
        s = kw.connect(b.port)
        for topic in ("idle", "busy"):
            produce(s, 1, topic, 10)  # auto-creates the topic
            eq(kw.parse_produce_v3(kw.recv_response(s)[1])[(topic, 0)][0], 0, "produce to %s" % topic)
        s.close()
        f = kw.connect(b.port, timeout_s=30)
        f.sendall(kw.request(1, 4, 7, fetch_body("idle", PARTS, 3000)))
        # let it park: a small request on another connection is answered meanwhile
        c = kw.connect(b.port)
        c.sendall(kw.request(18, 0, 2, kw.api_versions_v0_body()))
        eq(kw.recv_response(c)[0], 2, "ApiVersions while the fetch is parked")
        c.close()
        eq(select.select([f], [], [], 0.3)[0], [], "the fetch is parked (offset 1 has no data yet)")
        p = kw.connect(b.port, timeout_s=30)
        produce(p, 9, "busy", 512 << 10)
        corr, body = kw.recv_response(p)
        fetch_done = select.select([f], [], [], 0)[0] == [f]
        eq(kw.parse_produce_v3(body)[("busy", 0)][0], 0, "the large produce is answered")
        check(fetch_done, "the large produce waited for the parked fetch's memory to be released")
        corr, body = kw.recv_response(f)
        eq(corr, 7, "fetch answered (timeout)")
        log("fetch answer %d bytes; produce served after it" % len(body))
        for x in (f, p):
            x.close()
        eq(b.stop(), 0, "exit status")


if __name__ == "__main__":
    main(test)

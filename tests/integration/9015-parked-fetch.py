#!/usr/bin/python3
# itest: alone (it samples the broker's RSS under its own load only)
"""9015: parked long-poll fetches cost nothing while other partitions are busy.

PARKED raw connections each park a Fetch v4 (MinBytes 1, MaxWaitMs 60 s)
on their own partition of an idle topic.  Then PRODUCES acks=1 produce
requests go to another topic.  Checks:
  - the broker's RSS grows by less than RSS_GROWTH_MAX_MB meanwhile (the
    old broker filled every parked fetch again on every append, each time
    into fresh arena memory: hundreds of MiB here);
  - no parked fetch is answered by appends to other partitions;
  - one record appended to idle partition K answers exactly the fetch
    parked on K, at once, with that record; the others stay parked;
  - a client that closes its connection with a fetch parked leaves nothing
    behind, and SIGTERM exits 0 with fetches still parked.
"""
import os
import select
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import kwire as kw  # noqa: E402
from gregor import Broker, check, eq, log, main  # noqa: E402

from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

SAN = "san" in os.environ.get("BUILD", "") or "san" in os.environ.get("GREGOR_BIN", "")
PARKED = 50
PRODUCES = 20000
RSS_GROWTH_MAX_MB = 16  # not checked under ASan: its quarantine keeps freed requests resident
K = 7


def rss_mb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return -1.0


def fetch_body(topic, partition, offset, max_wait_ms=60000):
    return (kw.i32(-1) + kw.i32(max_wait_ms) + kw.i32(1) + kw.i32(1 << 20) + kw.i8(0) +
            kw.array([topic], lambda t: kw.string(t) + kw.array(
                [partition], lambda p: kw.i32(p) + kw.i64(offset) + kw.i32(1 << 20))))


def answered(socks):
    readable, _, _ = select.select(socks, [], [], 0)
    return readable


def produce_many(port, n):
    s = kw.connect(port)
    batch = kw.record_batch([(b"k", b"v" * 100)])
    body = kw.produce_v3_body("busy", 0, batch, acks=1)
    try:
        for i in range(0, n, 2):  # two at a time: about one append per loop iteration
            for j in range(2):
                s.sendall(kw.request(0, 3, i + j, body))
            for j in range(2):
                kw.recv_response(s)
    finally:
        s.close()


def test():
    with Broker(props={"num.partitions": 1}) as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        for f in admin.create_topics([NewTopic("idle", PARKED, 1), NewTopic("busy", 1, 1)]).values():
            f.result()
        socks = []
        for p in range(PARKED):
            s = kw.connect(b.port)
            s.sendall(kw.request(1, 4, p, fetch_body("idle", p, 0)))
            socks.append(s)
        extra = kw.connect(b.port)
        extra.sendall(kw.request(1, 4, 1, fetch_body("idle", 0, 0)))
        time.sleep(0.5)
        eq(answered(socks), [], "answered fetches before any append")
        extra.close()  # leaves with its fetch parked
        r0 = rss_mb(b.pid)
        t0 = time.monotonic()
        produce_many(b.port, PRODUCES)
        r1 = rss_mb(b.pid)
        log("%d produce requests with %d parked fetches in %.1fs: RSS %.1f -> %.1f MiB" %
            (PRODUCES, PARKED, time.monotonic() - t0, r0, r1))
        eq(answered(socks), [], "fetches answered by appends to another topic")
        check(SAN or r1 - r0 < RSS_GROWTH_MAX_MB, "RSS grew %.1f MiB (bound %d)" % (r1 - r0, RSS_GROWTH_MAX_MB))

        s = kw.connect(b.port)
        s.sendall(kw.request(0, 3, 1, kw.produce_v3_body("idle", K, kw.record_batch([(b"k", b"wake")]))))
        eq(kw.parse_produce_v3(kw.recv_response(s)[1])[("idle", K)][0], 0, "produce to idle partition")
        s.close()
        readable, _, _ = select.select(socks, [], [], 5)
        eq([socks.index(r) for r in readable], [K], "the fetch answered")
        corr, body = kw.recv_response(socks[K])
        eq(corr, K, "correlation id")
        check(b"wake" in body, "the record is in the answer")
        time.sleep(0.2)
        eq([socks.index(r) for r in answered(socks) if r is not socks[K]], [], "other fetches still parked")
        eq(b.stop(), 0, "exit status on SIGTERM with fetches parked")
        for s in socks:
            s.close()


if __name__ == "__main__":
    main(test)

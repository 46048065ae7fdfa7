#!/usr/bin/python3
"""1084: the broker's shutdown line counts what its Fetch answers carried.

bench/consumer-partitions reads `fetch answers: ...` to see a consumer's
reads from the broker's side: partitions per answer, those with records,
record bytes, partitions left below their high watermark with nothing
returned (no room left in the answer), parked fetches and those answered
at their timeout.  With fetch.max.bytes=1 MiB and raw Fetch v4 (kwire):
  1. partition 0 holds two 600 KiB batches, partition 1 one 500 KiB batch,
     partition 2 nothing.  One fetch of all three from offset 0 (MaxWaitMs
     0): partition 0 fills the 1 MiB answer (its first batch whole, then
     as much as fits, as Kafka slices), so partition 1's batch has no room;
     partition 2 is at its high watermark.  3 partitions, 1 with records,
     1 left behind.
  2. A fetch of partition 2 at its high watermark with MaxWaitMs 200 parks
     and is answered at its timeout, empty.
After a clean stop the line reads: 2 answers, 4 partitions, 1 with
records, 1 left behind, 1 parked, 1 answered at its timeout.
"""
import os
import re
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import kwire as kw  # noqa: E402
from gregor import Broker, check, eq, log, main  # noqa: E402

KIB = 1024
MIB = 1 << 20
BIG = 0x7FFFFFFF
LINE_RE = re.compile(r"fetch answers: (\d+), partitions (\d+) \([\d.]+ per answer\), with records (\d+) "
                     r"\([\d.]+ per answer, (\d+) bytes per answer\), left below their high watermark (\d+); "
                     r"parked (\d+), answered at their timeout (\d+)")


def produce(port, topic, partition, size, n):
    s = kw.connect(port)
    try:
        for i in range(n):
            batch = kw.record_batch([(b"k", bytes([65 + i]) * size)])
            s.sendall(kw.request(0, 3, i, kw.produce_v3_body(topic, partition, batch, acks=-1)))
            eq(kw.parse_produce_v3(kw.recv_response(s)[1])[(topic, partition)][0], 0, "produce")
    finally:
        s.close()


def fetch(port, topic, parts, max_wait_ms):
    """Fetch v4 of [(partition, offset)] -> {partition: (error, high watermark, record bytes)}."""
    body = (kw.i32(-1) + kw.i32(max_wait_ms) + kw.i32(1) + kw.i32(BIG) + kw.i8(0) +
            kw.array([topic], lambda t: kw.string(t) + kw.array(
                parts, lambda po: kw.i32(po[0]) + kw.i64(po[1]) + kw.i32(BIG))))
    s = kw.connect(port)
    try:
        s.sendall(kw.request(1, 4, 7, body))
        (size,) = struct.unpack(">i", kw.recv_exact(s, 4))
        r = kw.Reader(kw.recv_exact(s, size)[4:])
    finally:
        s.close()
    r.i32()
    out = {}
    for _name, ps in r.array(lambda r: (r.string(), r.array(lambda r: (
            r.i32(), r.i16(), r.i64(), r.i64(), r.array(lambda r: (r.i64(), r.i64())), r.take(max(r.i32(), 0)))))):
        for idx, err, hw, _lso, _ab, recs in ps:
            out[idx] = (err, hw, len(recs))
    return out


def test():
    with Broker(props={"fetch.max.bytes": MIB, "num.partitions": 3}) as b:
        produce(b.port, "fa", 0, 600 * KIB, 2)
        produce(b.port, "fa", 1, 500 * KIB, 1)
        out = fetch(b.port, "fa", [(0, 0), (1, 0), (2, 0)], 0)
        check(600 * KIB < out[0][2] < 1200 * KIB, "partition 0: one batch (%d bytes)" % out[0][2])
        eq(out[1][:2], (0, 1), "partition 1: no error, high watermark 1")
        eq(out[1][2], 0, "partition 1: no room left")
        eq(out[2], (0, 0, 0), "partition 2: empty")
        out = fetch(b.port, "fa", [(2, 0)], 200)
        eq(out[2], (0, 0, 0), "parked fetch answered empty")
        eq(b.stop(), 0, "exit status")
        m = LINE_RE.search(b.log_text())
        check(m, "no fetch answers line in the log")
        log(m.group(0))
        eq([int(m.group(i)) for i in (1, 2, 3, 5, 6, 7)], [2, 4, 1, 1, 1, 1],
           "answers, partitions, with records, left behind, parked, at their timeout")
        check(300 * KIB < int(m.group(4)) < 600 * KIB, "bytes per answer %s" % m.group(4))


if __name__ == "__main__":
    main(test)

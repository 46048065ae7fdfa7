#!/usr/bin/python3
"""9013: the broker's fetch.max.bytes bounds every Fetch response.

Raw Fetch v4 (kwire) asking for MaxBytes = PartitionMaxBytes = 2^31-1:
  A. default fetch.max.bytes (8 MiB = 8388608; Kafka's is 55 MiB): 64 MiB
     in 1 MiB (less 1 KiB) batches over 4 partitions; each response carries
     at most 8 MiB of records, so at least 8 are needed (the old broker
     answered all 64 MiB: a request for 2 GiB of data got a frame past
     2 GiB, its int32 length wrapped).
  B. fetch.max.bytes=1 MiB: with 100 KiB batches the response holds at
     most 1 MiB; PartitionMaxBytes above the cap is clamped too; a
     single 3 MiB batch is still returned whole as the first batch (KIP-74).
Each fetch is then continued from where the response stopped until the
end, so nothing is skipped.
"""
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import kwire as kw  # noqa: E402
from gregor import Broker, check, eq, log, main  # noqa: E402

BIG = 0x7FFFFFFF
MIB = 1 << 20


def recv_big(s):
    (size,) = struct.unpack(">i", kw.recv_exact(s, 4))
    check(0 < size < 256 * MIB, "response frame size %d" % size)
    return kw.recv_exact(s, size)[4:]


def fetch(s, parts, max_bytes=BIG, part_max=BIG):
    """Fetch v4 of [(topic, partition, offset)] -> ({(t, p): (err, hw, records bytes)}, total)."""
    topics = {}
    for t, p, off in parts:
        topics.setdefault(t, []).append((p, off))
    body = (kw.i32(-1) + kw.i32(0) + kw.i32(1) + kw.i32(max_bytes) + kw.i8(0) +
            kw.array(list(topics.items()), lambda tp: kw.string(tp[0]) + kw.array(
                tp[1], lambda po: kw.i32(po[0]) + kw.i64(po[1]) + kw.i32(part_max))))
    s.sendall(kw.request(1, 4, 9, body))
    r = kw.Reader(recv_big(s))
    r.i32()
    out, total = {}, 0
    for name, ps in r.array(lambda r: (r.string(), r.array(lambda r: (
            r.i32(), r.i16(), r.i64(), r.i64(), r.array(lambda r: (r.i64(), r.i64())), r.take(max(r.i32(), 0)))))):
        for idx, err, hw, _lso, _ab, recs in ps:
            out[(name, idx)] = (err, hw, recs)
            total += len(recs)
    return out, total


def last_offset(recs):
    """Offset after the last whole batch in recs."""
    pos, nxt = 0, None
    while pos + 12 <= len(recs):
        base, length = struct.unpack(">qi", recs[pos:pos + 12])
        if pos + 12 + length > len(recs):
            break
        (delta,) = struct.unpack(">i", recs[pos + 23:pos + 27])
        nxt = base + delta + 1
        pos += 12 + length
    return nxt


def produce(port, topic, nparts, batches, size):
    """acks=all: the high watermark (what Fetch serves) follows the sync."""
    s = kw.connect(port)
    try:
        for p in range(nparts):
            for i in range(batches):
                val = bytes([65 + i % 26]) * size
                s.sendall(kw.request(0, 3, i, kw.produce_v3_body(topic, p, kw.record_batch([(b"k", val)]), acks=-1)))
                eq(kw.parse_produce_v3(kw.recv_response(s)[1])[(topic, p)][0], 0, "produce")
    finally:
        s.close()


def drain(port, topic, nparts, want_per_part, cap, part_max=BIG):
    """Fetches everything with huge MaxBytes; checks each response against cap."""
    s = kw.connect(port)
    offs = {p: 0 for p in range(nparts)}
    rounds = 0
    try:
        while any(offs[p] < want_per_part for p in offs) and rounds < 1000:
            rounds += 1
            out, total = fetch(s, [(topic, p, offs[p]) for p in offs if offs[p] < want_per_part],
                               part_max=part_max)
            check(total <= cap, "response carries %d record bytes, cap %d" % (total, cap))
            check(total > 0, "progress")
            for (t, p), (err, hw, recs) in out.items():
                eq(err, 0, "fetch error")
                nxt = last_offset(recs)
                if nxt is not None:
                    offs[p] = nxt
    finally:
        s.close()
    return rounds


def test():
    with Broker(props={"num.partitions": 4}) as b:
        produce(b.port, "big", 4, 16, MIB - 1024)
        rounds = drain(b.port, "big", 4, 16, 8 * MIB)
        log("A: 64 MiB fetched in %d responses of at most 8 MiB" % rounds)
        check(rounds >= 8, "64 MiB in at least 8 responses")
        eq(b.stop(), 0, "exit status")
    with Broker(props={"fetch.max.bytes": MIB, "message.max.bytes": 8 * MIB, "num.partitions": 4}) as b:
        produce(b.port, "small", 3, 20, 100 * 1024)
        rounds = drain(b.port, "small", 3, 20, MIB)
        check(rounds >= 6, "6 MiB in responses of at most 1 MiB (%d)" % rounds)
        rounds = drain(b.port, "small", 3, 20, MIB, part_max=5 * MIB)
        check(rounds >= 6, "PartitionMaxBytes clamped too (%d)" % rounds)
        produce(b.port, "huge", 1, 1, 3 * MIB)
        s = kw.connect(b.port)
        out, total = fetch(s, [("huge", 0, 0)])
        s.close()
        check(total > 3 * MIB, "the first batch is served whole (KIP-74): %d bytes" % total)
        log("B: 1 MiB cap holds; a 3 MiB first batch still served")
        eq(b.stop(), 0, "exit status")


if __name__ == "__main__":
    main(test)

"""Message formats 0 and 1 on the wire, byte by byte (tests/lib/kwire.py):
what Kafka 3.x serves to clients older than 0.11.

  * ApiVersions lists Produce 0-8, Fetch 0-11, ListOffsets 0-7, and each of
    those first versions is answered (the connection stays open).
  * Produce v0/v1/v2 with magic 0 and 1 message sets, uncompressed and gzip
    wrappers (magic 0: absolute inner offsets, magic 1: relative), become v2
    batches: dense offsets, CreateTime kept; a bad CRC (outer or inner) is
    CORRUPT_MESSAGE, nested compression INVALID_RECORD, nothing appended.
  * Fetch v0/v1 return magic 0, v2/v3 magic 1 message sets: offsets kept,
    CRCs right, gzip batches as one gzip wrapper (offsets per magic),
    records before the fetch offset dropped, control batches and headers
    dropped, LogAppendTime topics give each message the append time.
  * zstd: Produce below v7 gets UNSUPPORTED_COMPRESSION_TYPE (76), as does
    Fetch below v10 where the data is zstd; Fetch v11 serves it.
  * ListOffsets v0: Kafka's legacy offsets array, newest first, up to
    MaxNumOffsets: the high watermark and segment base offsets.
"""

import gzip
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import kwire  # noqa: E402
from kwire import array, i8, i16, i32, i64, nbytes, string  # noqa: E402
from gregor import Broker, check, eq, log, main  # noqa: E402

CORRUPT_MESSAGE, INVALID_RECORD, UNSUPPORTED_COMPRESSION_TYPE = 2, 87, 76


class Conn:
    def __init__(self, port):
        self.s = kwire.connect(port)
        self.corr = 0

    def call(self, key, version, body):
        self.corr += 1
        self.s.sendall(kwire.request(key, version, self.corr, body))
        corr, resp = kwire.recv_response(self.s)
        eq(corr, self.corr, "correlation id")
        return resp


def produce(c, version, topic, partition, records, acks=-1):
    """Produce v0-v8 -> (error_code, base_offset)."""
    body = (string(None) if version >= 3 else b"") + i16(acks) + i32(10000) + \
        array([topic], lambda t: string(t) + array([partition], lambda p: i32(p) + nbytes(records)))
    r = kwire.Reader(c.call(0, version, body))
    (_, parts), = r.array(lambda r: (r.string(), r.array(lambda r: (
        r.i32(), r.i16(), r.i64(), r.i64() if version >= 2 else None, r.i64() if version >= 5 else None))))
    return parts[0][1], parts[0][2]


def fetch(c, version, topic, partition, offset, max_bytes=1 << 20, max_wait_ms=100, send_only=False):
    """Fetch v0-v11 of one partition -> (error_code, high_watermark, records bytes);
    send_only: sends it and returns the parser of its response for later."""
    body = i32(-1) + i32(max_wait_ms) + i32(1)
    if version >= 3:
        body += i32(max_bytes)
    if version >= 4:
        body += i8(0)
    if version >= 7:
        body += i32(0) + i32(-1)
    part = i32(partition) + (i32(-1) if version >= 9 else b"") + i64(offset) + \
        (i64(-1) if version >= 5 else b"") + i32(max_bytes)
    body += array([topic], lambda t: string(t) + array([part]))
    if version >= 7:
        body += array([])
    if version >= 11:
        body += string("")
    if send_only:
        c.corr += 1
        c.s.sendall(kwire.request(1, version, c.corr, body))
        return lambda: _fetch_parse(version, kwire.recv_response(c.s)[1])
    return _fetch_parse(version, c.call(1, version, body))


def _fetch_parse(version, resp):
    r = kwire.Reader(resp)
    if version >= 1:
        r.i32()
    if version >= 7:
        eq(r.i16(), 0, "fetch top-level error")
        r.i32()
    (_, parts), = r.array(lambda r: (r.string(), r.array(lambda r: _fetch_part(r, version))))
    return parts[0]


def _fetch_part(r, version):
    r.i32()
    err, hw = r.i16(), r.i64()
    if version >= 4:
        r.i64()
        if version >= 5:
            r.i64()
        r.array(lambda r: (r.i64(), r.i64()))
    if version >= 11:
        r.i32()
    n = r.i32()
    return err, hw, b"" if n < 0 else r.take(n)


def messages(data, magic):
    """Flattens a message set (gzip wrappers opened) into [(offset, key, value, timestamp, attributes)],
    checking CRCs, formats and wrapper offsets."""
    out = []
    for m in kwire.parse_message_set(data):
        check(m["crc_ok"], "CRC of message at offset %d" % m["offset"])
        eq(m["magic"], magic, "magic of message at offset %d" % m["offset"])
        eq(m["left"], 0, "bytes after the value")
        codec = m["attributes"] & 7
        if codec == 0:
            out.append((m["offset"], m["key"], m["value"], m["timestamp"], m["attributes"]))
            continue
        eq(codec, 1, "wrapper codec")
        eq(m["key"], None, "wrapper key")
        inner = kwire.parse_message_set(gzip.decompress(m["value"]))
        check(len(inner) > 0, "wrapper holds messages")
        # magic 0: absolute inner offsets; magic 1: relative, the wrapper holds the last absolute one
        base = m["offset"] - inner[-1]["offset"] if magic == 1 else 0
        if magic == 1:
            eq([x["offset"] for x in inner], list(range(len(inner))), "relative inner offsets")
        else:
            eq(inner[-1]["offset"], m["offset"], "wrapper offset = last inner offset")
        for x in inner:
            check(x["crc_ok"], "inner CRC")
            eq(x["magic"], magic, "inner magic")
            eq(x["attributes"] & 7, 0, "inner codec")
            out.append((base + x["offset"], x["key"], x["value"], x["timestamp"], m["attributes"]))
    return out


def legacy_set(magic, kvs, first_offset=0, ts=None):
    return b"".join(kwire.legacy_message(first_offset + i, k, v, magic=magic,
                                         timestamp=-1 if ts is None else ts + i) for i, (k, v) in enumerate(kvs))


def gzip_wrapper(magic, kvs, ts=None, inner_crc_ok=True):
    inner = b"".join(kwire.legacy_message(i, k, v, magic=magic, timestamp=-1 if ts is None else ts + i,
                                          crc_ok=inner_crc_ok or i > 0) for i, (k, v) in enumerate(kvs))
    last = len(kvs) - 1
    return kwire.legacy_message(last, None, gzip.compress(inner), magic=magic, attributes=1,
                                timestamp=-1 if ts is None else ts + last)


def check_api_versions(b, c):
    err, keys, _ = kwire.parse_api_versions_v0(c.call(18, 0, b""))
    eq(err, 0, "ApiVersions error")
    eq(keys[0], (0, 8), "Produce versions")
    eq(keys[1], (0, 11), "Fetch versions")
    eq(keys[2], (0, 7), "ListOffsets versions")


def check_produce_fetch(b, c):
    t = "legacy"
    kv = [(b"k%d" % i, b"v%d" % i) for i in range(3)]
    eq(produce(c, 0, t, 0, legacy_set(0, [(None, b"null-key")] + kv[1:])), (0, 0), "Produce v0, magic 0")
    eq(produce(c, 2, t, 0, gzip_wrapper(1, kv, ts=1700000000000)), (0, 3), "Produce v2, magic 1 gzip")
    eq(produce(c, 1, t, 0, gzip_wrapper(0, kv)), (0, 6), "Produce v1, magic 0 gzip")
    eq(produce(c, 2, t, 0, legacy_set(1, kv, ts=1700000000100)), (0, 9), "Produce v2, magic 1")
    values = [b"null-key", b"v1", b"v2"] + [v for _, v in kv] * 3
    keys = [None, b"k1", b"k2"] + [k for k, _ in kv] * 3
    # refused without appending anything
    eq(produce(c, 2, t, 0, legacy_set(1, kv)[:-3])[0], CORRUPT_MESSAGE, "truncated message set")
    bad = kwire.legacy_message(0, b"k", b"v", crc_ok=False)
    eq(produce(c, 0, t, 0, bad)[0], CORRUPT_MESSAGE, "bad CRC")
    eq(produce(c, 2, t, 0, gzip_wrapper(1, kv, inner_crc_ok=False))[0], CORRUPT_MESSAGE, "bad inner CRC")
    nested = kwire.legacy_message(0, None, gzip.compress(gzip_wrapper(0, kv)), attributes=1)
    eq(produce(c, 0, t, 0, nested)[0], INVALID_RECORD, "nested compression")
    zstd = kwire.legacy_message(0, None, b"\x28\xb5\x2f\xfd" + b"\x00" * 8, magic=1, attributes=4)
    eq(produce(c, 2, t, 0, zstd)[0], UNSUPPORTED_COMPRESSION_TYPE, "zstd message set")

    for version, magic in ((0, 0), (1, 0), (2, 1), (3, 1)):
        err, hw, data = fetch(c, version, t, 0, 0)
        eq((err, hw), (0, 12), "Fetch v%d error, high watermark" % version)
        got = messages(data, magic)
        eq([m[0] for m in got], list(range(12)), "Fetch v%d offsets" % version)
        eq([m[1] for m in got], keys, "Fetch v%d keys" % version)
        eq([m[2] for m in got], values, "Fetch v%d values" % version)
        if magic == 1:
            eq([m[3] for m in got], [-1] * 3 + [1700000000000 + i for i in range(3)] + [-1] * 3 +
               [1700000000100 + i for i in range(3)], "Fetch v%d timestamps" % version)
        # from the middle of a stored batch: the records before are dropped
        err, _, data = fetch(c, version, t, 0, 4)
        eq([m[0] for m in messages(data, magic)], list(range(4, 12)), "Fetch v%d from offset 4" % version)
    # a small max_bytes cuts the slice inside the second batch: whole messages of the first come back,
    # and at least the first batch however small the limit
    for max_bytes in (200, 10):
        err, _, data = fetch(c, 1, t, 0, 0, max_bytes=max_bytes)
        eq((err, [m[0] for m in messages(data, 0)]), (0, [0, 1, 2]), "Fetch v1 with max_bytes %d" % max_bytes)
    # a long poll at the end is answered, converted, once data arrives
    c2 = Conn(c.s.getpeername()[1])
    answer = fetch(c, 2, t, 0, 12, max_wait_ms=10000, send_only=True)
    time.sleep(0.3)
    eq(produce(c2, 0, t, 0, legacy_set(0, kv[:1])), (0, 12), "produce while a fetch waits")
    err, hw, data = answer()
    eq((err, hw, [(m[0], m[2]) for m in messages(data, 1)]), (0, 13, [(12, b"v0")]), "parked Fetch v2 answered")
    # Fetch v4+ serves the stored v2 batches unchanged (magic 2 at byte 16)
    err, hw, data = fetch(c, 4, t, 0, 0)
    eq((err, hw, data[16]), (0, 13, 2), "Fetch v4 serves batches v2")


def check_zstd(b, c):
    t = "legacy-zstd"
    lines = b"".join(b"%s\n" % (b"z" * 200) for _ in range(3))  # compressible: librdkafka keeps the zstd batch
    p = subprocess.run(["kcat", "-b", b.bootstrap, "-P", "-t", t, "-p", "0", "-z", "zstd", "-X", "linger.ms=100"],
                       input=lines, timeout=60, capture_output=True)
    eq(p.returncode, 0, "kcat -z zstd: %s" % p.stderr.decode(errors="replace"))
    for version in (0, 2, 4, 9):
        err, hw, data = fetch(c, version, t, 0, 0)
        eq((err, data), (UNSUPPORTED_COMPRESSION_TYPE, b""), "Fetch v%d of zstd data" % version)
    err, hw, data = fetch(c, 10, t, 0, 0)
    eq((err, hw, data[16], data[22] & 7), (0, 3, 2, 4), "Fetch v10 serves the zstd batch")
    batch = kwire.record_batch([(None, b"x")])
    zbatch = batch[:22] + bytes([batch[22] | 4]) + batch[23:]  # attributes: zstd (CRC no longer matters)
    for version in (3, 6):
        eq(produce(c, version, t, 0, zbatch)[0], UNSUPPORTED_COMPRESSION_TYPE, "Produce v%d with zstd" % version)
    eq(fetch(c, 10, t, 0, 0)[1], 3, "nothing appended")


def check_control_and_headers(b, c):
    from confluent_kafka import Producer
    t = "legacy-txn"
    p = Producer({"bootstrap.servers": b.bootstrap, "transactional.id": "legacy-txn"})
    p.init_transactions(10)
    p.begin_transaction()
    for i in range(3):
        p.produce(t, key=b"k%d" % i, value=b"v%d" % i, partition=0, headers=[("h", b"x")])
    p.commit_transaction(10)
    p = Producer({"bootstrap.servers": b.bootstrap})
    p.produce(t, key=b"k3", value=b"v3", partition=0, headers=[("h", b"y")])
    eq(p.flush(10), 0, "flush")
    for version, magic in ((1, 0), (2, 1)):
        err, hw, data = fetch(c, version, t, 0, 0)
        eq((err, hw), (0, 5), "Fetch v%d of a transactional topic" % version)
        got = messages(data, magic)
        eq([(m[0], m[1], m[2]) for m in got], [(0, b"k0", b"v0"), (1, b"k1", b"v1"), (2, b"k2", b"v2"),
                                                (4, b"k3", b"v3")], "control batch and headers dropped")


def check_log_append_time(b, c):
    from confluent_kafka.admin import AdminClient, NewTopic
    t = "legacy-lat"
    a = AdminClient({"bootstrap.servers": b.bootstrap})
    a.create_topics([NewTopic(t, 1, 1, config={"message.timestamp.type": "LogAppendTime"})])[t].result(10)
    before = int(time.time() * 1000)
    eq(produce(c, 2, t, 0, legacy_set(1, [(b"k", b"v")], ts=1000)), (0, 0), "Produce v2 to a LogAppendTime topic")
    eq(produce(c, 2, t, 0, gzip_wrapper(1, [(b"k", b"v")] * 2, ts=1000)), (0, 1), "gzip to a LogAppendTime topic")
    got = messages(fetch(c, 2, t, 0, 0)[2], 1)
    eq(len(got), 3, "messages")
    for off, _, _, ts, attributes in got:
        check(attributes & 8, "offset %d: LogAppendTime attribute" % off)
        check(before - 1000 <= ts <= int(time.time() * 1000) + 1000, "offset %d: append time %d" % (off, ts))


def list_offsets_v0(c, topic, ts, max_n):
    body = i32(-1) + array([topic], lambda t: string(t) + array([0], lambda p: i32(p) + i64(ts) + i32(max_n)))
    r = kwire.Reader(c.call(2, 0, body))
    (_, parts), = r.array(lambda r: (r.string(), r.array(lambda r: (r.i32(), r.i16(), r.array(lambda r: r.i64())))))
    return parts[0][1], parts[0][2]


def check_list_offsets_v0(b, c):
    from confluent_kafka.admin import AdminClient, NewTopic
    t = "legacy-offsets"
    a = AdminClient({"bootstrap.servers": b.bootstrap})
    a.create_topics([NewTopic(t, 1, 1, config={"segment.bytes": "1024"})])[t].result(10)
    eq(list_offsets_v0(c, t, -1, 10), (0, [0]), "empty partition, latest")
    for i in range(6):  # 6 batches of 10 messages, ~400 bytes each: several segments
        kv = [(b"k", b"%030d" % (i * 10 + j)) for j in range(10)]
        eq(produce(c, 0, t, 0, legacy_set(0, kv))[0], 0, "produce batch %d" % i)
    err, offsets = list_offsets_v0(c, t, -1, 100)
    eq(err, 0, "ListOffsets v0 error")
    check(len(offsets) >= 3, "several segments: %s" % offsets)
    eq(offsets[0], 60, "latest first: the high watermark")
    eq(offsets[-1], 0, "oldest last: the first segment's base")
    eq(offsets, sorted(offsets, reverse=True), "descending")
    eq(list_offsets_v0(c, t, -1, 1), (0, [60]), "latest, max 1")
    eq(list_offsets_v0(c, t, -2, 5), (0, [0]), "earliest")
    eq(list_offsets_v0(c, t, -1, 2), (0, offsets[:2]), "latest, max 2")
    eq(list_offsets_v0(c, t, 0, 5), (0, []), "before any segment existed")
    eq(list_offsets_v0(c, t, int(time.time() * 1000) + 60000, 100), (0, offsets), "a time after everything")


def test():
    with Broker(overrides={"num.partitions": "1", "auto.create.topics.enable": "true"}) as b:
        port = int(b.bootstrap.rsplit(":", 1)[1])
        c = Conn(port)
        check_api_versions(b, c)
        log("produce and fetch in formats 0 and 1")
        check_produce_fetch(b, c)
        log("zstd below Produce v7 / Fetch v10")
        check_zstd(b, c)
        log("control batches and headers")
        check_control_and_headers(b, c)
        log("LogAppendTime")
        check_log_append_time(b, c)
        log("ListOffsets v0")
        check_list_offsets_v0(b, c)
        eq(kwire.wait_closed(c.s, 0.2)[0], False, "connection still open")
        c2 = Conn(port)
        eq(fetch(c2, 0, "legacy", 0, 12)[0], 0, "a fresh connection works")


main(test)

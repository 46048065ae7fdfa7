"""Hand-made record batches v2 and Produce v8 on the raw wire, for tests of
what the broker accepts and how it stores batches no client would write.

    from batchwire import Rec, batch, create, produce, partition_error

    create(broker, "topic", {"max.message.bytes": "1000"})  # a gregor.Broker
    b = batch([Rec(b"k", b"v", ts_delta=0), Rec(b"k2", b"v2", ts_delta=5)],
              base_ts=t0, max_ts=-1, codec="gzip")
    err, base, rec_errors, msg = produce(port, "topic", 0, b)

Every field of the batch header can be overridden (max_ts, last_offset_delta,
record_count, attributes); records can carry any offset delta, header list
or a raw byte string in place of their encoding; the body can be replaced
after compression (body=...). The CRC is always made correct unless crc= is
given, so the broker's checks past the CRC are what is exercised. gzip is
the only codec built here (Python's zlib); other codecs come from real
clients in the tests that need them.
"""

import gzip
import struct

import kwire
from confluent_kafka.admin import AdminClient, NewTopic
from kwire import i8, i16, i32, i64, varint

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


class Rec:
    """One record. offset_delta None = its index; headers = [(key, value)],
    key None in a header writes a null header key; raw = the whole encoded
    record (length prefix included) instead of the fields."""

    def __init__(self, key, value, ts_delta=0, offset_delta=None, headers=(), raw=None, length_fix=0):
        self.key, self.value, self.ts_delta = key, value, ts_delta
        self.offset_delta, self.headers, self.raw = offset_delta, list(headers), raw
        self.length_fix = length_fix  # added to the declared length (a lying record)


def _nbytes_varint(b):
    return varint(-1) if b is None else varint(len(b)) + b


def encode_record(rec, index):
    if rec.raw is not None:
        return rec.raw
    od = index if rec.offset_delta is None else rec.offset_delta
    body = i8(0) + varint(rec.ts_delta) + varint(od) + _nbytes_varint(rec.key) + _nbytes_varint(rec.value)
    body += varint(len(rec.headers))
    for hk, hv in rec.headers:
        body += _nbytes_varint(hk) + _nbytes_varint(hv)
    return varint(len(body) + rec.length_fix) + body


def batch(recs, base_ts=1700000000000, max_ts=None, codec="none", last_offset_delta=None,
          record_count=None, attributes=None, producer_id=-1, producer_epoch=-1, base_sequence=-1,
          body=None, crc=None, base_offset=0):
    """A whole batch v2. max_ts None = the largest record timestamp."""
    plain = b"".join(encode_record(r, i) for i, r in enumerate(recs))
    if body is None:
        body = gzip.compress(plain) if codec == "gzip" else plain
    if codec not in ("none", "gzip") and body is plain:
        raise ValueError("only gzip is built here; pass body= for %s" % codec)
    if max_ts is None:
        max_ts = max([base_ts + r.ts_delta for r in recs] or [-1])
    attrs = CODECS[codec] if attributes is None else attributes
    n = len(recs)
    after_crc = (i16(attrs) + i32(n - 1 if last_offset_delta is None else last_offset_delta) + i64(base_ts) +
                 i64(max_ts) + i64(producer_id) + i16(producer_epoch) + i32(base_sequence) +
                 i32(n if record_count is None else record_count) + body)
    c = kwire.crc32c(after_crc) if crc is None else crc
    tail = i32(-1) + i8(2) + struct.pack(">I", c) + after_crc
    return i64(base_offset) + i32(len(tail)) + tail


def header_fields(b):
    """(attributes, last_offset_delta, base_ts, max_ts, record_count, crc_ok) of a batch's bytes."""
    attrs, lod, base_ts, max_ts = struct.unpack(">hiqq", b[21:43])
    count = struct.unpack(">i", b[57:61])[0]
    crc = struct.unpack(">I", b[17:21])[0]
    return attrs, lod, base_ts, max_ts, count, crc == kwire.crc32c(b[21:])


def create(b, topic, config=None):
    """Creates topic on broker b with one partition and the given topic
    configs (a dict), through the Admin API; raises if that fails."""
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    fs = admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1, config=config or {})],
                             operation_timeout=10)
    for f in fs.values():
        f.result(timeout=10)


def produce_v8_body(topic, partition, records, acks=-1, timeout_ms=10000):
    return kwire.produce_v3_body(topic, partition, records, acks, timeout_ms)


def parse_produce_v8(body):
    """-> {(topic, partition): (error, base_offset, [(batch_index, msg)], error_message)}"""
    r = kwire.Reader(body)
    out = {}

    def part(r):
        idx, err, base, _lat, _lso = r.i32(), r.i16(), r.i64(), r.i64(), r.i64()
        rec_errs = r.array(lambda r: (r.i32(), r.string()))
        return idx, err, base, rec_errs, r.string()

    for name, parts in r.array(lambda r: (r.string(), r.array(part))):
        for idx, err, base, rec_errs, msg in parts:
            out[(name, idx)] = (err, base, rec_errs or [], msg)
    r.i32()  # throttle_time_ms
    return out


_corr = [100]


def produce(port, topic, partition, records, acks=-1, version=8):
    """Sends one Produce (v8, or v3 for the old answer shape) on a new
    connection; -> (error, base_offset, [(batch_index, msg)], error_message)."""
    _corr[0] += 1
    s = kwire.connect(port)
    try:
        s.sendall(kwire.request(0, version, _corr[0], produce_v8_body(topic, partition, records, acks)))
        corr, body = kwire.recv_response(s)
        if corr != _corr[0]:
            raise AssertionError("correlation id %d, sent %d" % (corr, _corr[0]))
    finally:
        s.close()
    if version >= 8:
        return parse_produce_v8(body)[(topic, partition)]
    err, base = kwire.parse_produce_v3(body)[(topic, partition)]
    return err, base, [], None


def segment_batches(path):
    """Every batch in a .log file: list of bytes."""
    data = open(path, "rb").read()
    out, pos = [], 0
    while pos + 12 <= len(data):
        n = struct.unpack(">i", data[pos + 8:pos + 12])[0]
        out.append(data[pos:pos + 12 + n])
        pos += 12 + n
    return out

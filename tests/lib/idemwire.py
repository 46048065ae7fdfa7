"""Raw Kafka wire client for the idempotence tests (tests/integration/3xxx-*).

Builds record batches v2 with a producer id, epoch and base sequence (CRC-32C
from kwire.py: the Python stdlib has none) and speaks just enough of
InitProducerId (v0-v4, flexible from v2), Produce v3, ListOffsets v1,
DeleteRecords v0 and DescribeTransactions v0 to check every answer of the
broker's producer-state check and the transaction coordinator's states.
"""

import struct
import time

import kwire as kw

_corr = [0]


def batch(n, pid=-1, epoch=-1, seq=-1, ts=None, value=b"v", transactional=False):
    """One uncompressed batch of n records with the given producer fields."""
    ts = int(time.time() * 1000) if ts is None else ts
    recs = b"".join(kw.record(i, None, value + b"-%d" % i) for i in range(n))
    attrs = 0x10 if transactional else 0
    after_crc = (kw.i16(attrs) + kw.i32(n - 1) + kw.i64(ts) + kw.i64(ts) + kw.i64(pid) + kw.i16(epoch) +
                 kw.i32(seq) + kw.i32(n) + recs)
    tail = kw.i32(-1) + kw.i8(2) + struct.pack(">I", kw.crc32c(after_crc)) + after_crc
    return kw.i64(0) + kw.i32(len(tail)) + tail


def uvarint(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def read_uvarint(r):
    v = shift = 0
    while True:
        b = r.take(1)[0]
        v |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return v


def read_compact_string(r):
    n = read_uvarint(r) - 1
    return None if n < 0 else r.take(n).decode()


def compact_nstring(s):
    if s is None:
        return uvarint(0)
    b = s.encode()
    return uvarint(len(b) + 1) + b


class Client:
    def __init__(self, port):
        self.sock = kw.connect(port)

    def close(self):
        self.sock.close()

    def call(self, api_key, version, body, flexible=False):
        _corr[0] += 1
        corr = _corr[0]
        hdr = kw.i16(api_key) + kw.i16(version) + kw.i32(corr) + kw.string("idem-itest")
        if flexible:
            hdr += uvarint(0)
        payload = hdr + body
        self.sock.sendall(kw.i32(len(payload)) + payload)
        got, resp = kw.recv_response(self.sock)
        if got != corr:
            raise AssertionError("correlation id %d, want %d" % (got, corr))
        if flexible:
            if resp[0] != 0:
                raise AssertionError("response header tagged fields: %r" % resp[:8])
            resp = resp[1:]
        return kw.Reader(resp)

    def init_pid(self, version=0, txn_id=None, producer_id=-1, epoch=-1, want_err=0, timeout_ms=60000):
        """InitProducerId (transaction timeout timeout_ms) -> (producer_id, epoch); checks the error code."""
        flex = version >= 2
        body = (compact_nstring(txn_id) if flex else kw.string(txn_id)) + kw.i32(timeout_ms)
        if version >= 3:
            body += kw.i64(producer_id) + kw.i16(epoch)
        if flex:
            body += uvarint(0)
        for _ in range(600):  # COORDINATOR_NOT_AVAILABLE while __transaction_state is made, as clients retry
            r = self.call(22, version, body, flexible=flex)
            r.i32()
            err = r.i16()
            out = (r.i64(), r.i16())
            if not (txn_id and err == 15 and want_err != 15):
                break
            time.sleep(0.05)
        if err != want_err:
            raise AssertionError("InitProducerId v%d error %d, want %d" % (version, err, want_err))
        return out

    def produce(self, topic, partition, records, acks=-1, txn_id=None):
        """Produce v3 of one partition -> (error_code, base_offset)."""
        r = self.call(0, 3, kw.produce_v3_body(topic, partition, records, acks=acks, txn_id=txn_id))
        return kw.parse_produce_v3(r.d)[(topic, partition)]

    def send_produce(self, topic, partition, records, acks=-1, timeout_ms=10000):
        """Sends Produce v3 without waiting; returns the correlation id for recv_produce."""
        _corr[0] += 1
        body = kw.produce_v3_body(topic, partition, records, acks=acks, timeout_ms=timeout_ms)
        self.sock.sendall(kw.request(0, 3, _corr[0], body, client_id="idem-itest"))
        return _corr[0]

    def recv_produce(self, corr, topic, partition):
        """The answer to send_produce (answers come in request order) -> (error_code, base_offset)."""
        got, resp = kw.recv_response(self.sock)
        if got != corr:
            raise AssertionError("correlation id %d, want %d" % (got, corr))
        return kw.parse_produce_v3(resp)[(topic, partition)]

    def list_offset(self, topic, partition, ts=-1):
        """ListOffsets v1 -> offset (latest by default); checks error 0."""
        body = kw.i32(-1) + kw.array([topic], lambda t: kw.string(t) + kw.array(
            [partition], lambda p: kw.i32(p) + kw.i64(ts)))
        r = self.call(2, 1, body)
        topics = r.array(lambda r: (r.string(), r.array(lambda r: (r.i32(), r.i16(), r.i64(), r.i64()))))
        _, parts = topics[0]
        _, err, _, off = parts[0]
        if err:
            raise AssertionError("ListOffsets error %d" % err)
        return off

    def describe_txn(self, txn_id):
        """DescribeTransactions v0 of one id -> (error_code, state name)."""
        r = self.call(65, 0, uvarint(2) + compact_nstring(txn_id) + uvarint(0), flexible=True)
        r.i32()
        if read_uvarint(r) != 2:
            raise AssertionError("DescribeTransactions: not one transaction state")
        err = r.i16()
        read_compact_string(r)
        return err, read_compact_string(r)

    def delete_records(self, topic, partition, offset):
        """DeleteRecords v0 -> (error_code, low_watermark)."""
        body = kw.array([topic], lambda t: kw.string(t) + kw.array(
            [partition], lambda p: kw.i32(p) + kw.i64(offset))) + kw.i32(10000)
        r = self.call(21, 0, body)
        r.i32()
        topics = r.array(lambda r: (r.string(), r.array(lambda r: (r.i32(), r.i64(), r.i16()))))
        _, lw, err = topics[0][1][0]
        return err, lw

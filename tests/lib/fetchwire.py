"""Fetch v7-v11 on the raw wire, for tests of incremental fetch sessions
(KIP-227), which no client installed here sends.

    from fetchwire import Fetcher

    fx = Fetcher(port)                  # one connection, reconnect() for another
    r = fx.fetch({("t", 0): 0, ("t", 1): 5}, session_id=0, epoch=0)
    r.session_id, r.error, r.parts      # parts: {(topic, p): Part}
    fx.send(...); fx.recv()             # split, for parked fetches

A partition's request may be an offset or a dict with keys offset,
max_bytes, log_start. Records are returned raw (record batches v2);
Part.values decodes the values of uncompressed batches.
"""

import collections
import time

import kwire
from kwire import i8, i16, i32, i64, string, array

Part = collections.namedtuple("Part", "error hw lso log_start aborted preferred records values")
Resp = collections.namedtuple("Resp", "corr throttle error session_id parts order")

FETCH_SESSION_ID_NOT_FOUND = 70
INVALID_FETCH_SESSION_EPOCH = 71


def _group(parts):
    """{(topic, p): x} -> [(topic, [(p, x)])], topics in first-seen order."""
    out = collections.OrderedDict()
    for (t, p), x in parts.items():
        out.setdefault(t, []).append((p, x))
    return list(out.items())


def fetch_body(parts, session_id=0, epoch=-1, forgotten=None, max_wait_ms=0, min_bytes=0,
               max_bytes=1 << 20, isolation=0, part_max_bytes=1 << 20, replica_id=-1):
    def part(px):
        p, x = px
        if not isinstance(x, dict):
            x = {"offset": x}
        return (i32(p) + i32(-1) + i64(x["offset"]) + i64(x.get("log_start", -1)) +
                i32(x.get("max_bytes", part_max_bytes)))

    forgot = _group({(t, p): None for t, p in (forgotten or [])})
    return (i32(replica_id) + i32(max_wait_ms) + i32(min_bytes) + i32(max_bytes) + i8(isolation) +
            i32(session_id) + i32(epoch) +
            array(_group(parts), lambda tp: string(tp[0]) + array(tp[1], part)) +
            array(forgot, lambda tp: string(tp[0]) + array([p for p, _ in tp[1]], i32)) +
            string(""))


def record_values(data):
    """Values of the records of uncompressed record batches v2 (compressed batches: skipped)."""
    out = []
    pos = 0
    while pos + 61 <= len(data):
        r = kwire.Reader(data[pos:])
        r.i64()
        blen = r.i32()
        end = pos + 12 + blen
        if end > len(data):
            break
        r.i32()
        r.i8()
        r.i32()
        attrs = r.i16()
        r.i32()
        r.i64()
        r.i64()
        r.i64()
        r.i16()
        r.i32()
        n = r.i32()
        if attrs & 7 == 0:
            for _ in range(n):
                _varint(r)  # length
                r.i8()
                _varint(r)
                _varint(r)
                klen = _varint(r)
                if klen > 0:
                    r.take(klen)
                vlen = _varint(r)
                out.append(r.take(vlen) if vlen >= 0 else None)
                for _ in range(_varint(r)):
                    r.take(_varint(r))
                    hv = _varint(r)
                    if hv > 0:
                        r.take(hv)
        pos = end
    return out


def _varint(r):
    shift = z = 0
    while True:
        b = r.i8() & 0xFF
        z |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return (z >> 1) ^ -(z & 1)


def parse_fetch(corr, body):
    r = kwire.Reader(body)
    throttle, err, sid = r.i32(), r.i16(), r.i32()
    parts = {}
    order = []
    for _ in range(r.i32()):
        t = r.string()
        for _ in range(r.i32()):
            p, perr, hw, lso, ls = r.i32(), r.i16(), r.i64(), r.i64(), r.i64()
            aborted = r.array(lambda r: (r.i64(), r.i64()))
            pref = r.i32()
            n = r.i32()
            rec = r.take(n) if n >= 0 else None
            parts[(t, p)] = Part(perr, hw, lso, ls, aborted, pref, rec, record_values(rec or b""))
            order.append((t, p))
    if r.left():
        raise AssertionError("%d bytes left after the Fetch response" % r.left())
    return Resp(corr, throttle, err, sid, parts, order)


class Fetcher:
    """A raw Fetch v11 client on one connection."""

    def __init__(self, port, version=11):
        self.port = port
        self.version = version
        self.corr = 0
        self.sock = kwire.connect(port, timeout_s=30)
        self.last_size = 0

    def reconnect(self):
        self.sock.close()
        self.sock = kwire.connect(self.port, timeout_s=30)

    def close(self):
        self.sock.close()

    def send(self, parts, **kw):
        self.corr += 1
        self.sock.sendall(kwire.request(1, self.version, self.corr, fetch_body(parts, **kw)))
        return self.corr

    def recv(self):
        corr, body = kwire.recv_response(self.sock)
        self.last_size = len(body) + 8  # size and correlation id
        return parse_fetch(corr, body)

    def fetch(self, parts, **kw):
        corr = self.send(parts, **kw)
        r = self.recv()
        if r.corr != corr:
            raise AssertionError("correlation id %d, sent %d" % (r.corr, corr))
        return r


def produce(port, topic, partition, values):
    """Appends one uncompressed batch of values; returns its base offset."""
    s = kwire.connect(port)
    try:
        batch = kwire.record_batch([(b"k", v) for v in values])
        s.sendall(kwire.request(0, 3, 1, kwire.produce_v3_body(topic, partition, batch, acks=1)))
        err, base = kwire.parse_produce_v3(kwire.recv_response(s)[1])[(topic, partition)]
        if err:
            raise AssertionError("produce to %s-%d: error %d" % (topic, partition, err))
    finally:
        s.close()
    wait_hw(port, topic, partition, base + len(values))
    return base


def wait_hw(port, topic, partition, hw, timeout_s=10.0):
    """Waits (bounded) until the high watermark reaches hw (it follows the sync of what was appended)."""
    fx = Fetcher(port)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            got = fx.fetch({(topic, partition): hw}).parts[(topic, partition)].hw
            if got >= hw:
                return
            if time.monotonic() > deadline:
                raise AssertionError("%s-%d high watermark %d, want %d" % (topic, partition, got, hw))
            time.sleep(0.01)
    finally:
        fx.close()


def delete_records(port, topic, partition, offset):
    """DeleteRecords v0 up to offset; returns (error, low watermark)."""
    body = (array([topic], lambda t: string(t) + array([partition], lambda p: i32(p) + i64(offset))) +
            i32(10000))
    r = kwire.call(port, 21, 0, body)
    r.i32()
    res = r.array(lambda r: (r.string(), r.array(lambda r: (r.i32(), r.i64(), r.i16()))))
    _, parts = res[0]
    _, low, err = parts[0]
    return err, low


__all__ = ["Fetcher", "Part", "Resp", "fetch_body", "parse_fetch", "produce", "delete_records",
           "FETCH_SESSION_ID_NOT_FOUND", "INVALID_FETCH_SESSION_EPOCH", "i16"]

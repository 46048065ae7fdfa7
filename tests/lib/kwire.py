"""Raw Kafka wire helpers for tests that must send exact (and wrong) bytes.

Only what the hardening tests need: request header v1 framing, a few
non-flexible request/response encodings (ApiVersions v0, Metadata v1,
Produce v3) and record batch v2 with CRC-32C. Everything big-endian, sizes
per the Kafka protocol guide; see /work/shared/PROTOCOL-NOTES.md section 5.
"""

import socket
import struct
import time
import zlib

# -- CRC-32C (Castagnoli), table driven -------------------------------------

_CRC_TABLE = []
for _n in range(256):
    _c = _n
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _CRC_TABLE.append(_c)


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc = _CRC_TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


# -- primitive encoders -----------------------------------------------------

def i8(v):
    return struct.pack(">b", v)


def i16(v):
    return struct.pack(">h", v)


def i32(v):
    return struct.pack(">i", v)


def i64(v):
    return struct.pack(">q", v)


def string(s):
    if s is None:
        return i16(-1)
    b = s.encode() if isinstance(s, str) else s
    return i16(len(b)) + b


def nbytes(b):
    if b is None:
        return i32(-1)
    return i32(len(b)) + b


def array(items, enc=lambda x: x):
    if items is None:
        return i32(-1)
    return i32(len(items)) + b"".join(enc(x) for x in items)


def varint(v):
    """Signed zigzag varint (record fields)."""
    z = (v << 1) ^ (v >> 63)
    out = bytearray()
    while True:
        if z & ~0x7F:
            out.append((z & 0x7F) | 0x80)
            z >>= 7
        else:
            out.append(z)
            return bytes(out)


# -- framing ----------------------------------------------------------------

def request(api_key, api_version, corr_id, body, client_id="gregor-itest"):
    """A complete frame: int32 size + request header v1 + body."""
    payload = i16(api_key) + i16(api_version) + i32(corr_id) + string(client_id) + body
    return i32(len(payload)) + payload


def connect(port, timeout_s=10):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout_s)
    s.settimeout(timeout_s)
    return s


def recv_exact(sock, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed after %d of %d bytes" % (len(buf), n))
        buf += chunk
    return bytes(buf)


def recv_response(sock):
    """One response frame: returns (correlation_id, body after the v0 header)."""
    (size,) = struct.unpack(">i", recv_exact(sock, 4))
    if size < 4 or size > 64 << 20:
        raise AssertionError("response frame size %d" % size)
    frame = recv_exact(sock, size)
    return struct.unpack(">i", frame[:4])[0], frame[4:]


def call(port, api_key, api_version, body):
    """One request on a connection of its own (closed after the answer):
    returns a Reader over the response body. A broker that dies or closes
    on the request raises here, at once."""
    s = connect(port)
    try:
        s.sendall(request(api_key, api_version, 1, body))
        return Reader(recv_response(s)[1])
    finally:
        s.close()


def wait_closed(sock, timeout_s=5.0):
    """True if the peer closes (EOF or reset) within timeout_s, reading and
    discarding anything it sends; False if still open after timeout_s.
    Returns (closed, bytes_received)."""
    got = b""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        sock.settimeout(max(0.05, deadline - time.monotonic()))
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            break
        except (ConnectionResetError, BrokenPipeError):
            return True, got
        if not chunk:
            return True, got
        got += chunk
    return False, got


# -- decoders ---------------------------------------------------------------

class Reader:
    def __init__(self, data):
        self.d = data
        self.p = 0

    def take(self, n):
        if self.p + n > len(self.d):
            raise AssertionError("response truncated: need %d bytes at %d of %d" % (n, self.p, len(self.d)))
        v = self.d[self.p:self.p + n]
        self.p += n
        return v

    def i8(self):
        return struct.unpack(">b", self.take(1))[0]

    def i16(self):
        return struct.unpack(">h", self.take(2))[0]

    def i32(self):
        return struct.unpack(">i", self.take(4))[0]

    def i64(self):
        return struct.unpack(">q", self.take(8))[0]

    def string(self):
        n = self.i16()
        return None if n < 0 else self.take(n).decode()

    def array(self, fn):
        n = self.i32()
        if n < 0:
            return None
        return [fn(self) for _ in range(n)]

    def left(self):
        return len(self.d) - self.p


def api_versions_v0_body():
    return b""


def parse_api_versions_v0(body):
    """-> (error_code, {api_key: (min, max)}, bytes left over)."""
    r = Reader(body)
    err = r.i16()
    keys = r.array(lambda r: (r.i16(), r.i16(), r.i16()))
    return err, {k: (lo, hi) for k, lo, hi in (keys or [])}, r.left()


def metadata_v1_body(topics=None):
    return array(topics, string)


def parse_metadata_v1(body):
    """-> dict(brokers=[(id, host, port, rack)], controller_id, topics={name: (err, [(err, part, leader)])})"""
    r = Reader(body)
    brokers = r.array(lambda r: (r.i32(), r.string(), r.i32(), r.string()))
    controller = r.i32()

    def part(r):
        err, idx, leader = r.i16(), r.i32(), r.i32()
        r.array(lambda r: r.i32())
        r.array(lambda r: r.i32())
        return (err, idx, leader)

    def topic(r):
        err, name, _internal = r.i16(), r.string(), r.i8()
        return name, (err, r.array(part))

    topics = dict(r.array(topic))
    return {"brokers": brokers, "controller_id": controller, "topics": topics, "left": r.left()}


def partition_isrs(port, topic):
    """Metadata v1 of topic from the broker at port -> {partition: (leader, sorted isr)} ({} on an error)."""
    r = call(port, 3, 1, metadata_v1_body([topic]))
    r.array(lambda r: (r.i32(), r.string(), r.i32(), r.string()))
    r.i32()

    def part(r):
        r.i16()
        idx, leader = r.i32(), r.i32()
        r.array(lambda r: r.i32())
        return idx, (leader, sorted(r.array(lambda r: r.i32())))

    out = {}
    for _ in range(r.i32()):
        err = r.i16()
        r.string()
        r.i8()
        parts = dict(r.array(part))
        if not err:
            out.update(parts)
    return out


def produce_v3_body(topic, partition, records, acks=1, timeout_ms=10000, txn_id=None):
    return (string(txn_id) + i16(acks) + i32(timeout_ms) +
            array([topic], lambda t: string(t) + array([partition], lambda p: i32(p) + nbytes(records))))


def parse_produce_v3(body):
    """-> {(topic, partition): (error_code, base_offset)}"""
    r = Reader(body)
    out = {}
    for name, parts in r.array(lambda r: (r.string(), r.array(lambda r: (r.i32(), r.i16(), r.i64(), r.i64())))):
        for idx, err, base, _lat in parts:
            out[(name, idx)] = (err, base)
    r.i32()  # throttle_time_ms
    return out


# -- record batch v2 ----------------------------------------------------------

def record(offset_delta, key, value, ts_delta=0):
    body = (i8(0) + varint(ts_delta) + varint(offset_delta) +
            (varint(-1) if key is None else varint(len(key)) + key) +
            (varint(-1) if value is None else varint(len(value)) + value) +
            varint(0))
    return varint(len(body)) + body


def record_batch(kvs, base_ts=1700000000000, record_count=None):
    """Uncompressed, non-transactional batch v2 with a correct CRC-32C.
    record_count overrides the declared count (to make a lying batch)."""
    recs = b"".join(record(i, k, v) for i, (k, v) in enumerate(kvs))
    after_crc = (i16(0) + i32(len(kvs) - 1) + i64(base_ts) + i64(base_ts) + i64(-1) + i16(-1) + i32(-1) +
                 i32(len(kvs) if record_count is None else record_count) + recs)
    crc = crc32c(after_crc)
    tail = i32(-1) + i8(2) + struct.pack(">I", crc) + after_crc  # partitionLeaderEpoch .. end
    return i64(0) + i32(len(tail)) + tail


# -- legacy message sets (magic 0 and 1) -------------------------------------

def legacy_message(offset, key, value, magic=0, attributes=0, timestamp=-1, crc_ok=True):
    """One message of format magic 0 or 1 with its CRC-32 (IEEE)."""
    body = i8(magic) + i8(attributes) + (i64(timestamp) if magic == 1 else b"") + nbytes(key) + nbytes(value)
    crc = zlib.crc32(body) ^ (0 if crc_ok else 1)
    msg = struct.pack(">I", crc) + body
    return i64(offset) + i32(len(msg)) + msg


def parse_message_set(data):
    """-> [dict(offset, magic, attributes, timestamp, key, value, crc_ok)]; a
    partial trailing message is ignored (as clients do)."""
    out = []
    r = Reader(data)
    while r.left() >= 12:
        offset, size = r.i64(), r.i32()
        if size > r.left():
            break
        body = r.take(size)
        (crc,) = struct.unpack(">I", body[:4])
        m = Reader(body[4:])
        magic, attributes = m.i8(), m.i8()
        ts = m.i64() if magic == 1 else -1
        klen = m.i32()
        key = None if klen < 0 else m.take(klen)
        vlen = m.i32()
        value = None if vlen < 0 else m.take(vlen)
        out.append(dict(offset=offset, magic=magic, attributes=attributes, timestamp=ts, key=key, value=value,
                        crc_ok=crc == zlib.crc32(body[4:]), left=m.left()))
    return out


def create_topics_v1_body(topics, timeout_ms=30000, validate_only=False):
    """CreateTopics v1: topics = [(name, partitions)] (replication factor 1, no configs)."""
    return (array(topics, lambda t: string(t[0]) + i32(t[1]) + i16(1) + array([]) + array([])) +
            i32(timeout_ms) + i8(1 if validate_only else 0))


def parse_create_topics_v1(body):
    """-> {name: (error_code, error_message)}"""
    r = Reader(body)
    return dict(r.array(lambda r: (r.string(), (r.i16(), r.string()))))


def create_topic(port, topic, nparts, configs=(), timeout_ms=15000, replication_factor=1):
    """CreateTopics v1 of one topic (configs [(name, value)]) -> (error code, message)."""
    body = (array([topic], lambda t: string(t) + i32(nparts) + i16(replication_factor) + array([]) +
                  array(list(configs), lambda c: string(c[0]) + string(c[1]))) + i32(timeout_ms) + i8(0))
    r = call(port, 19, 1, body)
    return parse_create_topics_v1(r.d[r.p:])[topic]


def find_coordinator(port, key, key_type=0):
    """FindCoordinator v1 for key (key_type 0: group, 1: transactional id) -> (error code, node id, port)."""
    r = call(port, 10, 1, string(key) + i8(key_type))
    r.i32()
    err = r.i16()
    r.string()
    node = r.i32()
    r.string()
    return err, node, r.i32()


def find_coordinator_error(port, key, key_type=0):
    """FindCoordinator v1 for key (key_type 0: group, 1: transactional id) -> its error code."""
    return find_coordinator(port, key, key_type)[0]


def partition_leaders(port, topic):
    """Metadata v1 of topic at port -> {partition: leader node id}; {} while the topic has an error."""
    r = call(port, 3, 1, metadata_v1_body([topic]))
    err, parts = parse_metadata_v1(r.d[r.p:])["topics"][topic]
    return {idx: leader for _e, idx, leader in parts} if err == 0 else {}


def java_hash(s):
    """Java's String.hashCode: 31*h + c over UTF-16 code units, as a signed 32-bit int."""
    b = s.encode("utf-16-be")
    h = 0
    for i in range(0, len(b), 2):
        h = (31 * h + int.from_bytes(b[i:i + 2], "big")) & 0xffffffff
    return h - (1 << 32) if h >= 1 << 31 else h


def coordinator_partition(key, n):
    """The __consumer_offsets / __transaction_state partition of a group or transactional id
    among n, as Kafka computes it: Utils.abs(key.hashCode()) % n, with abs(MIN_VALUE) = 0."""
    h = java_hash(key)
    return (0 if h == -(1 << 31) else abs(h)) % n


def metadata_topic_error(port, topic):
    """Metadata v4 for topic, auto-creation off -> the topic's error code."""
    r = call(port, 3, 4, array([topic], string) + i8(0))
    r.i32()
    r.array(lambda r: (r.i32(), r.string(), r.i32(), r.string()))
    r.string()  # cluster id
    r.i32()  # controller id
    n = r.i32()
    if n != 1:
        raise AssertionError("Metadata v4 answered %d topics for one" % n)
    return r.i16()


def wait_coordinator(port, key="", key_type=0, timeout_s=30):
    """FindCoordinator v1 until it answers without error: the broker makes
    __consumer_offsets (key_type 0) or __transaction_state (1) on the first
    request for it, off its event loop, and answers COORDINATOR_NOT_AVAILABLE
    (15) meanwhile. Raises on any other error or after timeout_s."""
    deadline = time.monotonic() + timeout_s
    while True:
        err = find_coordinator_error(port, key, key_type)
        if err == 0:
            return
        if err != 15 or time.monotonic() >= deadline:
            raise AssertionError("FindCoordinator(%r, %d): error %d" % (key, key_type, err))
        time.sleep(0.05)

"""What the log-compaction tests (tests/integration/105x-*) share: waiting for
cleaner passes in the broker log, sealing the active segment, reading a
partition back whole (confluent_kafka with check.crcs, or kafka-python),
the files and batch headers of a partition, the "latest value per key"
scenario with its checks, and Checks to run independent checks to the end.

    import compaction as cp

    cp.create(b, "t", cp.topic_config(**{"delete.retention.ms": "4000"}))
    w = cp.write_versions(b, "t", keys=100, versions=100, tombstoned=10)
    sentinel = cp.seal(b, ["t"])["t"]        # every record so far is now in a sealed segment
    pos = cp.wait_pass(b, "t", end_min=sentinel)[2]   # log position after that pass's line
    cp.check_latest(cp.read_all(b, "t"), w, sentinel, "kept", "after the pass")

A pass is seen through the one line the broker logs after it:
    cleaner: '<dir>/<topic>-<partition>': cleaned [<from>, <to>) ...
wait_pass() waits for such a line (bounded), never for a guessed time.
"""

import os
import re
import sys
import time

import batchwire
from gregor import BrokerError
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition

# Broker settings of the tests: the cleaner looks for work every 100 ms.
BROKER_OVERRIDES = {"num.partitions": "1", "log.cleaner.backoff.ms": "100"}

SEGMENT_MS = 1000  # segment.ms of the tests' topics: seal() waits this long between sentinels

PAD = b"0123456789abcdef" * 6  # 96 bytes in every value: the log shrinks visibly, codecs have work


def topic_config(**extra):
    """A compacted topic that rolls often and is cleaned as soon as anything is dirty."""
    cfg = {"cleanup.policy": "compact", "segment.bytes": "16384", "segment.ms": str(SEGMENT_MS),
           "min.cleanable.dirty.ratio": "0.01"}
    cfg.update(extra)
    return cfg


def create(b, topic, config):
    batchwire.create(b, topic, config)


# -- the broker log -----------------------------------------------------------

def _pass_re(topic, partition):
    return re.compile(r"cleaner: '[^']*/%s-%d': cleaned \[(\d+), (\d+)\)" % (re.escape(topic), partition))


def passes(b, topic, partition=0, since=0):
    """Every pass over topic-partition logged from char offset since: [(from, to, end_pos)],
    end_pos being the log offset just after that line."""
    text = b.log_text()
    out = []
    for m in _pass_re(topic, partition).finditer(text, since):
        eol = text.find("\n", m.end())
        out.append((int(m.group(1)), int(m.group(2)), len(text) if eol < 0 else eol + 1))
    return out


def wait_pass(b, topic, partition=0, since=0, end_min=0, timeout_s=30):
    """Waits for a pass logged after char offset since whose range ends at or
    after end_min; returns (from, to, end_pos) of the first such pass."""
    deadline = time.monotonic() + timeout_s
    while True:
        for p in passes(b, topic, partition, since):
            if p[1] >= end_min:
                return p
        if time.monotonic() >= deadline:
            raise AssertionError("no cleaner pass over '%s-%d' ending at or after %d within %.0fs "
                                 "(passes seen: %r)\n%s" % (topic, partition, end_min, timeout_s,
                                                            [p[:2] for p in passes(b, topic, partition, since)],
                                                            b.log_tail(60)))
        if not b.alive():
            raise AssertionError("broker exited while waiting for a cleaner pass\n%s" % b.log_tail())
        time.sleep(0.05)


# -- files of a partition -----------------------------------------------------

def files(b, topic, partition=0, suffix=".log"):
    d = b.partition_dir(topic, partition)
    return sorted(n for n in os.listdir(d) if n.endswith(suffix))


def disk_bytes(b, topic, partition=0):
    """Sum of the sizes of the partition's *.log files."""
    d = b.partition_dir(topic, partition)
    return sum(os.path.getsize(os.path.join(d, n)) for n in files(b, topic, partition))


def segment_bases(b, topic, partition=0):
    return [int(n[:-4]) for n in files(b, topic, partition) if n[:-4].isdigit()]


def disk_batches(b, topic, partition=0):
    """Every batch of every segment, in offset order: [(segment name, bytes)]."""
    d = b.partition_dir(topic, partition)
    return [(n, x) for n in files(b, topic, partition) if n[:-4].isdigit()
            for x in batchwire.segment_batches(os.path.join(d, n))]


# -- writing ------------------------------------------------------------------

def producer(b, **conf):
    c = {"bootstrap.servers": b.bootstrap, "acks": "all", "linger.ms": 5, "batch.size": 4096}
    c.update(conf)
    return Producer(c)


def produce_one(p, topic, key, value, partition=0):
    """Produces one record and waits for it; returns its offset."""
    got = []
    p.produce(topic, key=key, value=value, partition=partition,
              on_delivery=lambda err, m: got.append((err, m.offset() if m else None)))
    if p.flush(15) != 0 or not got or got[0][0] is not None:
        raise AssertionError("produce of %r to '%s' failed: %r" % (key, topic, got))
    return got[0][1]


def seal(b, topics, partition=0, timeout_s=15):
    """Writes sentinel records (keys b"sentinel-N") to each of topics until
    one starts a new segment (rolled by segment.ms): every earlier record is
    then in a sealed, cleanable segment. Returns {topic: offset of that
    sentinel} (the base of the active segment)."""
    p = producer(b)
    deadline = time.monotonic() + timeout_s
    out = {}
    n = 0
    while True:
        time.sleep(SEGMENT_MS / 1000.0 + 0.1)
        for t in topics:
            if t not in out:
                off = produce_one(p, t, b"sentinel-%d" % n, b"sentinel", partition)
                if off in segment_bases(b, t, partition):
                    out[t] = off
        if len(out) == len(topics):
            return out
        if time.monotonic() >= deadline:
            raise AssertionError("no segment of %r starts at a sentinel within %.0fs"
                                 % ([t for t in topics if t not in out], timeout_s))
        n += 1


def key_of(k):
    return b"key-%03d" % k


def value_of(k, v):
    return b"key-%03d:v%02d:" % (k, v) + PAD


class Written:
    """What write_versions() wrote: latest[key] = (offset, value) of every live
    key, tomb[key] = offset of the tombstone of every tombstoned key,
    at[offset] = (key, value) and ts[offset] = timestamp of every record,
    payload = bytes of keys and values written, tomb_t0 = wall-clock seconds just before the first
    tombstone was produced."""

    def __init__(self):
        self.latest, self.tomb, self.at, self.payload, self.tomb_t0 = {}, {}, {}, 0, None
        self.ts = {}  # offset -> CreateTime of the record
        self.hdrs = {}  # offset -> headers of the record (None: none)


def write_versions(b, topic, keys, versions, tombstoned, spread=False, first=0, w=None, headers=False,
                   **producer_conf):
    """versions rounds of updates of keys keys (round v writes value_of(k, v)
    for every k; with spread, only for the keys k >= v * keys / versions, so
    that the last values lie all over the log), then tombstones for the
    keys `tombstoned` (a number: the first that many keys; or key numbers).
    Rounds are numbered from first; with headers, every record carries
    headers naming its key and round. Checks every delivery; returns w (a
    new Written by default) updated with what was written."""
    w = w or Written()
    p = producer(b, **producer_conf)
    errors = []
    sent = [0, 0]  # produced, delivered

    def delivered(err, m, hdrs=None):
        if err is not None:
            errors.append(err)
            return
        sent[1] += 1
        key, off = m.key(), m.offset()
        w.at[off] = (key, m.value())
        w.ts[off] = m.timestamp()[1]
        w.hdrs[off] = hdrs
        w.latest.pop(key, None)
        w.tomb.pop(key, None)
        if m.value() is None:
            w.tomb[key] = off
        else:
            w.latest[key] = (off, m.value())

    def send(key, value, v=None):
        hdrs = [("key", key), ("round", b"%d" % v if v is not None else None)] if headers else None
        p.produce(topic, key=key, value=value, partition=0, headers=hdrs,
                  on_delivery=lambda err, m: delivered(err, m, hdrs))
        sent[0] += 1
        p.poll(0)

    for v in range(first, first + versions):
        for k in range((v - first) * keys // versions if spread else 0, keys):
            send(key_of(k), value_of(k, v), v)
            w.payload += len(key_of(k)) + len(value_of(k, v))
    if p.flush(30) != 0 or errors:
        raise AssertionError("'%s': %d records unsent, delivery errors %r" % (topic, len(p), errors[:3]))
    w.tomb_t0 = time.time()
    for k in (range(tombstoned) if isinstance(tombstoned, int) else tombstoned):
        send(key_of(k), None)
    if p.flush(30) != 0 or errors or sent[0] != sent[1]:
        raise AssertionError("'%s': %d records produced, %d delivered, delivery errors %r"
                             % (topic, sent[0], sent[1], errors[:3]))
    return w


# -- reading ------------------------------------------------------------------

def read_all(b, topic, partition=0, isolation="read_uncommitted", timeout_s=30, start=OFFSET_BEGINNING,
             full=False):
    """Reads the partition from its beginning (or offset start) to the end
    (high watermark, or the last stable offset for read_committed) with
    librdkafka checking every CRC: [(offset, key, value)], with full
    [(offset, key, value, timestamp, headers)]. Any consumer error fails."""
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "compaction-reader",
                  "enable.auto.commit": False, "enable.partition.eof": True, "check.crcs": True,
                  "isolation.level": isolation, "fetch.wait.max.ms": 100})
    try:
        c.assign([TopicPartition(topic, partition, start)])
        out = []
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    return out
                raise AssertionError("'%s-%d' (%s) after %d records: consumer error %s"
                                     % (topic, partition, isolation, len(out), m.error()))
            out.append((m.offset(), m.key(), m.value()) + ((m.timestamp()[1], m.headers()) if full else ()))
        raise AssertionError("'%s-%d' (%s): no end of partition within %.0fs (%d records read)"
                             % (topic, partition, isolation, timeout_s, len(out)))
    finally:
        c.close()


def kafka_python_read(b, topic, partition=0, api_version=None, timeout_s=30):
    """Every record of the partition read by kafka-python (check_crcs, no
    group; api_version as KafkaConsumer takes it, None to probe):
    [(offset, key, value)]."""
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTopicPartition

    c = KafkaConsumer(bootstrap_servers=b.bootstrap, group_id=None, enable_auto_commit=False, check_crcs=True,
                      request_timeout_ms=15000, fetch_max_wait_ms=100, api_version=api_version)
    try:
        tp = KTopicPartition(topic, partition)
        c.assign([tp])
        c.seek_to_beginning(tp)
        end = c.end_offsets([tp])[tp]
        out = []
        deadline = time.monotonic() + timeout_s
        while c.position(tp) < end:
            if time.monotonic() >= deadline:
                raise AssertionError("kafka-python %s stuck at offset %d of %d of '%s-%d' after %d records"
                                     % (api_version, c.position(tp), end, topic, partition, len(out)))
            for m in c.poll(timeout_ms=500).get(tp, []):
                out.append((m.offset, m.key, m.value))
        return out
    finally:
        c.close()


def check_increasing(recs, what):
    offs = [r[0] for r in recs]
    for a, z in zip(offs, offs[1:]):
        if z <= a:
            raise AssertionError("%s: offset %d follows %d" % (what, z, a))


def check_unique_below(recs, below, what):
    """Every record below offset below has a key no other such record has."""
    seen = {}
    for off, key, _ in recs:
        if off < below:
            if key in seen:
                raise AssertionError("%s: key %r at offsets %d and %d, both below the active segment (%d)"
                                     % (what, key, seen[key], off, below))
            seen[key] = off


def check_latest(recs, w, below, tombstones, what):
    """The records read back after a pass that covered [.., below): offsets
    increasing; unique keys below `below`; every live key exactly once, at
    the offset and with the value of its last write; every tombstoned key
    either once as its tombstone (tombstones="kept"), or absent
    (tombstones="gone"), or either (tombstones="either"); nothing else but
    sentinels."""
    check_increasing(recs, what)
    check_unique_below(recs, below, what)
    got = {}
    for off, key, value in recs:
        got.setdefault(key, []).append((off, value))
    for key, last in w.latest.items():
        if got.get(key) != [last]:
            raise AssertionError("%s: key %r read as %r, want only its last write %r"
                                 % (what, key, got.get(key), [last]))
    for key, off in w.tomb.items():
        allowed = {"kept": [[(off, None)]], "gone": [None], "either": [[(off, None)], None]}[tombstones]
        if got.get(key) not in allowed:
            raise AssertionError("%s: tombstoned key %r read as %r, want %s (tombstone %s)"
                                 % (what, key, got.get(key), " or ".join(map(repr, allowed)), tombstones))
    other = [k for k in got if k not in w.latest and k not in w.tomb and not k.startswith(b"sentinel-")]
    if other:
        raise AssertionError("%s: unexpected keys %r" % (what, other[:5]))


def wait_tombstones_gone(b, topics, w_of, retention_ms, reader=None):
    """After delete.retention.ms has passed since the tombstones were
    written, checks (check_latest) that each topic's tombstoned keys are
    gone, reading with reader(b, topic) (default read_all). A pass that
    already ran past the horizon may have removed them; if not, up to two
    further passes are awaited (one that started before the horizon may end
    after it; the broker owes the next one without new writes: tombstones
    past their horizon in the cleaned part). Returns the broker log position
    after the last pass awaited."""
    t0 = min(w_of[t].tomb_t0 for t in topics)
    wait_s = t0 + retention_ms / 1000.0 + 0.2 - time.time()
    if wait_s > 0:
        time.sleep(wait_s)
    mark = b.log_size()
    end_pos = mark
    for t in topics:
        w = w_of[t]
        pos = mark
        for attempt in (0, 1, 2):
            recs = (reader or read_all)(b, t)
            left = [k for _, k, _ in recs if k in w.tomb]
            if not left:
                break
            if attempt == 2:
                raise AssertionError("'%s': tombstoned keys %r still read after two passes past "
                                     "delete.retention.ms (%d ms)" % (t, left, retention_ms))
            pos = wait_pass(b, t, since=pos)[2]
        check_latest(recs, w, segment_bases(b, t)[-1], "gone", "'%s' past the tombstone horizon" % t)
        end_pos = max(end_pos, pos)
    return end_pos


class BatchHeader:
    """The header fields of one batch's bytes (record batch v2)."""

    def __init__(self, x):
        self.raw = x
        self.base_offset = int.from_bytes(x[0:8], "big", signed=True)
        attrs, lod, _bts, _mts, count, crc_ok = batchwire.header_fields(x)
        self.attributes, self.last_offset_delta, self.record_count, self.crc_ok = attrs, lod, count, crc_ok
        self.producer_id = int.from_bytes(x[43:51], "big", signed=True)
        self.producer_epoch = int.from_bytes(x[51:53], "big", signed=True)
        self.base_sequence = int.from_bytes(x[53:57], "big", signed=True)

    def ident(self):
        """What a duplicate check compares: offsets, producer id, epoch, sequences."""
        return (self.base_offset, self.last_offset_delta, self.producer_id, self.producer_epoch, self.base_sequence)

    def as_sent(self):
        """The bytes as a producer sends them: base offset 0, partitionLeaderEpoch -1
        (neither is under the CRC)."""
        return bytes(8) + self.raw[8:12] + b"\xff\xff\xff\xff" + self.raw[16:]


def headers(b, topic, partition=0):
    return [BatchHeader(x) for _, x in disk_batches(b, topic, partition)]


class Checks:
    """Runs independent checks of one test to the end, so that one failing
    does not hide the others; raise_any() fails with all of them."""

    def __init__(self):
        self.failed = []

    def run(self, what, fn, *args):
        try:
            return fn(*args)
        except (AssertionError, BrokerError) as e:
            self.failed.append("%s: %s" % (what, e))
            sys.stdout.write("FAILED %s: %s\n" % (what, e))
            sys.stdout.flush()
            return None

    def raise_any(self):
        if self.failed:
            raise AssertionError("%d check(s) failed:\n  %s" % (len(self.failed), "\n  ".join(self.failed)))

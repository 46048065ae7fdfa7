#!/usr/bin/python3
"""1050: cleanup.policy=compact keeps exactly the latest value per key.

One topic (segment.bytes=16384, segment.ms=1000, min.cleanable.dirty.ratio=0.01,
delete.retention.ms=4000; the cleaner looks for work every 100 ms):
100 keys x 100 updates (the value names its version), then tombstones for
10 keys, then a sentinel once segment.ms has passed so that all of it lies
in sealed segments. After a pass covering everything below the sentinel, a
consumer reading from the beginning (check.crcs=true) sees:
  - offsets increasing, every key at most once below the active segment;
  - each of the 90 live keys once, with version 99, at the offset it was
    written at (cleaning keeps offsets); reading from a removed offset
    starts at the next record kept; ListOffsets by the timestamp of a
    record kept or removed gives the first record kept at or after it;
  - each tombstoned key once, as its tombstone, while delete.retention.ms
    has not passed (checked only when the read ends before the horizon);
  - after delete.retention.ms and a further pass (the broker owes it
    without new writes), the tombstoned keys not at all;
and the partition's *.log files hold under a tenth of the bytes written.
The same holds after a clean restart, and the next pass starts where the
last one before the restart ended (cleaner-offset-checkpoint). Fetches
from 40 offsets of a cleaned log whose kept records are spread over a
large segment each start at the first record kept at or after the offset.
Then, on a broker whose offset map holds 37 keys
(log.cleaner.dedupe.buffer.size=1024), 60 keys x 6 rounds are cleaned by
passes of at most one map each and end up the same: every key once, at
its last value. On that broker too: min.compaction.lag.ms=4000
keeps the last 4 s of writes uncleaned; max.compaction.lag.ms=2000 gets a
log cleaned whose dirty ratio stays under min.cleanable.dirty.ratio=0.99;
a topic with segment.bytes=14 (one record per segment) is cleaned to one
record per key too, and so is a topic switched from cleanup.policy=delete
to compact by AlterConfigs (and no more once switched back). Runtime ~40 s.
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

import compaction as cp  # noqa: E402
from confluent_kafka import Consumer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, ConfigResource  # noqa: E402
from gregor import Broker, check, eq, log, main  # noqa: E402

TOPIC = "compacted"
KEYS, VERSIONS, TOMBSTONED = 100, 100, 10
RETENTION_MS = 4000


def test():
    with Broker(overrides=cp.BROKER_OVERRIDES) as b:
        cp.create(b, TOPIC, cp.topic_config(**{"delete.retention.ms": str(RETENTION_MS)}))
        w = cp.write_versions(b, TOPIC, KEYS, VERSIONS, TOMBSTONED)
        log("wrote %d records (%d bytes of keys and values), %d segments"
            % (KEYS * VERSIONS + TOMBSTONED, w.payload, len(cp.files(b, TOPIC))))
        sentinel = cp.seal(b, [TOPIC])[TOPIC]
        first, end, _ = cp.wait_pass(b, TOPIC, end_min=sentinel)
        log("pass [%d, %d) covers everything below the sentinel at %d" % (first, end, sentinel))
        recs = cp.read_all(b, TOPIC)
        read_done = time.time()
        if read_done < w.tomb_t0 + RETENTION_MS / 1000.0:
            cp.check_latest(recs, w, sentinel, "kept", "after the first full pass")
            log("%d records read; tombstones still there %.1f s before their horizon"
                % (len(recs), w.tomb_t0 + RETENTION_MS / 1000.0 - read_done))
        else:
            log("the first full pass ended past the tombstone horizon: tombstones not checked before it")
        gap = KEYS * VERSIONS // 2  # a pass past the horizon may remove the tombstones meanwhile: left aside
        eq([r for r in cp.read_all(b, TOPIC, start=gap) if r[1] not in w.tomb],
           [r for r in recs if r[0] >= gap and r[1] not in w.tomb],
           "records read from offset %d, which cleaning removed" % gap)

        check_times(b, w)
        cp.wait_tombstones_gone(b, [TOPIC], {TOPIC: w}, RETENTION_MS)
        size = cp.disk_bytes(b, TOPIC)
        log("tombstones gone; %d bytes in %d segment files (%d bytes written)"
            % (size, len(cp.files(b, TOPIC)), w.payload))
        check(size * 10 < w.payload, "the *.log files hold %d bytes, want under a tenth of the %d bytes written"
              % (size, w.payload))

        cleaned_to = max(p[1] for p in cp.passes(b, TOPIC))
        b.restart()
        cp.check_latest(cp.read_all(b, TOPIC), w, sentinel, "gone", "after a clean restart")
        # The next pass starts where the last one before the restart ended
        # (cleaner-offset-checkpoint), not at the log start again.
        mark = b.log_size()
        cp.write_versions(b, TOPIC, 5, 1, 0, first=VERSIONS, w=w)
        sentinel = cp.seal(b, [TOPIC])[TOPIC]
        cp.wait_pass(b, TOPIC, since=mark, end_min=sentinel)
        eq(cp.passes(b, TOPIC, since=mark)[0][0], cleaned_to,
           "first offset of the first pass after a restart (the last pass before it ended there)")
        cp.check_latest(cp.read_all(b, TOPIC), w, sentinel, "gone", "after a pass following the restart")
        index_lookups(b)
    small_map()


def index_lookups(b):
    """Fetches from 40 offsets of a cleaned log in 1 MB segments whose kept
    records are spread all over it (key k last written in round
    k * 3 / 400): each starts at the first record kept at or after it,
    wherever the offset index of the cleaned segment points."""
    t = "spread"
    cp.create(b, t, cp.topic_config(**{"segment.bytes": "1048576"}))
    w = cp.write_versions(b, t, 400, 3, 0, spread=True)
    sentinel = cp.seal(b, [t])[t]
    cp.wait_pass(b, t, end_min=sentinel)
    kept = [o for o, _, _ in cp.read_all(b, t)]
    cp.check_latest(cp.read_all(b, t), w, sentinel, "kept", "'%s' after a pass" % t)
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "lookups", "enable.partition.eof": True,
                  "check.crcs": True, "enable.auto.commit": False, "fetch.wait.max.ms": 10})
    try:
        for start in range(0, sentinel + 1, max(1, sentinel // 40)):
            c.assign([TopicPartition(t, 0, start)])
            got = None
            deadline = time.monotonic() + 10
            while got is None and time.monotonic() < deadline:
                m = c.poll(0.5)
                if m is not None:
                    check(not m.error(), "fetch of '%s' from %d: %s" % (t, start, m.error()))
                    got = m.offset()
            c.unassign()
            eq(got, min(o for o in kept if o >= start), "first record fetched from offset %d" % start)
    finally:
        c.close()
    log("fetches from offsets of the cleaned '%s' start at the right record" % t)


def check_times(b, w):
    """ListOffsets by timestamp on the cleaned log: for timestamps of records
    kept and removed alike, the first record kept whose timestamp is at
    least that one (the time indexes of the cleaned segments point at
    records that exist)."""
    # Timestamps up to the last live record's only: the tombstones after it
    # may go at any moment now.
    kept = [o for o, k, _ in cp.read_all(b, TOPIC) if k in w.latest]
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "times"})
    try:
        for o in list(range(0, KEYS * VERSIONS, 499)) + kept[::10]:
            t = w.ts[o]
            want = min(k for k in kept if w.ts[k] >= t)
            got = c.offsets_for_times([TopicPartition(TOPIC, 0, t)], timeout=10)[0]
            check(got.error is None, "offsets_for_times(%d): %s" % (t, got.error))
            eq(got.offset, want, "offsets_for_times(timestamp of offset %d)" % o)
    finally:
        c.close()


def small_map():
    """log.cleaner.dedupe.buffer.size=1024: the offset map holds 37 keys, so
    60 keys x 6 rounds are cleaned over many passes, each up to where its
    map filled; in the end every key is still there once, at its last value."""
    overrides = dict(cp.BROKER_OVERRIDES, **{"log.cleaner.dedupe.buffer.size": "1024"})
    with Broker(overrides=overrides, name="1050-small-map") as b:
        cp.create(b, TOPIC, cp.topic_config(**{"segment.bytes": "2048", "delete.retention.ms": "600000"}))
        w = cp.write_versions(b, TOPIC, 60, 6, 6)
        sentinel = cp.seal(b, [TOPIC])[TOPIC]
        cp.wait_pass(b, TOPIC, end_min=sentinel)
        ranges = [p[:2] for p in cp.passes(b, TOPIC)]
        check(max(z - a for a, z in ranges) < 60, "a pass covered %r: more keys than the map holds" % (ranges,))
        cp.check_latest(cp.read_all(b, TOPIC), w, sentinel, "kept", "after passes with a 37-key map")
        log("small map: %d passes %s; every key once, at its last value" % (len(ranges), ranges))
        lags(b)
        tiny_segments(b)
        altered_policy(b)


def altered_policy(b):
    """A topic created with cleanup.policy=delete and switched to compact by
    AlterConfigs is cleaned like any compacted topic; switched back to
    delete, it is not cleaned any more: every record written after that
    stays."""
    t = "altered"
    cfg = cp.topic_config(**{"cleanup.policy": "delete"})
    cp.create(b, t, cfg)
    w = cp.write_versions(b, t, 30, 5, 0)
    admin = AdminClient({"bootstrap.servers": b.bootstrap})

    def policy(value):
        for f in admin.alter_configs([ConfigResource("topic", t, set_config=dict(cfg, **{
                "cleanup.policy": value}))]).values():
            f.result(10)

    policy("compact")
    sentinel = cp.seal(b, [t])[t]
    cp.wait_pass(b, t, end_min=sentinel)
    cp.check_latest(cp.read_all(b, t), w, sentinel, "kept", "'%s' after cleanup.policy=compact by AlterConfigs" % t)
    policy("delete")
    mark = b.log_size()
    cp.write_versions(b, t, 30, 3, 0, first=5)
    last = cp.seal(b, [t])[t]
    time.sleep(1.5)  # time for passes that must not happen
    eq(cp.passes(b, t, since=mark), [], "passes over '%s' after cleanup.policy=delete" % t)
    eq([o for o, _, _ in cp.read_all(b, t) if o > sentinel], list(range(sentinel + 1, last + 1)),
       "offsets of '%s' written after cleanup.policy=delete" % t)
    log("cleanup.policy switched by AlterConfigs: cleaned while compact, not once delete again")


def tiny_segments(b):
    """segment.bytes=14, Kafka's smallest: every batch is a segment of its
    own (here one record each: 20 keys x 5 rounds), so a pass writes a
    group per segment, most of them left empty; every key once, at its
    last value, and the empty segments still give the right offsets."""
    t = "tiny"
    cp.create(b, t, cp.topic_config(**{"segment.bytes": "14"}))
    p = cp.producer(b, **{"linger.ms": 0})
    w = cp.Written()
    for v in range(5):
        for k in range(20):
            off = cp.produce_one(p, t, cp.key_of(k), cp.value_of(k, v))
            w.latest[cp.key_of(k)] = (off, cp.value_of(k, v))
    sentinel = cp.produce_one(p, t, b"sentinel-0", b"sentinel")
    cp.wait_pass(b, t, end_min=sentinel)
    recs = cp.read_all(b, t)
    cp.check_latest(recs, w, sentinel, "kept", "'%s' after a pass" % t)
    eq(cp.read_all(b, t, start=5), [r for r in recs if r[0] >= 5], "'%s' read from a removed offset" % t)
    log("segment.bytes=14: %d records left in %d segments" % (len(recs), len(cp.segment_bases(b, t))))


def lags(b):
    """min.compaction.lag.ms=4000: nothing written in the last 4 s is
    cleaned; max.compaction.lag.ms=2000 on a topic whose dirty ratio stays
    under min.cleanable.dirty.ratio=0.99: cleaned anyway once its dirty part
    is 2 s old."""
    cp.create(b, "min-lag", cp.topic_config(**{"min.compaction.lag.ms": "4000"}))
    cp.create(b, "max-lag", cp.topic_config(**{"max.compaction.lag.ms": "2000", "min.cleanable.dirty.ratio": "0.99"}))
    t0 = time.time()
    w = cp.write_versions(b, "min-lag", 20, 5, 0)
    sentinel = cp.seal(b, ["min-lag"])["min-lag"]
    recs = cp.read_all(b, "min-lag")
    if time.time() < t0 + 4:
        eq(len(recs), sentinel + 1, "records of 'min-lag' within min.compaction.lag.ms of their writing")
    cp.wait_pass(b, "min-lag", end_min=sentinel)
    check(time.time() >= t0 + 4, "'min-lag' cleaned within min.compaction.lag.ms of its first write")
    cp.check_latest(cp.read_all(b, "min-lag"), w, sentinel, "kept", "'min-lag' past min.compaction.lag.ms")

    w = cp.write_versions(b, "max-lag", 20, 5, 0)
    sentinel = cp.seal(b, ["max-lag"])["max-lag"]
    cp.wait_pass(b, "max-lag", end_min=sentinel)  # the first pass: all dirty, ratio 1
    cp.write_versions(b, "max-lag", 2, 1, 0, first=5, w=w)  # a dirty part far under the ratio
    mark = b.log_size()
    sentinel = cp.seal(b, ["max-lag"])["max-lag"]
    cp.wait_pass(b, "max-lag", since=mark, end_min=sentinel)
    cp.check_latest(cp.read_all(b, "max-lag"), w, sentinel, "kept", "'max-lag' past max.compaction.lag.ms")
    log("min.compaction.lag.ms and max.compaction.lag.ms followed")


main(test)

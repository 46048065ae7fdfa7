#!/usr/bin/python3
"""Produce validates every batch down to its records, compressed ones too,
as Kafka's log validator does: the wrong batch is refused with Kafka's error
(and, on Produce v8, the offending records' indexes), nothing of it is
stored, and the broker keeps serving.

Raw Produce v8 (tests/lib/batchwire.py) for what no client writes:
lastOffsetDelta not matching the records, offset deltas out of order, a
record length that lies, a null header key, a body that does not
decompress, a decompression bomb, a keyless record on a compacted topic,
a batch over max.message.bytes.  Timestamps: message.timestamp.after.max.ms
(default one hour), message.timestamp.before.max.ms, the deprecated
message.timestamp.difference.max.ms standing in for both, the broker's
log.message.timestamp.* defaults, LogAppendTime topics exempt, and a real client (confluent-kafka) getting INVALID_TIMESTAMP
for a record two hours ahead.
"""
import gzip
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

from batchwire import Rec, batch, create, produce  # noqa: E402
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition  # noqa: E402
from gregor import Broker, check, eq, log, main  # noqa: E402

CORRUPT_MESSAGE, MESSAGE_TOO_LARGE, INVALID_TIMESTAMP, INVALID_RECORD = 2, 10, 32, 87
HOUR = 3600 * 1000


def end_offset(b, topic):
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "wm"})
    try:
        return c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1]
    finally:
        c.close()


def recs(n, now, key=b"k"):
    return [Rec(key, b"value-%d" % i, ts_delta=i) for i in range(n)]


def refused(b, topic, blob, want_err, want_idx=None, what=""):
    """Produces blob, expects want_err (and record indexes), and no growth of the log."""
    before = end_offset(b, topic)
    err, base, rec_errs, msg = produce(b.port, topic, 0, blob)
    log("%s: error %d, record errors %s, message %r" % (what, err, rec_errs, msg))
    eq(err, want_err, "%s: error code" % what)
    if want_idx is not None:
        eq(sorted(i for i, _ in rec_errs), want_idx, "%s: record error indexes" % what)
    check(msg, "%s: an error message" % what)
    eq(end_offset(b, topic), before, "%s: nothing stored" % what)


def accepted(b, topic, blob, what=""):
    err, base, _, msg = produce(b.port, topic, 0, blob)
    eq(err, 0, "%s: accepted (message %r)" % (what, msg))
    return base


def structure(b, now):
    t = "v-structure"
    create(b, t)
    for codec in ("none", "gzip"):
        w = "%s batch" % codec
        refused(b, t, batch(recs(3, now), base_ts=now, codec=codec, last_offset_delta=5), INVALID_RECORD,
                what=w + " with lastOffsetDelta 5 for 3 records")
        refused(b, t, batch(recs(3, now), base_ts=now, codec=codec, last_offset_delta=2, record_count=2),
                INVALID_RECORD, what=w + " declaring 2 records of 3")
        bad = recs(4, now)
        bad[1].offset_delta, bad[2].offset_delta = 2, 1
        refused(b, t, batch(bad, base_ts=now, codec=codec), INVALID_RECORD, [1, 2],
                what=w + " with offset deltas 0 2 1 3")
        bad = recs(3, now)
        bad[1].length_fix = -2
        refused(b, t, batch(bad, base_ts=now, codec=codec), INVALID_RECORD, what=w + " whose record length lies")
        bad = recs(2, now)
        bad[1].headers = [(None, b"x")]
        refused(b, t, batch(bad, base_ts=now, codec=codec), INVALID_RECORD, what=w + " with a null header key")
        accepted(b, t, batch(recs(3, now), base_ts=now, codec=codec), what=w + " that is right")
    refused(b, t, batch(recs(2, now), base_ts=now, codec="gzip", body=b"\x1f\x8b\x08\x00not gzip at all"),
            CORRUPT_MESSAGE, what="gzip batch that does not decompress")
    whole = gzip.compress(b"".join([b"\x00" * (1 << 20)] * 80))
    refused(b, t, batch(recs(1, now), base_ts=now, codec="gzip", body=whole), MESSAGE_TOO_LARGE,
            what="gzip batch of 80 MiB of zeros")
    eq(end_offset(b, t), 6, "two good batches stored")


def limits(b, now):
    t = "v-small"
    create(b, t, {"max.message.bytes": "1000"})
    refused(b, t, batch([Rec(b"k", b"x" * 2000)], base_ts=now), MESSAGE_TOO_LARGE,
            what="2000-byte record under max.message.bytes=1000")
    accepted(b, t, batch([Rec(b"k", b"x" * 500)], base_ts=now), what="500-byte record")
    t = "v-compact"
    create(b, t, {"cleanup.policy": "compact"})
    refused(b, t, batch([Rec(b"k", b"a"), Rec(None, b"b"), Rec(b"k", b"c")], base_ts=now, codec="gzip"),
            INVALID_RECORD, [1], what="keyless record on a compacted topic")
    accepted(b, t, batch([Rec(b"k", b"a")], base_ts=now), what="keyed record on a compacted topic")


def timestamps(b, now):
    t = "v-ts-default"
    create(b, t)
    for codec in ("none", "gzip"):
        future = [Rec(b"k", b"a"), Rec(b"k", b"b", ts_delta=2 * HOUR), Rec(b"k", b"c")]
        refused(b, t, batch(future, base_ts=now, codec=codec), INVALID_TIMESTAMP, [1],
                what="%s: a record 2 h ahead (after.max.ms default 1 h)" % codec)
    accepted(b, t, batch([Rec(b"k", b"a", ts_delta=30 * 60 * 1000)], base_ts=now), what="30 min ahead")
    accepted(b, t, batch([Rec(b"k", b"old")], base_ts=now - 365 * 24 * HOUR), what="a year old (before: no limit)")
    accepted(b, t, batch([Rec(b"k", b"none")], base_ts=-1), what="timestamp -1")

    t = "v-ts-before"
    create(b, t, {"message.timestamp.before.max.ms": str(HOUR), "message.timestamp.after.max.ms": "60000"})
    refused(b, t, batch([Rec(b"k", b"a"), Rec(b"k", b"b", ts_delta=-2 * HOUR)], base_ts=now), INVALID_TIMESTAMP,
            [1], what="2 h old under before.max.ms=1h")
    refused(b, t, batch([Rec(b"k", b"a", ts_delta=5 * 60 * 1000)], base_ts=now), INVALID_TIMESTAMP, [0],
            what="5 min ahead under after.max.ms=60s")
    accepted(b, t, batch([Rec(b"k", b"a", ts_delta=-30 * 60 * 1000)], base_ts=now), what="30 min old")

    t = "v-ts-difference"
    create(b, t, {"message.timestamp.difference.max.ms": str(10 * 60 * 1000)})
    refused(b, t, batch([Rec(b"k", b"a", ts_delta=-20 * 60 * 1000)], base_ts=now), INVALID_TIMESTAMP, [0],
            what="20 min old under difference.max.ms=10min")
    refused(b, t, batch([Rec(b"k", b"a", ts_delta=20 * 60 * 1000)], base_ts=now), INVALID_TIMESTAMP, [0],
            what="20 min ahead under difference.max.ms=10min")
    accepted(b, t, batch([Rec(b"k", b"a", ts_delta=5 * 60 * 1000)], base_ts=now), what="5 min ahead")

    t = "v-ts-lat"
    create(b, t, {"message.timestamp.type": "LogAppendTime"})
    accepted(b, t, batch([Rec(b"k", b"a", ts_delta=48 * HOUR)], base_ts=now), what="LogAppendTime: 2 days ahead")


def real_client(b):
    t = "v-client"
    create(b, t)
    results = []
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all", "retries": 0})
    now = int(time.time() * 1000)
    p.produce(t, value=b"ahead", timestamp=now + 2 * HOUR, on_delivery=lambda e, m: results.append(e))
    p.produce(t, value=b"fine", timestamp=now, on_delivery=lambda e, m: results.append(e))
    p.flush(15)
    log("delivery results: %s" % results)
    eq(len(results), 2, "delivery reports")
    codes = sorted(e.code() if e else 0 for e in results)
    # librdkafka may batch both records: then the batch is refused as a whole, as in Kafka
    check(codes in ([KafkaError.INVALID_TIMESTAMP] * 2, [0, KafkaError.INVALID_TIMESTAMP]),
          "INVALID_TIMESTAMP for the record 2 h ahead (got %s)" % codes)


def test():
    with Broker() as b:
        now = int(time.time() * 1000)
        structure(b, now)
        limits(b, now)
        timestamps(b, now)
        real_client(b)
        check(b.alive(), "broker still running")
    # broker-wide defaults reach topics that do not set their own
    with Broker(overrides={"log.message.timestamp.before.max.ms": str(HOUR),
                           "log.message.timestamp.after.max.ms": "60000"}) as b:
        now = int(time.time() * 1000)
        t = "v-ts-broker"
        create(b, t)
        refused(b, t, batch([Rec(b"k", b"a", ts_delta=-2 * HOUR)], base_ts=now), INVALID_TIMESTAMP, [0],
                what="2 h old under log.message.timestamp.before.max.ms=1h")
        refused(b, t, batch([Rec(b"k", b"a", ts_delta=2 * 60 * 1000)], base_ts=now), INVALID_TIMESTAMP, [0],
                what="2 min ahead under log.message.timestamp.after.max.ms=60s")
        accepted(b, t, batch([Rec(b"k", b"a", ts_delta=-30 * 60 * 1000)], base_ts=now), what="30 min old")


main(test)

#!/usr/bin/python3
"""A producer cannot make the log roll a segment per request.

Before, segment.ms counted from the first batch's producer timestamp to the
incoming one's, so batches whose timestamps step 8 days apart rolled a new
segment on every request; and a compressed batch could declare a
lastOffsetDelta near 2^31 for one record, taking 2^31 offsets so that the
next batch no longer fit the segment's int32 relative offsets. Now
segment.ms counts the broker's time since the segment's first append (as
Kafka's segment creation time does) and lastOffsetDelta must match the
records (1030 covers the other shapes). Raw Produce (tests/lib/batchwire.py).
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

from batchwire import Rec, batch, create, produce  # noqa: E402
from gregor import Broker, eq, log, main  # noqa: E402

DAY = 24 * 3600 * 1000
INVALID_RECORD = 87


def segments(b, topic):
    return sorted(f for f in os.listdir(b.partition_dir(topic)) if f.endswith(".log"))


def send(b, topic, ts, codec="none", n=2, **kw):
    recs = [Rec(b"k", b"v%d" % i, ts_delta=i) for i in range(n)]
    return produce(b.port, topic, 0, batch(recs, base_ts=ts, codec=codec, **kw))


def timestamps_far_apart(b):
    t = "roll-ts"
    create(b, t)
    now = int(time.time() * 1000)
    for i in range(10):
        # each batch 8 days after the one before: past segment.ms by producer time
        err, base, _, msg = send(b, t, now - 80 * DAY + i * 8 * DAY, codec="gzip" if i % 3 else "none")
        eq((err, base), (0, 2 * i), "produce %d (%s)" % (i, msg))
    log("%s: %s" % (t, segments(b, t)))
    eq(len(segments(b, t)), 1, "segments after 10 batches 8 days apart each (segment.ms 7 days)")


def offset_span(b):
    t = "roll-span"
    create(b, t)
    now = int(time.time() * 1000)
    for codec in ("none", "gzip"):
        err, _, _, msg = send(b, t, now, codec=codec, n=1, last_offset_delta=2**31 - 2)
        eq(err, INVALID_RECORD, "%s batch of 1 record with lastOffsetDelta 2^31-2 (%s)" % (codec, msg))
    for i in range(3):
        err, base, _, _ = send(b, t, now, codec="gzip")
        eq((err, base), (0, 2 * i), "ordinary batch %d after the refused ones" % i)
    eq(len(segments(b, t)), 1, "segments after the spans")


def append_time_rolls(b):
    t = "roll-ms"
    create(b, t, {"segment.ms": "4000"})
    old = int(time.time() * 1000) - 30 * DAY
    eq(send(b, t, old)[0], 0, "first batch")
    eq(send(b, t, old + 20 * DAY)[0], 0, "second batch, 20 days later by its timestamps")
    eq(len(segments(b, t)), 1, "no roll within segment.ms of broker time")
    time.sleep(4.5)
    eq(send(b, t, old)[0], 0, "batch after segment.ms of broker time")
    eq(len(segments(b, t)), 2, "rolled once segment.ms of broker time passed")
    b.restart()
    eq(send(b, t, old)[0], 0, "batch after a restart")
    eq(len(segments(b, t)), 2, "no roll right after a restart")
    time.sleep(4.5)
    eq(send(b, t, old)[0], 0, "batch segment.ms after the restart")
    eq(len(segments(b, t)), 3, "rolled segment.ms after the restart")


def test():
    with Broker() as b:
        timestamps_far_apart(b)
        offset_span(b)
        append_time_rolls(b)


main(test)

#!/usr/bin/python3
"""A batch's maxTimestamp is recomputed from its records on append, as Kafka
does, and rewritten with a new CRC when the producer wrote something else.

sarama (up to 2025) sends -1 there. Before, such batches left the segment's
time index empty and ListOffsets by timestamp answered -1 for every record
they held. Raw Produce (tests/lib/batchwire.py) of uncompressed and gzip
batches with maxTimestamp -1 and with a maxTimestamp past their records;
then offsets_for_times (confluent-kafka) must find the exact records, the
stored headers must carry the real maximum with a valid CRC, a consumer
with check.crcs must read them, and all of it must hold after kill -9.
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

from batchwire import Rec, batch, header_fields, produce, segment_batches  # noqa: E402
from confluent_kafka import Consumer, TopicPartition  # noqa: E402
from gregor import Broker, eq, log, main  # noqa: E402

TOPIC = "maxts"
S = 1000


def lookups(b, t0):
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "maxts"})
    try:
        # batches: [0..9] none/-1, [10..19] gzip/-1, [20..29] none/too big, [30..39] gzip/too big
        want = [(t0 - 5 * S, 0), (t0 + 5 * S, 5), (t0 + 5 * S + 500, 6), (t0 + 15 * S + 500, 16),
                (t0 + 19 * S, 19), (t0 + 25 * S, 25), (t0 + 34 * S + 1, 35), (t0 + 39 * S, 39),
                (t0 + 39 * S + 1, -1)]
        for ts, off in want:
            got = c.offsets_for_times([TopicPartition(TOPIC, 0, ts)], timeout=10)[0].offset
            log("offsets_for_times(t0 %+d ms) = %d" % (ts - t0, got))
            eq(got, off, "offset for t0 %+d ms" % (ts - t0))
    finally:
        c.close()


def stored_headers(b, t0):
    d = b.partition_dir(TOPIC)
    batches = segment_batches(os.path.join(d, "%020d.log" % 0))
    eq(len(batches), 4, "batches stored")
    for i, bt in enumerate(batches):
        _attrs, _lod, _base, max_ts, count, crc_ok = header_fields(bt)
        eq(max_ts, t0 + (10 * i + 9) * S, "batch %d maxTimestamp" % i)
        eq(crc_ok, True, "batch %d CRC after the rewrite" % i)


def consume_all(b):
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "maxts-read", "auto.offset.reset": "earliest",
                  "check.crcs": True, "enable.auto.commit": False})
    c.assign([TopicPartition(TOPIC, 0, 0)])
    got = []
    deadline = time.time() + 20
    while len(got) < 40 and time.time() < deadline:
        m = c.poll(0.5)
        if m is None:
            continue
        eq(m.error(), None, "consume error")
        got.append(m.offset())
    c.close()
    eq(got, list(range(40)), "offsets read back with CRC checks")


def test():
    with Broker() as b:
        t0 = int(time.time() * 1000) - 300 * S
        for i, (codec, max_ts) in enumerate([("none", -1), ("gzip", -1), ("none", t0 + 1000 * S),
                                             ("gzip", t0 + 1000 * S)]):
            recs = [Rec(b"k", b"v%d" % (10 * i + j), ts_delta=(10 * i + j) * S) for j in range(10)]
            err, base, _, msg = produce(b.port, TOPIC, 0, batch(recs, base_ts=t0, max_ts=max_ts, codec=codec))
            eq((err, base), (0, 10 * i), "produce %s batch with maxTimestamp %d (%s)" % (codec, max_ts, msg))
        lookups(b, t0)
        stored_headers(b, t0)
        consume_all(b)
        b.kill9()
        b.start()
        lookups(b, t0)


main(test)

#!/usr/bin/python3
"""1051: compaction of compressed batches: gzip, snappy, lz4 and zstd.

One compacted topic per codec (compression.type=producer on the topic, so
batches are stored as the producer compressed them), each written by a
producer with that compression.type: 40 keys, key k updated in rounds
0..k (820 records, each with headers naming its key and round; a null
header value on the tombstones), then tombstones for 4 keys, then a sentinel once
segment.ms has passed. Batches of 4 KB hold records of many keys and the
last values are spread over the log, so passes keep some records of many
batches and drop others: those batches are rebuilt and compressed again.

After a pass covering everything below the sentinel:
  - every batch in the partition's segments has a valid CRC-32C, and
    those holding the versions' values the producer's codec;
  - every record keeps the timestamp and headers it was written with;
  - a consumer with check.crcs=true decodes exactly the latest value of
    every live key at its original offset, keys unique below the active
    segment, each tombstone once while delete.retention.ms has not passed;
  - after delete.retention.ms and a further pass, the tombstoned keys are
    gone and the rest is still exact;
  - then kafka-python reading as a 0.10 client (Fetch v2: the cleaned
    batches, with their offset gaps, down-converted to magic 1 and
    compressed again) reads the same records (zstd aside: magic 1 has no
    zstd).
Runtime ~15 s.
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

import batchwire  # noqa: E402
import compaction as cp  # noqa: E402
from gregor import Broker, check, eq, log, main  # noqa: E402

CODECS = ("gzip", "snappy", "lz4", "zstd")
KEYS, VERSIONS, TOMBSTONED = 40, 40, 4
RETENTION_MS = 8000


def check_disk_batches(b, topic, codec, values_below):
    """Every batch on disk has a valid CRC; those of the versions' values
    (below the first tombstone) are compressed with codec. Tombstones and
    sentinels are left aside: librdkafka sends a batch uncompressed when
    compressing does not make it smaller."""
    n = 0
    for h in cp.headers(b, topic):
        check(h.crc_ok, "'%s': batch at offset %d has a bad CRC-32C" % (topic, h.base_offset))
        if h.record_count and h.base_offset < values_below:
            eq(h.attributes & 7, batchwire.CODECS[codec], "'%s': codec of the batch at offset %d"
               % (topic, h.base_offset))
            n += 1
    check(n >= 10, "'%s': %d batches of values left, want the last values spread over at least 10" % (topic, n))
    return n


def check_times_headers(b, topic, w):
    """Every record read keeps the timestamp and headers it was written with."""
    for o, _k, _v, ts, hdrs in cp.read_all(b, topic, full=True):
        if o in w.ts:
            eq((ts, hdrs), (w.ts[o], w.hdrs[o]), "'%s': timestamp and headers of offset %d" % (topic, o))


def test():
    with Broker(overrides=cp.BROKER_OVERRIDES) as b:
        w_of = {}
        for codec in CODECS:
            cp.create(b, codec, cp.topic_config(**{"delete.retention.ms": str(RETENTION_MS)}))
        for codec in CODECS:
            w_of[codec] = cp.write_versions(b, codec, KEYS, VERSIONS, 0, spread=True, headers=True,
                                            **{"compression.type": codec})
        for codec in CODECS:  # all tombstones together: the horizon is the same for the four topics
            cp.write_versions(b, codec, KEYS, 0, TOMBSTONED, w=w_of[codec], headers=True,
                              **{"compression.type": codec})
        sentinel_of = cp.seal(b, CODECS)
        for codec in CODECS:  # first what has to be read before the tombstone horizon
            w, sentinel = w_of[codec], sentinel_of[codec]
            first, end, _ = cp.wait_pass(b, codec, end_min=sentinel)
            recs = cp.read_all(b, codec)
            if time.time() < w.tomb_t0 + RETENTION_MS / 1000.0:
                cp.check_latest(recs, w, sentinel, "kept", "'%s' after the first full pass" % codec)
                log("%s: pass [%d, %d); %d records exact, tombstones kept" % (codec, first, end, len(recs)))
            else:
                log("%s: the first full pass ended past the tombstone horizon: tombstones not checked before it"
                    % codec)
        for codec in CODECS:
            n = check_disk_batches(b, codec, codec, min(w_of[codec].tomb.values()))
            check_times_headers(b, codec, w_of[codec])
            log("%s: %d batches with records, valid, timestamps and headers exact" % (codec, n))
        cp.wait_tombstones_gone(b, CODECS, w_of, RETENTION_MS)
        for codec in CODECS:
            check_disk_batches(b, codec, codec, min(w_of[codec].tomb.values()))
        log("tombstones gone from all four topics; batches still valid")
        for codec in CODECS[:3]:  # a magic 1 message set cannot hold zstd
            eq(cp.kafka_python_read(b, codec, api_version=(0, 10)), cp.read_all(b, codec),
               "'%s': records read by kafka-python as a 0.10 client (down-converted to magic 1)" % codec)
        log("kafka-python as a 0.10 client reads the same records of %s" % ", ".join(CODECS[:3]))


main(test)

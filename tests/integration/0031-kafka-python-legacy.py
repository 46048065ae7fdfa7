"""kafka-python 2.0.2 pinned to an old broker version: api_version=(0, 9)
speaks Produce v1 / Fetch v1 / ListOffsets v0 with message format 0, and
(0, 10) Produce v2 / Fetch v2 / ListOffsets v0 with format 1, without asking
ApiVersions.  For each codec kafka-python has (none, gzip, snappy, lz4 - lz4
with the old framing's header checksum for format 0): 200 keyed messages
produced (offsets dense, in order), read back from the beginning with
assign + seek_to_beginning, byte-identical, every message once and in order,
end_offsets right, and format 1 keeps the producer's timestamps."""

import itertools
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, eq, log, main  # noqa: E402
from kafka import KafkaConsumer, KafkaProducer, TopicPartition  # noqa: E402

N = 200
TS = 1700000000000


def roundtrip(b, version, codec):
    topic = "kp-%d%d-%s" % (version + (codec or "none",))
    p = KafkaProducer(bootstrap_servers=b.bootstrap, api_version=version, compression_type=codec, linger_ms=20,
                      acks="all", retries=0)
    futures = [p.send(topic, key=b"key-%d" % i, value=b"value-%06d" % i, partition=i % 2, timestamp_ms=TS + i)
               for i in range(N)]
    p.flush(30)
    got = [(f.get(timeout=10).partition, f.get(timeout=10).offset) for f in futures]
    eq([o for part, o in got if part == 0], list(range(N // 2)), "partition 0 offsets")
    eq([o for part, o in got if part == 1], list(range(N // 2)), "partition 1 offsets")
    p.close(10)

    c = KafkaConsumer(bootstrap_servers=b.bootstrap, api_version=version, consumer_timeout_ms=3000,
                      enable_auto_commit=False)
    tps = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
    c.assign(tps)
    c.seek_to_beginning(*tps)
    eq(c.end_offsets(tps), {tps[0]: N // 2, tps[1]: N // 2}, "end_offsets (ListOffsets)")
    msgs = list(itertools.islice(c, N))  # N, or fewer after 3 s without a record
    c.close()
    for part in (0, 1):
        mine = [m for m in msgs if m.partition == part]
        eq([m.offset for m in mine], list(range(N // 2)), "partition %d offsets read" % part)
        eq([(m.key, m.value) for m in mine], [(b"key-%d" % i, b"value-%06d" % i) for i in range(part, N, 2)],
           "partition %d keys and values" % part)
        want_ts = [TS + i for i in range(part, N, 2)] if version >= (0, 10) else [-1] * (N // 2)
        eq([m.timestamp if m.timestamp is not None else -1 for m in mine], want_ts, "partition %d timestamps" % part)
    log("api_version %s, %s: %d messages round trip" % (version, codec or "none", N))


def test():
    with Broker(overrides={"num.partitions": "2", "auto.create.topics.enable": "true"}) as b:
        for version in ((0, 9), (0, 10)):
            for codec in (None, "gzip", "snappy", "lz4"):
                roundtrip(b, version, codec)


main(test)

"""compression.type on a topic (and its broker default) re-encodes batches
on append as Kafka does (confluent-kafka-python producers and consumers;
the stored codec is read from the segment files):
  * gzip topic: batches sent lz4 or uncompressed are stored gzip;
  * uncompressed topic: zstd batches are stored uncompressed;
  * producer topic: snappy batches are stored as sent;
  * a topic without the setting follows the broker's compression.type
    (lz4 here): uncompressed batches are stored lz4;
  * an idempotent producer's batches re-encoded keep their sequence: a
    second producer session continues without OUT_OF_ORDER errors;
  * every message reads back byte-identical (key, value, headers) in
    production order at dense offsets."""

import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, eq, check, log, main  # noqa: E402

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
N = 300


def stored_codecs(b, topic):
    """The codec of every batch stored in partition 0's segments, in order."""
    out = []
    d = b.partition_dir(topic, 0)
    for name in sorted(f for f in os.listdir(d) if f.endswith(".log")):
        data = open(os.path.join(d, name), "rb").read()
        off = 0
        while off + 61 <= len(data):
            (length,) = struct.unpack(">i", data[off + 8:off + 12])
            (attrs,) = struct.unpack(">h", data[off + 21:off + 23])
            out.append(CODECS[attrs & 7])
            off += 12 + length
    return out


def produce(b, topic, codec, tag, idempotent=False):
    p = Producer({"bootstrap.servers": b.bootstrap, "compression.type": codec, "linger.ms": 20,
                  "enable.idempotence": idempotent, "batch.num.messages": 50})
    sent = []
    for i in range(N):
        k, v = ("%s-k%d" % (tag, i)).encode(), ("%s-value-%d-" % (tag, i)).encode() * (1 + i % 7)
        p.produce(topic, key=k, value=v, partition=0, headers=[("h", ("%d" % i).encode())])
        sent.append((k, v, [("h", ("%d" % i).encode())]))
    eq(p.flush(20), 0, "unflushed")
    return sent


def consume(b, topic, n):
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "itest-0052", "enable.auto.commit": False,
                  "check.crcs": True})
    c.assign([TopicPartition(topic, 0, 0)])
    got = []
    while len(got) < n:
        m = c.poll(10)
        check(m is not None, "timed out reading %s after %d" % (topic, len(got)))
        check(not m.error(), "consumer error %s" % (m.error(),))
        got.append((m.offset(), m.key(), m.value(), m.headers()))
    c.close()
    return got


def roundtrip(b, topic, codec, want_stored, idempotent=False):
    sent = produce(b, topic, codec, topic, idempotent)
    if idempotent:
        sent += produce(b, topic, codec, topic + "-2", idempotent)
    got = consume(b, topic, len(sent))
    eq([g[0] for g in got], list(range(len(sent))), "%s offsets" % topic)
    eq([(g[1], g[2], g[3]) for g in got], sent, "%s messages" % topic)
    codecs = set(stored_codecs(b, topic))
    eq(codecs, {want_stored}, "%s stored codecs (sent %s)" % (topic, codec))
    log("%s: sent %s, stored %s, read back" % (topic, codec, want_stored))


def test():
    with Broker(overrides={"compression.type": "lz4"}) as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        for t, cfg in (("c-gzip", {"compression.type": "gzip"}), ("c-gzip2", {"compression.type": "gzip"}),
                       ("c-unc", {"compression.type": "uncompressed"}),
                       ("c-prod", {"compression.type": "producer"}), ("c-broker", {})):
            admin.create_topics([NewTopic(t, 1, 1, config=cfg)])[t].result(15)
        roundtrip(b, "c-gzip", "lz4", "gzip")
        roundtrip(b, "c-gzip2", "none", "gzip", idempotent=True)
        roundtrip(b, "c-unc", "zstd", "none")
        roundtrip(b, "c-prod", "snappy", "snappy")
        roundtrip(b, "c-broker", "none", "lz4")


main(test)

#!/usr/bin/python3
"""sarama (Debian's golang-github-shopify-sarama-dev) writes maxTimestamp -1
in every batch it produces. The broker now sets it to the records' largest
timestamp on append, as Kafka does; before, the time index of such data
stayed empty and ListOffsets by timestamp answered -1 for all of it.

Builds 1034-sarama-maxts.go in GOPATH mode against Debian's Go packages (no
network), produces 20 records with CreateTime t0 + i s for each codec, and
checks sarama's own GetOffset, confluent-kafka's offsets_for_times and the
stored batch headers. zstd is left out: sarama 1.22 sends it in Produce v3,
and a broker refuses zstd below Produce v7 (UNSUPPORTED_COMPRESSION_TYPE, as
Kafka; 0030 and 0033 check that refusal).
"""
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))

from batchwire import header_fields, segment_batches  # noqa: E402
from confluent_kafka import Consumer, TopicPartition  # noqa: E402
from gregor import Broker, eq, log, main  # noqa: E402

N = 20
WANT = {-5000: 0, 0: 0, 5500: 6, 12000: 12, (N - 1) * 1000: N - 1, N * 1000: -1}


def build(tmp):
    exe = os.path.join(tmp, "sarama-maxts")
    env = dict(os.environ, GO111MODULE="off", GOPATH="/usr/share/gocode", GOFLAGS="",
               GOCACHE=os.path.join(tmp, "gocache"), CGO_CFLAGS="-Wno-deprecated-declarations")
    subprocess.run(["go", "build", "-o", exe, os.path.join(HERE, "1034-sarama-maxts.go")], env=env, check=True,
                   timeout=240, cwd=tmp)
    return exe


def test():
    with Broker() as b:
        exe = build(b.tmp)
        t0 = int(time.time() * 1000) - 600 * 1000
        c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "sarama"})
        for codec in ("none", "gzip", "snappy", "lz4"):
            topic = "sarama-" + codec
            out = subprocess.run([exe, b.bootstrap, topic, str(t0), codec, str(N)], capture_output=True, text=True,
                                 timeout=60)
            log("%s: rc %d\n%s%s" % (codec, out.returncode, out.stdout, out.stderr))
            eq(out.returncode, 0, "%s: sarama program exit status" % codec)
            got = {int(rel): int(off) for _, rel, off in (line.split() for line in out.stdout.splitlines())}
            eq(got, WANT, "%s: sarama GetOffset by time" % codec)
            for rel, off in WANT.items():
                r = c.offsets_for_times([TopicPartition(topic, 0, t0 + rel)], timeout=10)[0].offset
                eq(r, off, "%s: offsets_for_times(t0 %+d ms)" % (codec, rel))
            batches = segment_batches(os.path.join(b.partition_dir(topic), "%020d.log" % 0))
            eq(len(batches), 1, "%s: one batch stored" % codec)
            _, _, _, max_ts, count, crc_ok = header_fields(batches[0])
            eq((count, max_ts, crc_ok), (N, t0 + (N - 1) * 1000, True), "%s: stored batch header" % codec)
        c.close()


main(test)

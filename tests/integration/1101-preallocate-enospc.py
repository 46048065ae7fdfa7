"""log.preallocate=true on a disk that fills up in the middle of an allocation.

The LD_PRELOAD shim (tests/lib/syncshim.c, GREGOR_SYNCSHIM_FALLOCATE_ENOSPC)
makes every allocating fallocate grow the file to the length asked and
still fail with ENOSPC. With segment.bytes=65536, 100 records of 1.5 KB produced with
acks=all still span three segments, and every sealed .log must be exactly
as long as its batches: start-up trusts a sealed segment's length, so the
half-grown zeros must be cut off when the segment rolls even though the
allocation failed. Then a SIGKILL, a restart (the zeros behind the active
segment's data are its end: the next append gets offset 100) and a clean
stop, after which the active .log is as long as its batches too.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, check, eq, main  # noqa: E402
from syncshim import SyncShim, log_batches  # noqa: E402

from confluent_kafka import Producer  # noqa: E402

TOPIC = "itest-prealloc-enospc"
SEG = 65536
N = 100


def produce(b, start, count):
    got = []
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all", "linger.ms": 0})
    for i in range(start, start + count):
        p.produce(TOPIC, value=b"e" * 1500, partition=0, on_delivery=lambda err, m: got.append((err, m.offset())))
        p.flush(10)
    eq(got, [(None, o) for o in range(start, start + count)], "delivery reports")


def check_lengths(b, sealed_only, what):
    d = b.partition_dir(TOPIC)
    files = [os.path.join(d, f) for f in sorted(os.listdir(d)) if f.endswith(".log")]
    for path in files[:-1] if sealed_only else files:
        bs, size = log_batches(path)
        eq(size, sum(x[2] for x in bs), "%s: %s is as long as its batches" % (what, os.path.basename(path)))
    return files


def test():
    env = dict(SyncShim().env(), GREGOR_SYNCSHIM_FALLOCATE_ENOSPC="1")
    overrides = {"num.partitions": "1", "log.preallocate": "true", "log.segment.bytes": str(SEG)}
    with Broker(overrides=overrides, env=env) as b:
        produce(b, 0, N)
        files = check_lengths(b, True, "running")
        check(len(files) >= 3, "the records span at least 3 segments (%d)" % len(files))
        b.kill9()
        b.start()
        produce(b, N, 1)
        b.stop()
        check_lengths(b, False, "stopped")


main(test)

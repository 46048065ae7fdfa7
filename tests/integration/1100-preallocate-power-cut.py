"""log.preallocate=true: segments allocated ahead, cut back to their data, and a power cut's zero tail.

With log.preallocate=true and segment.bytes=65536, 100 records of 1.5 KB produced
with acks=all span several segments: while the broker runs, the active
.log file is segment.bytes long (allocated at creation, the rest zeros)
and every sealed .log is exactly as long as its batches (cut back when it
rolled). Then syncs of .log files are held (tests/lib/syncshim.c) and 20
more small records are answered with acks=1, never synced, and the power fails:
the broker is SIGKILLed and what a power loss leaves of a preallocated
file is written: the first unsynced batch torn after 20 bytes, zeros from
there to the end of the allocation (the file keeps its length, as an
allocated file does). After the restart the log ends at the last acks=all
record: recovery takes the torn batch and the zeros behind it for the end
of the log, every acknowledged-durable record is read back, none of the
unsynced ones, and the partition takes new appends at offset 100. A
SIGKILL that leaves whole batches followed by the allocation's zeros is
recovered the same way, quietly (the zeros are where the data ends, not
damage), and the next append gets the next offset. After a clean stop the
active .log is cut back to its data.

On a broker without preallocation the setting is refused and it does not
start.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, check, eq, log, main  # noqa: E402
from syncshim import SyncShim, log_batches, read_values  # noqa: E402

from confluent_kafka import Producer  # noqa: E402

TOPIC = "itest-prealloc"
SEG = 65536
N = 100
EXTRA = 20
VALUE = b"v" * 1500


def logs(b):
    d = b.partition_dir(TOPIC)
    return [os.path.join(d, f) for f in sorted(os.listdir(d)) if f.endswith(".log")]


def produce(b, acks, start, count, value=VALUE):
    got = []
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": acks, "linger.ms": 0,
                  "enable.idempotence": acks == "all"})
    for i in range(start, start + count):
        p.produce(TOPIC, value=value + b"%05d" % i, partition=0,
                  on_delivery=lambda err, m: got.append((err, m.offset())))
        p.flush(10)  # one record per request: each its own batch
    eq([g for g in got if g[0] is not None], [], "delivery errors (acks=%s)" % acks)
    eq([g[1] for g in got], list(range(start, start + count)), "offsets (acks=%s)" % acks)


def check_lengths(b, active_len, what):
    files = logs(b)
    for path in files[:-1]:
        bs, size = log_batches(path)
        eq(size, sum(x[2] for x in bs), "%s: sealed %s is as long as its batches" % (what, os.path.basename(path)))
    bs, size = log_batches(files[-1])
    eq(size, active_len if active_len is not None else sum(x[2] for x in bs), "%s: active .log length" % what)
    return files


def power_cut(path, durable_end):
    """The first batch at or past durable_end keeps 20 bytes (torn), zeros after, same file length."""
    bs, size = log_batches(path)
    first = [x for x in bs if x[1] >= durable_end][0]
    with open(path, "r+b") as f:
        f.seek(first[0] + 20)
        f.write(b"\0" * (size - first[0] - 20))
    return size - first[0]


def test():
    shim = SyncShim()
    overrides = {"num.partitions": "1", "log.preallocate": "true", "log.segment.bytes": str(SEG)}
    with Broker(overrides=overrides, env=shim.env()) as b:
        produce(b, "all", 0, N)
        files = check_lengths(b, SEG, "running")
        check(len(files) >= 3, "the records span at least 3 segments (%d)" % len(files))
        shim.hold(".log")
        produce(b, "1", N, EXTRA, value=b"u")  # small: no roll (whose cut is synced at once)
        b.kill9()
        shim.release()
        lost = power_cut(files[-1], N)
        log("power cut: %d bytes of the active segment torn or zeroed" % lost)
        b.start()
        got = read_values(b.bootstrap, TOPIC)
        eq(got, [VALUE + b"%05d" % i for i in range(N)], "records after the power cut")
        produce(b, "all", N, 5)
        check_lengths(b, SEG, "restarted")
        mark = b.log_size()
        b.kill9()
        b.start()
        b.wait_log("zeros (the unwritten part of a preallocated file)", since=mark)
        produce(b, "all", N + 5, 1)
        b.stop()
        check_lengths(b, None, "stopped")
        eq(sum(len(log_batches(p)[0]) for p in logs(b)), N + 6, "batches on disk after the clean stop")


main(test)

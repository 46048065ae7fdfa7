"""acks=1 data becomes durable without any acks=all traffic (power cut).

A producer with acks=1 writes 2000 records across several segments
(segment.bytes=16384) and gets every delivery report; nobody produces with
acks=all. Three seconds later the power fails: the broker is SIGKILLed and
every .log/.txnindex file is cut back to the length its last successful
fdatasync covered (tests/lib/syncshim.c records that). After the restart a
consumer must read all 2000 records: the syncer syncs whatever is unsynced,
rolled segments included, not only what an acks=all request waits for.
Then the recovery point moves with it: with
log.flush.offset.checkpoint.interval.ms=500 the checkpoint file shows the
LEO of the acks=1 partition within a few seconds, and the index files of
every sealed segment were synced.
"""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, check, eq, log, main  # noqa: E402
from syncshim import SyncShim, read_values  # noqa: E402

from confluent_kafka import Producer  # noqa: E402

TOPIC = "itest-acks1-cut"
N = 2000


def checkpoint_of(b, topic, partition):
    try:
        with open(os.path.join(b.data_dir, "recovery-point-offset-checkpoint")) as f:
            for line in f.read().splitlines()[2:]:
                name, p, off = line.split()
                if name == topic and int(p) == partition:
                    return int(off)
    except (OSError, ValueError):
        pass
    return -1


def test():
    shim = SyncShim()
    overrides = {"num.partitions": "1", "log.segment.bytes": "16384",
                 "log.flush.offset.checkpoint.interval.ms": "500"}
    with Broker(overrides=overrides, env=shim.env()) as b:
        reports = []
        p = Producer({"bootstrap.servers": b.bootstrap, "acks": "1", "linger.ms": 2,
                      "batch.num.messages": 50, "enable.idempotence": False})
        for i in range(N):
            p.produce(TOPIC, value=b"acks1-%05d" % i, partition=0,
                      on_delivery=lambda err, m: reports.append((err, m.offset())))
            p.poll(0)
        eq(p.flush(30), 0, "messages left after flush")
        eq([r for r in reports if r[0] is not None], [], "delivery errors")
        eq(sorted(r[1] for r in reports), list(range(N)), "acknowledged offsets")
        segs = [f for f in os.listdir(b.partition_dir(TOPIC)) if f.endswith(".log")]
        log("%d acknowledged with acks=1 in %d segments" % (N, len(segs)))
        check(len(segs) >= 3, "the records span at least 3 segments")
        time.sleep(3)
        ckpt = checkpoint_of(b, TOPIC, 0)
        synced = shim.synced_sizes()
        sealed = sorted(segs)[:-1]
        unsynced = [f for base in sealed for f in (base[:-4] + ".index", base[:-4] + ".timeindex")
                    if os.path.realpath(os.path.join(b.partition_dir(TOPIC), f)) not in synced]
        b.kill9()
        cut = shim.power_cut(b.data_dir)
        log("power cut: %d bytes lost in %d files" % (sum(cut.values()), len(cut)))
        b.start()
        got = read_values(b.bootstrap, TOPIC)
        eq(len(got), N, "records read after the power cut")
        eq(got, [b"acks1-%05d" % i for i in range(N)], "records after the power cut")
        eq(ckpt, N, "recovery point checkpointed 3 s after the last acks=1 answer")
        eq(unsynced, [], "index files of sealed segments never synced")


main(test)

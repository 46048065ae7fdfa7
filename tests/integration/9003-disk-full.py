#!/usr/bin/python3
"""9003: disk full (issue 7).

The data dir is a 6 MiB tmpfs (needs root to mount; exits 77 otherwise)
with a 2 MiB ballast file.  Produce 64 KiB batches (acks=1) until the
broker answers an error: it must be KAFKA_STORAGE_ERROR (56), the broker
keeps running, every acknowledged message reads back intact, the ballast
is deleted and produce succeeds again at the next offset; after a restart
everything acknowledged is still there.  Runtime ~5 s.
"""
import os, subprocess, sys, tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import kwire as kw  # noqa: E402
from gregor import Broker, check, eq, log, main  # noqa: E402

TOPIC = "full"
KAFKA_STORAGE_ERROR = 56


def produce(port, value, corr):
    s = kw.connect(port)
    try:
        s.sendall(kw.request(0, 3, corr, kw.produce_v3_body(TOPIC, 0, kw.record_batch([(b"k%d" % corr, value)]))))
        (err, base), = kw.parse_produce_v3(kw.recv_response(s)[1]).values()
        return err, base
    finally:
        s.close()


def read_all(bootstrap, n):
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "g9003", "enable.auto.commit": False,
                  "check.crcs": True})
    c.assign([TopicPartition(TOPIC, 0, 0)])
    got = []
    import time
    deadline = time.time() + 20
    while len(got) < n and time.time() < deadline:
        m = c.poll(0.2)
        if m is None:
            continue
        check(not m.error(), "consumer error %s" % m.error())
        got.append((m.offset(), m.key(), m.value()))
    c.close()
    return got


def test():
    mnt = tempfile.mkdtemp(prefix="gregor-itest-9003-mnt-")
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", mnt],
                                           capture_output=True).returncode != 0:
        os.rmdir(mnt)
        log("skipped: cannot mount a tmpfs (needs root)")
        sys.stdout.flush()
        os._exit(77)  # gregor.main() would turn SystemExit into a failure
    try:
        data = os.path.join(mnt, "data")
        os.makedirs(data)
        with open(os.path.join(mnt, "ballast"), "wb") as f:
            f.write(b"\0" * (2 << 20))
        with Broker(data_dir=data, overrides={"num.partitions": "1", "log.segment.bytes": str(1 << 20)}) as b:
            acked = {}
            err = 0
            for i in range(200):
                v = os.urandom(64 << 10)
                err, base = produce(b.port, v, i)
                if err:
                    break
                acked[base] = (b"k%d" % i, v)
            log("disk full after %d batches, error %d" % (len(acked), err))
            eq(err, KAFKA_STORAGE_ERROR, "produce error on a full disk")
            check(len(acked) > 10, "some batches fit before the disk filled")
            check(b.alive(), "broker alive after ENOSPC")
            got = read_all(b.bootstrap, len(acked))
            eq([(o, k, v) for o, k, v in got], [(o,) + acked[o] for o in sorted(acked)],
               "acknowledged messages read back intact")
            os.unlink(os.path.join(mnt, "ballast"))
            err, base = produce(b.port, b"after", 1000)
            eq((err, base), (0, len(acked)), "produce after space is freed (error, offset)")
            acked[base] = (b"k1000", b"after")
            b.restart()
            got = read_all(b.bootstrap, len(acked))
            eq(len(got), len(acked), "messages after restart")
            eq([(o, k, v) for o, k, v in got], [(o,) + acked[o] for o in sorted(acked)],
               "acknowledged messages intact after restart")
            b.stop()
    finally:
        subprocess.run(["umount", "-l", mnt], capture_output=True)
        os.rmdir(mnt)


main(test)

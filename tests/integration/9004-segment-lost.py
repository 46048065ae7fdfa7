#!/usr/bin/python3
"""9004: a segment file lost or unreadable under the broker (issue 7).

Topics 'lost' and 'fine' hold 10 messages each.
  1. While running, the 'lost' partition's segment .log is deleted: the
     broker still holds it open, so both topics keep being served.
  2. Stopped, the segment is replaced by a directory (unreadable as a file
     even for root): on start the broker keeps running, 'fine' serves
     produce and fetch, and 'lost' answers KAFKA_STORAGE_ERROR (56) for produce.
Runtime ~3 s.

"""
import os, shutil, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import kwire as kw  # noqa: E402
from gregor import Broker, check, eq, log, main  # noqa: E402


def produce(port, topic, corr, value=b"v"):
    s = kw.connect(port)
    try:
        s.sendall(kw.request(0, 3, corr, kw.produce_v3_body(topic, 0, kw.record_batch([(b"k", value)]))))
        (err, base), = kw.parse_produce_v3(kw.recv_response(s)[1]).values()
        return err, base
    finally:
        s.close()


def test():
    with Broker(overrides={"num.partitions": "1"}) as b:
        for t in ("lost", "fine"):
            for i in range(10):
                eq(produce(b.port, t, i), (0, i), "produce %s #%d" % (t, i))
        seg = os.path.join(b.partition_dir("lost", 0), "%020d.log" % 0)
        os.unlink(seg)
        eq(produce(b.port, "lost", 100), (0, 10), "produce after unlink (file still open)")
        eq(produce(b.port, "fine", 100), (0, 10), "other topic after unlink")
        b.stop()
        shutil.rmtree(b.partition_dir("lost", 0))
        os.makedirs(seg)  # the partition dir with a directory where the segment was
        b.start()
        eq(produce(b.port, "fine", 200), (0, 11), "other topic works after restart")
        err, _ = produce(b.port, "lost", 200)
        log("produce to the damaged partition: error %d" % err)
        eq(err, 56, "produce to the damaged partition: KAFKA_STORAGE_ERROR")
        check(b.alive(), "broker alive")
        b.stop()


main(test)

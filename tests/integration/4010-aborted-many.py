#!/usr/bin/python3
"""4010: read_committed never delivers a record of an aborted transaction,
however many aborted transactions one fetch response covers.

One transactional producer writes 6000 one-record transactions to a
single partition, three aborted for every committed one (4500 aborted,
more than any fixed cap on the aborted-transaction list), while a second
one keeps a transaction open over all of them (a record before the first
and one after the last) and then aborts it; the fsync-per-ack policy is
relaxed to keep it quick.  Then:
  * a read_committed consumer with large fetch sizes (the whole log in one
    response) sees exactly the 1500 committed values, in order, and none
    of the aborted ones (nor the long transaction's);
  * so does one with 2 KiB fetches, whose every aborted list is cut at the
    end of a small slice but must still name the long transaction;
  * the same after a kill -9, which rebuilds the aborted index from the
    log, and after a clean restart, which loads the .txnindex files;
  * read_uncommitted sees all 6000.
Runtime ~25 s.
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, check, eq, log, main  # noqa: E402

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition  # noqa: E402

TOPIC = "aborted-many"
TXNS = 6000


def produce_all(b):
    p = Producer({"bootstrap.servers": b.bootstrap, "transactional.id": "many", "linger.ms": 0})
    p.init_transactions(30)
    long = Producer({"bootstrap.servers": b.bootstrap, "transactional.id": "long", "linger.ms": 0,
                     "transaction.timeout.ms": 300000})
    long.init_transactions(30)
    long.begin_transaction()
    long.produce(TOPIC, value=b"long-first", partition=0)
    eq(long.flush(30), 0, "long transaction's first record written")
    t0 = time.time()
    for i in range(TXNS):
        commit = i % 4 == 0
        p.begin_transaction()
        p.produce(TOPIC, value=(b"c-%05d" if commit else b"a-%05d") % i, partition=0)
        if commit:
            p.commit_transaction(30)
        else:
            eq(p.flush(30), 0, "aborted record written before the abort")
            p.abort_transaction(30)
    log("%d transactions in %.1fs" % (TXNS, time.time() - t0))
    long.produce(TOPIC, value=b"long-last", partition=0)
    eq(long.flush(30), 0, "long transaction's last record written")
    long.abort_transaction(30)


def read(b, isolation, fetch_bytes=64 << 20):
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "g-" + isolation, "isolation.level": isolation,
                  "enable.auto.commit": False, "enable.partition.eof": True, "fetch.wait.max.ms": 100,
                  "fetch.max.bytes": fetch_bytes, "max.partition.fetch.bytes": fetch_bytes,
                  "message.max.bytes": min(fetch_bytes, 1000000),
                  "receive.message.max.bytes": max(fetch_bytes, 1 << 20) + (1 << 20)})
    c.assign([TopicPartition(TOPIC, 0, 0)])
    vals = []
    deadline = time.time() + 60
    eof = False
    while not eof and time.time() < deadline:
        for m in c.consume(10000, 0.5):
            if m.error():
                if m.error().code() == -191:  # _PARTITION_EOF
                    eof = True
                    continue
                raise KafkaException(m.error())
            vals.append(m.value().decode())
    c.close()
    check(eof, "%s consumer reached the end" % isolation)
    return vals


def check_committed(b, what, fetch_bytes=64 << 20):
    vals = read(b, "read_committed", fetch_bytes)
    aborted = [v for v in vals if not v.startswith("c-")]
    eq(aborted[:5], [], "%s: aborted records delivered to read_committed (%d of them)" % (what, len(aborted)))
    eq(vals, ["c-%05d" % i for i in range(0, TXNS, 4)], "%s: read_committed sees every committed record" % what)


def test():
    props = {"num.partitions": "1", "transaction.state.log.num.partitions": "1",
             "log.flush.interval.ms": "1000"}
    with Broker(props=props) as b:
        produce_all(b)
        check_committed(b, "running")
        check_committed(b, "2 KiB fetches", 2048)
        eq(len(read(b, "read_uncommitted")), TXNS + 2, "read_uncommitted sees every record")
        b.kill9()
        b.start()
        check_committed(b, "after kill -9 (index rebuilt)")
        check_committed(b, "after kill -9, 2 KiB fetches", 2048)
        b.restart()
        check_committed(b, "after a clean restart (index files)")
        check_committed(b, "after a clean restart, 2 KiB fetches", 2048)
        b.stop()


main(test)

"""An aborted transaction stays aborted after a power cut.

A transactional producer writes 5 records and aborts, then writes 3 and
commits. Seven seconds later (the recovery-point checkpoint, every second
here, already lies past the ABORT marker) the power fails: the broker is
SIGKILLed and every .log/.txnindex file is cut back to what its last
successful sync covered (tests/lib/syncshim.c). Start-up trusts the
.txnindex files below the recovery point, so the entry of the abort must
have been synced with its marker: a read_committed consumer then reads the
3 committed records and none of the 5 aborted ones.
"""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, eq, log, main  # noqa: E402
from syncshim import SyncShim, read_values  # noqa: E402

from confluent_kafka import Producer  # noqa: E402

TOPIC = "itest-txnidx-cut"


def test():
    shim = SyncShim()
    overrides = {"num.partitions": "1", "log.flush.offset.checkpoint.interval.ms": "1000",
                 "transaction.state.log.num.partitions": "1", "offsets.topic.num.partitions": "1"}
    with Broker(overrides=overrides, env=shim.env()) as b:
        p = Producer({"bootstrap.servers": b.bootstrap, "transactional.id": "itest-1012"})
        p.init_transactions(30)
        p.begin_transaction()
        for i in range(5):
            p.produce(TOPIC, value=b"aborted-%d" % i, partition=0)
        p.flush(30)
        p.abort_transaction(30)
        p.begin_transaction()
        for i in range(3):
            p.produce(TOPIC, value=b"committed-%d" % i, partition=0)
        p.commit_transaction(30)
        eq(read_values(b.bootstrap, TOPIC, isolation="read_committed"),
           [b"committed-%d" % i for i in range(3)], "read_committed before the power cut")
        log("aborted 5, committed 3; waiting 7 s, then the power cut")
        time.sleep(7)
        b.kill9()
        cut = shim.power_cut(b.data_dir)
        log("power cut: %s" % {os.path.basename(k): v for k, v in cut.items()})
        b.start()
        eq(read_values(b.bootstrap, TOPIC, isolation="read_committed"),
           [b"committed-%d" % i for i in range(3)], "read_committed after the power cut")


main(test)

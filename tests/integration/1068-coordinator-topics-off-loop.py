#!/usr/bin/python3
"""1068: the first group or transactional request does not stall the broker
while __consumer_offsets (50 partitions) and __transaction_state are made.

The broker runs with tests/lib/syncshim.so; hold-syncfs keeps the creation
round from finishing.  Meanwhile:
  1. FindCoordinator of a group answers COORDINATOR_NOT_AVAILABLE at once
     (before, the event loop made the 50 partitions and then answered);
     FindCoordinator of a transactional id the same;
  2. a producer to an existing topic still gets its acknowledgements;
  3. a confluent_kafka consumer group and a transactional producer started
     now wait (they retry COORDINATOR_NOT_AVAILABLE), and once the hold is
     released both work: the consumer reads what the transaction committed;
  4. a Metadata request for a missing topic auto-creates it and is answered
     with it once it is made; another one, on another connection while the
     round is held, answers LEADER_NOT_AVAILABLE for it at once.
Runtime ~15 s.
"""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

import kwire as kw  # noqa: E402
from gregor import Broker, check, eq, log, main, wait_until  # noqa: E402
from syncshim import SyncShim  # noqa: E402

from confluent_kafka import Consumer, Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

COORDINATOR_NOT_AVAILABLE = 15


def transaction(b, result):
    try:
        p = Producer({"bootstrap.servers": b.bootstrap, "transactional.id": "tx-1068"})
        p.init_transactions(60)
        p.begin_transaction()
        p.produce("data", b"in-txn")
        p.commit_transaction(60)
        result["ok"] = True
    except Exception as e:  # noqa: BLE001 - checked by the test
        result["error"] = e


def test():
    shim = SyncShim()
    with Broker(env=shim.env(), overrides={"group.initial.rebalance.delay.ms": "0"}) as b:
        a = AdminClient({"bootstrap.servers": b.bootstrap})
        a.create_topics([NewTopic("data", 1, 1)])["data"].result(30)
        shim.hold_syncfs()
        log("1. FindCoordinator while the internal topics cannot be finished")
        eq(kw.find_coordinator_error(b.port, "g-1068", 0), COORDINATOR_NOT_AVAILABLE, "FindCoordinator(group)")
        eq(kw.find_coordinator_error(b.port, "tx-1068", 1), COORDINATOR_NOT_AVAILABLE, "FindCoordinator(transaction)")
        wait_until(lambda: any(n.startswith("__consumer_offsets-") for n in os.listdir(b.data_dir)), 30,
                   "__consumer_offsets' directories")
        log("2. produce acks meanwhile")
        p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all"})
        errors = []
        for i in range(10):
            p.produce("data", b"plain-%d" % i, on_delivery=lambda err, _m: err and errors.append(err))
        eq(p.flush(30), 0, "unsent")
        eq(errors, [], "produce errors while the round is held")
        eq(kw.find_coordinator_error(b.port, "g-1068", 0), COORDINATOR_NOT_AVAILABLE, "FindCoordinator(group), still held")
        log("3. clients wait, then work once the round is done")
        result = {}
        t = threading.Thread(target=transaction, args=(b, result))
        t.start()
        c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "g-1068", "auto.offset.reset": "earliest",
                      "isolation.level": "read_committed"})
        c.subscribe(["data"])
        c.poll(0.5)
        check("ok" not in result, "the transaction waited for __transaction_state")
        log("4. Metadata auto-creating a topic, and another one meanwhile")
        ms = kw.connect(b.port, timeout_s=120)
        ms.sendall(kw.request(3, 1, 1, kw.metadata_v1_body(["auto-1068"])))
        # UNKNOWN_TOPIC_OR_PARTITION (3) until the first request was read, then LEADER_NOT_AVAILABLE
        wait_until(lambda: kw.metadata_topic_error(b.port, "auto-1068") != 3, 30, "the first Metadata to be read")
        eq(kw.metadata_topic_error(b.port, "auto-1068"), 5, "Metadata while auto-1068 is made")
        shim.release_syncfs()
        corr, body = kw.recv_response(ms)
        ms.close()
        first = kw.parse_metadata_v1(body)["topics"]["auto-1068"]
        eq((corr, first[0], len(first[1])), (1, 0, 1), "the auto-creating Metadata: (corr, error, partitions)")
        t.join(90)
        check(result.get("ok"), "transaction committed: %r" % result.get("error"))
        got = []
        deadline = time.monotonic() + 30
        while b"in-txn" not in got and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is not None and not m.error():
                got.append(m.value())
        c.close()
        eq(sorted(got), sorted([b"plain-%d" % i for i in range(10)] + [b"in-txn"]), "records read by the group")


main(test)

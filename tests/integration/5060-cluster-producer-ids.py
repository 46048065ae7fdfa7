"""Cluster mode: producer ids are unique across the cluster, taken in blocks
of 1000 from /latest_producer_id_block as Kafka's brokers in ZooKeeper mode
take them.

ZooKeeper and two brokers in the chroot /gregor/c60; kazoo reads the znode.

  1. InitProducerId (idempotent, v1) asked of both brokers, 1100 times of
     broker 1 (past its first block) and 300 of broker 2: no id is handed out
     twice, none by both brokers (each used to count from 0 in its own log
     dir); a retriable COORDINATOR_NOT_AVAILABLE while a block is being
     taken is asked again, as clients do
  2. the znode holds Kafka's JSON: version 1, the broker that took it,
     block_start and block_end as decimal strings 999 apart, and no id
     handed out lies above its block_end
  3. broker 1 restarted hands out ids above every id seen before
  4. a real idempotent producer (confluent-kafka) bootstrapped on broker 2
     gets its id and produces
"""

import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import kwire  # noqa: E402
from gregor import check, eq, log, main, wait_until  # noqa: E402
from zookeeper import running_cluster  # noqa: E402

CHROOT = "/gregor/c60"
SESSION = {"zookeeper_session_timeout_ms": 6000, "zookeeper_connection_timeout_ms": 2000}
COORDINATOR_NOT_AVAILABLE = 15


def init_ids(port, n, deadline_s=30):
    """n producer ids from InitProducerId v1 (TransactionalId null) on one connection."""
    ids = []
    s = kwire.connect(port)
    corr = 0
    deadline = time.monotonic() + deadline_s
    try:
        while len(ids) < n:
            corr += 1
            s.sendall(kwire.request(22, 1, corr, kwire.i16(-1) + kwire.i32(60000)))
            r = kwire.Reader(kwire.recv_response(s)[1])
            r.i32()
            err, pid, epoch = r.i16(), r.i64(), r.i16()
            if err == COORDINATOR_NOT_AVAILABLE and time.monotonic() < deadline:
                time.sleep(0.05)
                continue
            eq((err, epoch), (0, 0), "InitProducerId on port %d" % port)
            ids.append(pid)
    finally:
        s.close()
    return ids


def block(zc):
    data = zc.get(CHROOT + "/latest_producer_id_block")[0]
    return json.loads(data) if data else None


def produce_idempotent(b):
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    a = AdminClient({"bootstrap.servers": b.bootstrap})
    a.create_topics([NewTopic("pids", 2, 1)])["pids"].result(15)
    p = Producer({"bootstrap.servers": b.bootstrap, "enable.idempotence": True, "message.timeout.ms": 20000})
    errs = []
    for i in range(20):
        p.produce("pids", value=b"v%d" % i, partition=i % 2, on_delivery=lambda e, m: e and errs.append(e))
    left = p.flush(25)
    eq((left, errs), (0, []), "idempotent producer through broker %s" % b.bootstrap)


def test():
    with running_cluster((1, 2), CHROOT, **SESSION) as (zk, zc, brokers):
        one = init_ids(brokers[0].port, 1100)
        two = init_ids(brokers[1].port, 300)
        eq(len(set(one)), len(one), "broker 1 handed out no id twice")
        eq(len(set(two)), len(two), "broker 2 handed out no id twice")
        both = set(one) & set(two)
        eq(sorted(both)[:10], [], "ids handed out by both brokers")
        log("broker 1: ids %d..%d, broker 2: ids %d..%d" % (min(one), max(one), min(two), max(two)))

        z = block(zc)
        check(z is not None, "/latest_producer_id_block holds a block")
        eq(sorted(z), ["block_end", "block_start", "broker", "version"], "keys of the block")
        eq(z["version"], 1, "version of the block")
        check(z["broker"] in (1, 2), "broker of the block: %r" % z)
        check(isinstance(z["block_start"], str) and isinstance(z["block_end"], str),
              "block bounds are strings as Kafka writes them: %r" % z)
        eq(int(z["block_end"]) - int(z["block_start"]), 999, "a block of 1000 ids")
        check(max(one + two) <= int(z["block_end"]), "ids above the last block taken: %r" % z)

        eq(brokers[0].stop(), 0, "exit status of broker 1")
        brokers[0].start()
        wait_until(lambda: zc.exists(CHROOT + "/brokers/ids/1"), 20, "broker 1 registered again")
        again = init_ids(brokers[0].port, 5)
        check(min(again) > max(one + two), "after a restart ids %r, before up to %d" % (again, max(one + two)))

        produce_idempotent(brokers[1])


if __name__ == "__main__":
    main(test)

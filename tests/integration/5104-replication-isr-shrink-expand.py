"""Cluster mode: the leader shrinks and expands the ISR (replica.lag.time.max.ms, AlterPartition).

ZooKeeper and three brokers in the chroot /gregor/c104, replica.lag.time.max.ms=3000;
topic "isr" (1 partition, replication factor 3, min.insync.replicas=2), led by the
controller (which must be running to take the leader's AlterPartition).

  1. one follower SIGSTOPped: within the lag time (plus the check period) the leader
     removes it from the ISR: the state znode (kazoo) and Metadata show an ISR of 2,
     and acks=all keeps being acknowledged meanwhile and after
  2. SIGCONT: it catches up and the leader adds it back (ISR of 3 in ZooKeeper and Metadata)
  3. both followers SIGSTOPped while an acks=all record waits: the shrink to the
     leader alone fails it with NOT_ENOUGH_REPLICAS_AFTER_APPEND; acks=all afterwards is
     NOT_ENOUGH_REPLICAS and nothing of it is appended; acks=1 is acknowledged
  4. SIGCONT: both rejoin and acks=all is acknowledged again; a consumer reads exactly
     the acknowledged records plus the one that failed after its append
"""

import json
import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from gregor import eq, check, log, main, wait_until  # noqa: E402
from replicas import state  # noqa: E402
from zookeeper import running_cluster, wait_listed  # noqa: E402

CHROOT = "/gregor/c104"
OPTS = {"zookeeper_session_timeout_ms": 30000, "replica_lag_time_max_ms": 3000}


def isr_zk(zc):
    st, _ = state(zc, CHROOT, "isr", 0)
    return sorted(st["isr"]) if st else []


def isr_md(b):
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    return sorted(admin.list_topics("isr", timeout=5).topics["isr"].partitions[0].isrs)


def produce(b, values, acks, timeout_ms=20000):
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": acks, "retries": 0, "linger.ms": 0,
                  "request.timeout.ms": timeout_ms, "message.timeout.ms": timeout_ms})
    res = []
    for v in values:
        p.produce("isr", value=v, partition=0, on_delivery=lambda err, m: res.append(err))
    p.flush(timeout_ms / 1000 + 10)
    eq(len(res), len(values), "delivery reports")
    return res


def read_all(b, n):
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "c104", "enable.auto.commit": False})
    c.assign([TopicPartition("isr", 0, 0)])
    got, end = [], time.monotonic() + 30
    while len(got) < n and time.monotonic() < end:
        m = c.poll(0.5)
        if m is not None and not m.error():
            got.append(m.value())
    extra = c.poll(2)
    c.close()
    check(extra is None or extra.error(), "no record past the %d expected" % n)
    return got


def test():
    with running_cluster((1, 2, 3), CHROOT, **OPTS) as (zk, zc, brokers):
        wait_listed(brokers)
        admin = AdminClient({"bootstrap.servers": brokers[0].bootstrap})
        # the controller leads: AlterPartition needs it, so it is never the one stopped
        ctl = json.loads(zc.get(CHROOT + "/controller")[0])["brokerid"]
        order = [ctl] + [i for i in (1, 2, 3) if i != ctl]
        admin.create_topics([NewTopic("isr", 1, replica_assignment=[order], config={"min.insync.replicas": "2"})],
                            operation_timeout=15)["isr"].result(timeout=30)
        wait_until(lambda: isr_zk(zc) == [1, 2, 3], 20, "the state znode with an ISR of 3")
        lid = state(zc, CHROOT, "isr", 0)[0]["leader"]
        eq(lid, ctl, "leader")
        leader = brokers[lid - 1]
        (i1, f1), (i2, f2) = [(i + 1, b) for i, b in enumerate(brokers) if b is not leader]
        wait_until(lambda: all("replica: 'isr-0' is follower" in b.log_text() for b in (f1, f2)), 20,
                   "the followers took their role")
        acked = [b"a%d" % i for i in range(5)]
        eq(produce(leader, acked, "all"), [None] * 5, "acks=all, all in sync")

        f1.proc.send_signal(signal.SIGSTOP)
        try:
            t0 = time.monotonic()
            wait_until(lambda: isr_zk(zc) == sorted([lid, i2]), 20, "the stopped follower out of the ISR")
            log("follower %d stopped: out of the ISR after %.1f s" % (i1, time.monotonic() - t0))
            wait_until(lambda: isr_md(leader) == sorted([lid, i2]), 10, "Metadata's ISR of 2")
            more = [b"b%d" % i for i in range(5)]
            eq(produce(leader, more, "all"), [None] * 5, "acks=all with one follower out of the ISR")
            acked += more
        finally:
            f1.proc.send_signal(signal.SIGCONT)
        wait_until(lambda: isr_zk(zc) == [1, 2, 3], 20, "the resumed follower back in the ISR")
        wait_until(lambda: isr_md(leader) == [1, 2, 3], 10, "Metadata's ISR of 3 again")
        log("follower %d resumed: back in the ISR" % i1)

        # an acks=all record parked while both followers stop: the shrink fails it after its append
        p = Producer({"bootstrap.servers": leader.bootstrap, "acks": "all", "retries": 0, "linger.ms": 0,
                      "request.timeout.ms": 30000, "message.timeout.ms": 30000})
        res = []
        stopped = []
        try:
            for b in (f1, f2):
                b.proc.send_signal(signal.SIGSTOP)
                stopped.append(b)
            p.produce("isr", value=b"parked", partition=0, on_delivery=lambda err, m: res.append(err))
            p.flush(40)
            eq(len(res), 1, "delivery report of the parked record")
            check(res[0] is not None and res[0].code() == KafkaError.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
                  "the parked acks=all record fails with NOT_ENOUGH_REPLICAS_AFTER_APPEND: %s" % res)
            eq(isr_zk(zc), [lid], "ISR with both followers stopped")
            errs = produce(leader, [b"refused0", b"refused1"], "all")
            check(all(e is not None and e.code() == KafkaError.NOT_ENOUGH_REPLICAS for e in errs),
                  "acks=all below min.insync.replicas: %s" % errs)
            one = [b"c%d" % i for i in range(3)]
            eq(produce(leader, one, "1"), [None] * 3, "acks=1 with the ISR at the leader alone")
            log("both followers stopped: parked acks=all NOT_ENOUGH_REPLICAS_AFTER_APPEND, then "
                "NOT_ENOUGH_REPLICAS; acks=1 acknowledged")
        finally:
            for b in stopped:
                b.proc.send_signal(signal.SIGCONT)
        wait_until(lambda: isr_zk(zc) == [1, 2, 3], 30, "both followers back in the ISR")
        last = [b"d%d" % i for i in range(3)]
        eq(produce(leader, last, "all"), [None] * 3, "acks=all once the ISR is whole again")
        want = acked + [b"parked"] + one + last
        eq(read_all(leader, len(want)), want, "records in the log")
        log("ISR whole again: acks=all acknowledged; the log holds no refused record")


if __name__ == "__main__":
    main(test)

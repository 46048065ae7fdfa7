"""Cluster mode: a former leader truncates what it alone appended (OffsetForLeaderEpoch).

ZooKeeper and three brokers in the chroot /gregor/c105 (zookeeper.session.timeout.ms
6000, replica.lag.time.max.ms 60000 so that no follower leaves the ISR here; unclean
leader election off); topic "dv" (1 partition, replication factor 3,
min.insync.replicas=2):

  1. 20 records with acks=all are acknowledged (on all three)
  2. both followers SIGSTOPped; 7 records with acks=1 are appended by the leader only
     (above its high watermark: a consumer on the leader gets none of them)
  3. the leader is killed with SIGKILL, the followers resumed: once its session is
     gone, the controller makes one of them leader (both are in the ISR); 30 records
     with acks=all are acknowledged by the new leader (new leader epoch)
  4. the old leader starts again: it becomes follower, asks the new leader where its
     last epoch ends, truncates its 7 records and fetches: its .log bytes equal the new
     leader's, and a consumer reads exactly the 50 acknowledged records (never the 7)
"""

import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from gregor import eq, check, log, main, wait_until  # noqa: E402
from replicas import state  # noqa: E402
from zookeeper import running_cluster, wait_listed  # noqa: E402

CHROOT = "/gregor/c105"
TOPIC = "dv"
OPTS = {"zookeeper_session_timeout_ms": 6000, "replica_lag_time_max_ms": 60000}


def log_bytes(b):
    d = b.partition_dir(TOPIC, 0)
    out = b""
    for name in sorted(os.listdir(d)):
        if name.endswith(".log"):
            with open(os.path.join(d, name), "rb") as f:
                out += f.read()
    return out


def produce(b, values, acks):
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": acks, "linger.ms": 0, "message.timeout.ms": 30000})
    res = []
    for v in values:
        p.produce(TOPIC, value=v, partition=0, on_delivery=lambda err, m: res.append(err))
    p.flush(40)
    eq(res, [None] * len(values), "acks=%s deliveries" % acks)


def consume(b, seconds, want=None):
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "c105", "enable.auto.commit": False,
                  "fetch.wait.max.ms": 100})
    c.assign([TopicPartition(TOPIC, 0, 0)])
    got, end = [], time.monotonic() + seconds
    while time.monotonic() < end and (want is None or len(got) < want):
        m = c.poll(0.2)
        if m is not None and not m.error():
            got.append(m.value())
    if want is not None:  # nothing more behind them
        m = c.poll(1.5)
        check(m is None or m.error(), "no record past the %d expected: %r" % (want, m and m.value()))
    c.close()
    return got


def test():
    with running_cluster((1, 2, 3), CHROOT, **OPTS) as (zk, zc, brokers):
        wait_listed(brokers)
        admin = AdminClient({"bootstrap.servers": brokers[0].bootstrap})
        admin.create_topics([NewTopic(TOPIC, 1, 3, config={"min.insync.replicas": "2"})],
                            operation_timeout=15)[TOPIC].result(timeout=30)
        wait_until(lambda: (state(zc, CHROOT, TOPIC, 0)[0] or {}).get("leader", -1) > 0, 20, "a leader")
        st = state(zc, CHROOT, TOPIC, 0)[0]
        old = brokers[st["leader"] - 1]
        followers = [b for b in brokers if b is not old]
        wait_until(lambda: all("replica: 'dv-0' is follower" in b.log_text() for b in followers), 20,
                   "the followers took their role")
        first = [b"a%d" % i for i in range(20)]
        produce(old, first, "all")

        stopped = []
        try:
            for b in followers:
                b.proc.send_signal(signal.SIGSTOP)
                stopped.append(b)
            time.sleep(1.5)  # past replica.fetch.wait.max.ms: no fetch of theirs is left for the leader to answer
            produce(old, [b"lost%d" % i for i in range(7)], "1")
            eq(consume(old, 1.5), first, "records a consumer gets from the old leader")
            old.kill9()
        finally:
            for b in stopped:
                b.proc.send_signal(signal.SIGCONT)
        log("old leader %s appended 7 records alone and was killed" % old.bootstrap)
        wait_until(lambda: (state(zc, CHROOT, TOPIC, 0)[0] or {}).get("leader") in
                   [brokers.index(b) + 1 for b in followers], 40, "a new leader among the followers")
        st2 = state(zc, CHROOT, TOPIC, 0)[0]
        check(st2["leader_epoch"] > st["leader_epoch"], "new leader epoch: %s" % st2)
        new = brokers[st2["leader"] - 1]
        check(b"lost" not in log_bytes(new), "the new leader never got the 7 records")
        wait_until(lambda: "replica: 'dv-0' is leader" in new.log_text(), 20, "the new leader took its role")
        second = [b"b%d" % i for i in range(30)]
        produce(new, second, "all")
        log("new leader %s (leader epoch %d): 30 more acknowledged" % (new.bootstrap, st2["leader_epoch"]))

        old.start()
        wait_until(lambda: log_bytes(old) == log_bytes(new), 30, "the old leader's .log bytes equal the new leader's")
        wait_until(lambda: "replica: 'dv-0' truncates to" in old.log_text(), 5, "the old leader truncated")
        check(b"lost" not in log_bytes(old), "the old leader's log holds none of the 7 records")
        log("old leader restarted: truncated, its log equals the new leader's")
        eq(consume(new, 30, len(first + second)), first + second, "records consumed from the new leader")


if __name__ == "__main__":
    main(test)

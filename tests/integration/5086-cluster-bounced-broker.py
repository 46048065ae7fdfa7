"""Cluster mode: a broker that died and registered again before the
controller listed the brokers (a "bounced" broker: the same id under a new
registration, i.e. a new broker epoch) is treated as Kafka's controller
treats it: as a failure followed by a start-up.  Its partitions get a new
leader epoch (the leadership it held moves to another in-sync replica), it
leaves and then rejoins every ISR, and clients carry on: every record
acknowledged with acks=all before and after is read back once.

ZooKeeper and three brokers in the chroot /gregor/c86; the controller
(broker 1) has a 20 s ZooKeeper session, brokers 2 and 3 one of 2 s, so
the controller can be frozen (SIGSTOP) while broker 2 is killed (-9), its
registration expires and it registers again; then the controller is
thawed and sees the same ids with broker 2's epoch changed.
"""

import json
import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402

import kwire  # noqa: E402
from gregor import check, eq, log, main, wait_until  # noqa: E402
from replicas import state  # noqa: E402
from zookeeper import running_cluster  # noqa: E402

CHROOT = "/gregor/c86"
TOPIC = "bounce"
NPARTS = 3
VICTIM = 2


def setup(i, b):
    b.overrides["zookeeper.session.timeout.ms"] = "20000" if i == 1 else "2000"
    b.overrides["zookeeper.connection.timeout.ms"] = "1000"
    b.overrides["min.insync.replicas"] = "2"


def states(zc):
    return {p: state(zc, CHROOT, TOPIC, p)[0] for p in range(NPARTS)}


def produce(boot, n, tag):
    p = Producer({"bootstrap.servers": boot, "acks": "all", "enable.idempotence": True, "message.timeout.ms": 30000})
    acked = []

    def done(err, m):
        if err is None:
            acked.append(m.value())
    for i in range(n):
        p.produce(TOPIC, value=b"%s-%d" % (tag, i), partition=i % NPARTS, on_delivery=done)
    eq(p.flush(40), 0, "records of %s left unacknowledged" % tag)
    return acked


def read_all(boot, want):
    c = Consumer({"bootstrap.servers": boot, "group.id": "g86", "enable.auto.commit": False,
                  "auto.offset.reset": "earliest"})
    c.assign([TopicPartition(TOPIC, p, 0) for p in range(NPARTS)])
    got = []
    deadline = time.monotonic() + 40
    while len(got) < len(want) and time.monotonic() < deadline:
        got += [m.value() for m in c.consume(500, 0.5) if not m.error()]
    c.close()
    return got


def broker_epoch(zc, bid):
    return zc.exists("%s/brokers/ids/%d" % (CHROOT, bid))


def test():
    with running_cluster((1, 2, 3), CHROOT, setup=setup) as (_zk, zc, brokers):
        ctl = json.loads(zc.get(CHROOT + "/controller")[0])["brokerid"]
        check(ctl == 1, "broker 1 (the first started) is the controller, not %d" % ctl)
        eq(kwire.create_topic(brokers[0].port, TOPIC, NPARTS, replication_factor=3)[0], 0, "CreateTopics")
        wait_until(lambda: all(s and sorted(s["isr"]) == [1, 2, 3] for s in states(zc).values()), 30,
                   "every partition with a leader and an ISR of three")
        boot = ",".join(b.bootstrap for b in brokers)
        acked = produce(boot, 300, b"before")
        before = states(zc)
        led = [p for p, s in before.items() if s["leader"] == VICTIM]
        check(led, "broker %d leads a partition: %s" % (VICTIM, before))
        old_czxid = broker_epoch(zc, VICTIM).czxid

        victim, controller = brokers[VICTIM - 1], brokers[0]
        mark = controller.log_size()
        os.kill(controller.pid, signal.SIGSTOP)
        try:
            victim.kill9()
            wait_until(lambda: not broker_epoch(zc, VICTIM), 15, "broker %d's registration expired" % VICTIM)
            victim.start()
            wait_until(lambda: broker_epoch(zc, VICTIM), 15, "broker %d registered again" % VICTIM)
        finally:
            os.kill(controller.pid, signal.SIGCONT)
        check(broker_epoch(zc, VICTIM).czxid != old_czxid, "a new registration")
        controller.wait_log("bounced", 15, since=mark)
        log("the controller saw broker %d bounce (led %s)" % (VICTIM, led))

        def moved():
            now = states(zc)
            return all(now[p]["leader"] not in (-1, VICTIM) and now[p]["leader_epoch"] > before[p]["leader_epoch"]
                       for p in led)
        wait_until(moved, 20, "the partitions broker %d led moved to another in-sync replica" % VICTIM)
        wait_until(lambda: all(sorted(s["isr"]) == [1, 2, 3] for s in states(zc).values()), 30,
                   "broker %d back in every ISR" % VICTIM)
        log("states after the bounce: %s" % states(zc))
        acked += produce(boot, 300, b"after")
        got = read_all(boot, acked)
        eq((len(got), len(set(got))), (len(acked), len(acked)), "records read (all, distinct)")
        eq(sorted(got), sorted(acked), "the records read are those acknowledged")


if __name__ == "__main__":
    main(test)

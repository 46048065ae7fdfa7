"""Cluster mode: acks, min.insync.replicas and the high watermark with replication factor 3.

ZooKeeper and three brokers in the chroot /gregor/c101; topic "mi" (1 partition,
replication factor 3, min.insync.replicas=2).  The ISR stays as the controller
wrote it (all three: stopped for less than replica.lag.time.max.ms), so stopped followers keep
counting in the ISR and hold the high watermark back:

  1. 10 records with acks=all are acknowledged
  2. both followers SIGSTOPped: 5 records with acks=1 are acknowledged by the leader,
     but a consumer (confluent-kafka, through the leader) gets none of them and the
     high watermark stays at 10; an acks=all record is not acknowledged
     (REQUEST_TIMED_OUT from the broker, or the client's own message timeout)
  3. SIGCONT: the followers catch up, the high watermark reaches 16 and the consumer
     gets the 6 records (the timed-out acks=all record was appended: Kafka's behaviour)
  4. topic "mi4" with min.insync.replicas=4 (more than its ISR of 3): acks=all gets
     NOT_ENOUGH_REPLICAS before anything is appended, acks=1 is acknowledged
"""

import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from gregor import eq, check, log, main, wait_until  # noqa: E402
from zookeeper import running_cluster, wait_listed  # noqa: E402

CHROOT = "/gregor/c101"
SESSION = {"zookeeper_session_timeout_ms": 15000}


def create(b, topic, min_isr):
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 3, config={"min.insync.replicas": str(min_isr)})],
                        operation_timeout=15)[topic].result(timeout=30)
    md = {}

    def led():
        part = admin.list_topics(topic, timeout=5).topics[topic].partitions.get(0)
        md["leader"] = part.leader if part else -1
        return md["leader"] > 0
    wait_until(led, 20, "a leader for %s" % topic)
    return md["leader"]


def produce(b, topic, values, acks, timeout_ms=30000):
    """Sends values to partition 0; returns the delivery errors (None for acknowledged)."""
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": acks, "retries": 0, "linger.ms": 0,
                  "request.timeout.ms": min(timeout_ms, 30000), "message.timeout.ms": timeout_ms})
    res = []
    for v in values:
        p.produce(topic, value=v, partition=0, on_delivery=lambda err, m: res.append(err))
    p.flush(timeout_ms / 1000 + 10)
    eq(len(res), len(values), "delivery reports")
    return res


def consumer(b, topic, offset):
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "c101", "enable.auto.commit": False,
                  "fetch.wait.max.ms": 100})
    c.assign([TopicPartition(topic, 0, offset)])
    return c


def poll_for(c, seconds):
    got, end = [], time.monotonic() + seconds
    while time.monotonic() < end:
        m = c.poll(0.2)
        if m is not None and not m.error():
            got.append(m.value())
    return got


def test():
    with running_cluster((1, 2, 3), CHROOT, **SESSION) as (zk, zc, brokers):
        wait_listed(brokers)
        lid = create(brokers[0], "mi", 2)
        leader = brokers[lid - 1]
        followers = [b for b in brokers if b is not leader]
        wait_until(lambda: all("replica: 'mi-0' is follower" in b.log_text() for b in followers), 20,
                   "the followers took their role")
        eq(produce(leader, "mi", [b"a%d" % i for i in range(10)], "all"), [None] * 10, "acks=all, all in sync")
        c = consumer(leader, "mi", 10)
        stopped = []
        try:
            for b in followers:
                b.proc.send_signal(signal.SIGSTOP)
                stopped.append(b)
            eq(produce(leader, "mi", [b"b%d" % i for i in range(5)], "1"), [None] * 5,
               "acks=1 with both followers stopped")
            eq(poll_for(c, 3), [], "records a consumer got past the high watermark")
            eq(c.get_watermark_offsets(TopicPartition("mi", 0), timeout=5, cached=False)[1], 10,
               "high watermark with both followers stopped")
            log("followers stopped: 5 acks=1 records appended, high watermark held at 10, nothing consumed")
            errs = produce(leader, "mi", [b"c0"], "all", timeout_ms=2500)
            check(errs[0] is not None and errs[0].code() in (KafkaError.REQUEST_TIMED_OUT, KafkaError._MSG_TIMED_OUT,
                                                             KafkaError._TIMED_OUT),
                  "acks=all with both followers stopped is not acknowledged: %s" % errs)
            log("acks=all with both followers stopped: %s" % errs[0].name())
        finally:
            for b in stopped:
                b.proc.send_signal(signal.SIGCONT)
        got = []
        wait_until(lambda: got.extend(poll_for(c, 0.5)) or len(got) >= 6, 20, "the records once the followers resume")
        eq(got, [b"b%d" % i for i in range(5)] + [b"c0"], "records consumed after SIGCONT")
        eq(c.get_watermark_offsets(TopicPartition("mi", 0), timeout=5, cached=False)[1], 16,
           "high watermark after SIGCONT")
        c.close()
        log("followers resumed: high watermark 16, the 6 records consumed")

        lid4 = create(brokers[0], "mi4", 4)
        errs = produce(brokers[lid4 - 1], "mi4", [b"x"], "all", timeout_ms=10000)
        check(errs[0] is not None and errs[0].code() == KafkaError.NOT_ENOUGH_REPLICAS,
              "acks=all with min.insync.replicas above the ISR: %s" % errs)
        eq(produce(brokers[lid4 - 1], "mi4", [b"y"], "1"), [None], "acks=1 with min.insync.replicas above the ISR")
        c = consumer(brokers[lid4 - 1], "mi4", 0)
        got = []
        wait_until(lambda: got.extend(poll_for(c, 0.5)) or got, 20, "the acks=1 record of mi4")
        eq(got, [b"y"], "mi4 holds only the acks=1 record")
        c.close()
        log("min.insync.replicas=4 over an ISR of 3: NOT_ENOUGH_REPLICAS for acks=all, acks=1 appended")


if __name__ == "__main__":
    main(test)

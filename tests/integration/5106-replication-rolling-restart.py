"""Cluster mode: a rolling restart (SIGTERM, start again, one broker at a time) under an
idempotent acks=all producer loses nothing and fails nothing.

ZooKeeper and three brokers in the chroot /gregor/c106; topic "rr" (2 partitions,
replication factor 3, min.insync.replicas=2).  A confluent-kafka producer
(enable.idempotence, acks=all) sends numbered records the whole time while each broker
in turn is stopped with SIGTERM (controlled shutdown: its leaderships move to other
ISR members before it exits, and the controller's answer lists no partition as remaining), started again, and waited for until every partition's
ISR holds it again.  Then: every delivery succeeded, and a consumer reads each
partition's records exactly once, in the order sent.
"""

import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from gregor import eq, check, log, main, wait_until  # noqa: E402
from replicas import state  # noqa: E402
from zookeeper import running_cluster, wait_listed  # noqa: E402

CHROOT = "/gregor/c106"
TOPIC = "rr"
PARTS = 2


def isrs(zc):
    return [sorted((state(zc, CHROOT, TOPIC, p)[0] or {}).get("isr", [])) for p in range(PARTS)]


def test():
    with running_cluster((1, 2, 3), CHROOT, zookeeper_session_timeout_ms=10000) as (zk, zc, brokers):
        wait_listed(brokers)
        boot = ",".join(b.bootstrap for b in brokers)
        admin = AdminClient({"bootstrap.servers": boot})
        admin.create_topics([NewTopic(TOPIC, PARTS, 3, config={"min.insync.replicas": "2"})],
                            operation_timeout=15)[TOPIC].result(timeout=30)
        wait_until(lambda: isrs(zc) == [[1, 2, 3]] * PARTS, 20, "every ISR whole")
        p = Producer({"bootstrap.servers": boot, "enable.idempotence": True, "acks": "all", "linger.ms": 5,
                      "message.timeout.ms": 120000})
        sent = {q: [] for q in range(PARTS)}
        acked, errors = [], []
        stop = threading.Event()

        def run():
            i = 0
            while not stop.is_set():
                q = i % PARTS
                v = b"%d" % i
                sent[q].append(v)
                p.produce(TOPIC, value=v, partition=q,
                          on_delivery=lambda err, m: errors.append(err) if err else acked.append(m.offset()))
                p.poll(0)
                i += 1
                time.sleep(0.002)
        th = threading.Thread(target=run)
        th.start()
        try:
            for i, b in enumerate(brokers):
                time.sleep(1)
                eq(b.stop(), 0, "exit status of broker %d on SIGTERM" % (i + 1))
                text = b.log_text()
                check("controlled shutdown: leading no partition" in text,
                      "broker %d moved its leaderships before exiting" % (i + 1))
                answer = [ln for ln in text.splitlines() if "controlled shutdown: controller" in ln]
                check(answer and answer[-1].endswith(" 0 remaining partitions"),
                      "the controller's answer to broker %d: every leadership can move: %r" % (i + 1, answer))
                time.sleep(1)
                b.start()
                wait_until(lambda: isrs(zc) == [[1, 2, 3]] * PARTS, 60, "broker %d back in every ISR" % (i + 1))
                log("broker %d restarted and back in every ISR (%d acknowledged so far, %d failed)"
                    % (i + 1, len(acked), len(errors)))
            time.sleep(1)
        finally:
            stop.set()
            th.join(30)
        eq(p.flush(120), 0, "records left in the producer")
        total = sum(len(v) for v in sent.values())
        eq((len(acked), errors), (total, []), "deliveries")
        log("%d records acknowledged over the rolling restart, none failed" % total)

        c = Consumer({"bootstrap.servers": boot, "group.id": "c106", "enable.auto.commit": False})
        c.assign([TopicPartition(TOPIC, q, 0) for q in range(PARTS)])
        got = {q: [] for q in range(PARTS)}

        def more():
            m = c.poll(0.5)
            if m is not None and not m.error():
                got[m.partition()].append(m.value())
            return sum(len(v) for v in got.values()) >= total
        wait_until(more, 60, "every record consumed", interval_s=0)
        check(c.poll(1.5) is None, "nothing past the records sent")
        c.close()
        for q in range(PARTS):
            eq(got[q], sent[q], "partition %d: each record once, in order" % q)


if __name__ == "__main__":
    main(test)

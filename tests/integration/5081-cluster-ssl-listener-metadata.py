"""Cluster mode: Metadata gives every broker's endpoint for the listener
the client came through, so a client on the SSL listener reaches the
other brokers over SSL too.

ZooKeeper and two brokers, each with a PLAINTEXT and an SSL listener (one
CA and server certificate for both):

  1. Metadata over either broker's SSL listener lists both brokers at
     their SSL ports; over PLAINTEXT at their plaintext ports
  2. a topic of 4 partitions led by both brokers: a confluent_kafka
     producer bootstrapped on broker 1's SSL listener delivers a record to
     every partition (those of broker 2 through broker 2's SSL port)
  3. FindCoordinator over SSL names a coordinator at an SSL port
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import eq, free_port, main, wait_until  # noqa: E402
from zookeeper import ZooKeeper, cluster_broker, wait_listed  # noqa: E402
import tlscerts  # noqa: E402

from confluent_kafka import Consumer, Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

CHROOT = "/gregor/c81"
TOPIC = "ssl4"


def md(conf, topics=False):
    m = AdminClient(conf).list_topics(timeout=10)
    brokers = sorted((b.id, b.host, b.port) for b in m.brokers.values())
    if not topics:
        return brokers
    t = m.topics.get(TOPIC)
    return {p.id: p.leader for p in t.partitions.values()} if t and not t.error else {}


def test():
    with ZooKeeper() as zk:
        bs, sports = [], []
        try:
            certs = None
            for i in (1, 2):
                b = cluster_broker(zk.connect, i, CHROOT, start=False)
                certs = certs or tlscerts.make(b.tmp)
                sport = free_port()
                b.overrides.update({
                    "listeners": "PLAINTEXT://127.0.0.1:%d,SSL://127.0.0.1:%d" % (b.port, sport),
                    "ssl.keystore.location": certs["server"]})
                b.start()
                bs.append(b)
                sports.append(sport)
            wait_listed(bs)

            def ssl(i):
                return {"bootstrap.servers": "127.0.0.1:%d" % sports[i], "security.protocol": "SSL",
                        "ssl.ca.location": certs["ca"]}

            plain = [(1, "127.0.0.1", bs[0].port), (2, "127.0.0.1", bs[1].port)]
            tls = [(1, "127.0.0.1", sports[0]), (2, "127.0.0.1", sports[1])]
            wait_until(lambda: md({"bootstrap.servers": bs[0].bootstrap}) == plain, 15,
                       "both brokers in Metadata over PLAINTEXT")
            for i in (0, 1):
                eq(md(ssl(i)), tls, "brokers in Metadata over broker %d's SSL listener" % (i + 1))
                eq(md({"bootstrap.servers": bs[i].bootstrap}), plain,
                   "brokers in Metadata over broker %d's PLAINTEXT listener" % (i + 1))

            admin = AdminClient(ssl(0))
            admin.create_topics([NewTopic(TOPIC, 4, 1)])[TOPIC].result(15)
            wait_until(lambda: sorted(set(md(ssl(0), True).values())) == [1, 2] and
                       len(md(ssl(0), True)) == 4 and md(ssl(1), True) == md(ssl(0), True), 20,
                       "4 partitions led by brokers 1 and 2 on both")
            leaders = md(ssl(0), True)
            delivered = {}

            def on_delivery(err, msg):
                delivered[msg.partition()] = err

            p = Producer(dict(ssl(0), **{"message.timeout.ms": 15000}))
            for part in range(4):
                p.produce(TOPIC, value=b"over ssl %d" % part, partition=part, on_delivery=on_delivery)
            eq(p.flush(20), 0, "records left undelivered over SSL")
            eq(delivered, {part: None for part in range(4)}, "delivery of one record per partition "
               "(leaders %r)" % leaders)

            c = Consumer(dict(ssl(1), **{"group.id": "g81", "auto.offset.reset": "earliest"}))
            try:
                c.subscribe([TOPIC])
                got = set()
                for _ in range(60):
                    m = c.poll(0.5)
                    if m is not None and not m.error():
                        got.add(m.partition())
                    if len(got) == 4:
                        break
                eq(sorted(got), [0, 1, 2, 3], "partitions read back over SSL through broker 2")
            finally:
                c.close()
            for b in bs:
                eq(b.stop(), 0, "exit status of %s" % b.bootstrap)
        except BaseException:
            for b in bs:
                b.dump_log()
            raise
        finally:
            for b in bs:
                b.__exit__(None, None, None)


if __name__ == "__main__":
    main(test)

"""Cluster mode with two listeners: two brokers, each with a PLAINTEXT and an
SSL listener, register both endpoints and the protocol of each in
/brokers/ids/<id> (Kafka's JSON: endpoints and listener_security_protocol_map);
Metadata over the SSL listener gives the answering broker's own SSL endpoint,
and over PLAINTEXT every broker's PLAINTEXT endpoint."""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import eq, free_port, main, wait_until  # noqa: E402
from zookeeper import ZooKeeper, cluster_broker  # noqa: E402
import tlscerts  # noqa: E402

from confluent_kafka.admin import AdminClient  # noqa: E402


def brokers_of(conf):
    md = AdminClient(conf).list_topics(timeout=10)
    return sorted((b.id, b.host, b.port) for b in md.brokers.values())


def test():
    with ZooKeeper() as zk:
        bs, sports = [], []
        try:
            for i in (1, 2):
                b = cluster_broker(zk.connect, i, start=False)
                certs = tlscerts.make(b.tmp)
                sport = free_port()
                b.overrides.update({
                    "listeners": "PLAINTEXT://127.0.0.1:%d,SSL://127.0.0.1:%d" % (b.port, sport),
                    "ssl.keystore.location": certs["server"]})
                b.start()
                bs.append((b, certs))
                sports.append(sport)
            kz = zk.client()
            for (b, _), sport, i in zip(bs, sports, (1, 2)):
                doc = json.loads(kz.get("/brokers/ids/%d" % i)[0])
                eq(doc["endpoints"], ["PLAINTEXT://127.0.0.1:%d" % b.port, "SSL://127.0.0.1:%d" % sport],
                   "endpoints of broker %d" % i)
                eq(doc["listener_security_protocol_map"].get("SSL"), "SSL", "protocol of SSL on broker %d" % i)
                eq((doc["host"], doc["port"]), ("127.0.0.1", b.port), "host and port of broker %d" % i)
            plain = [(1, "127.0.0.1", bs[0][0].port), (2, "127.0.0.1", bs[1][0].port)]
            wait_until(lambda: brokers_of({"bootstrap.servers": bs[0][0].bootstrap}) == plain, 15,
                       "both brokers in Metadata over PLAINTEXT")
            b1, certs = bs[0]
            ssl = brokers_of({"bootstrap.servers": "127.0.0.1:%d" % sports[0], "security.protocol": "SSL",
                              "ssl.ca.location": certs["ca"]})
            eq(ssl[0], (1, "127.0.0.1", sports[0]), "broker 1 over its SSL listener")
        finally:
            for b, _ in bs:
                b.__exit__(None, None, None)


if __name__ == "__main__":
    main(test)

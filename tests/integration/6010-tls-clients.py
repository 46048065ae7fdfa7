"""TLS listeners: confluent_kafka (librdkafka) and kafka-python produce
(acks=all, compressed and not) and consume thousands of records over SSL;
a PLAINTEXT and an SSL listener on one broker each advertise themselves
in Metadata; a fetch of several MB across batches arrives intact over TLS;
garbage and a stalled handshake on the SSL port leave a plaintext client
undisturbed and the stalled one is closed by connections.max.idle.ms."""

import itertools
import os
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, eq, check, free_port, main  # noqa: E402
import tlscerts  # noqa: E402

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient  # noqa: E402

N = 3000


def ssl_conf(certs, bootstrap, client_cert=False):
    c = {"bootstrap.servers": bootstrap, "security.protocol": "SSL", "ssl.ca.location": certs["ca"]}
    if client_cert:
        c["ssl.certificate.location"] = certs["client_cert"]
        c["ssl.key.location"] = certs["client_key"]
    return c


def produce(conf, topic, n, codec, size=100):
    p = Producer(dict(conf, **{"acks": "all", "compression.codec": codec, "linger.ms": 5}))
    errs = []
    for i in range(n):
        p.produce(topic, value=b"%08d" % i + b"x" * (size - 8),
                  on_delivery=lambda e, m: errs.append(e) if e else None)
        if i % 500 == 0:
            p.poll(0)
    eq(p.flush(30), 0, "records left unflushed (%s)" % codec)
    eq(errs, [], "delivery errors (%s)" % codec)


def consume(conf, topic, n, size=100, timeout_s=25):
    c = Consumer(dict(conf, **{"group.id": "g-%s" % topic, "enable.auto.commit": False,
                               "fetch.max.bytes": 8 << 20, "max.partition.fetch.bytes": 8 << 20}))
    c.assign([TopicPartition(topic, 0, 0)])
    got = []
    deadline = time.time() + timeout_s
    while len(got) < n and time.time() < deadline:
        m = c.poll(1.0)
        if m is None:
            continue
        check(m.error() is None, "consume error: %s" % m.error())
        got.append(m.value())
    c.close()
    eq(len(got), n, "records consumed from %s" % topic)
    for i, v in enumerate(got):
        if v != b"%08d" % i + b"x" * (size - 8):
            check(False, "record %d of %s differs" % (i, topic))


def metadata_endpoint(conf):
    md = AdminClient(conf).list_topics(timeout=10)
    eq(len(md.brokers), 1, "brokers")
    br = next(iter(md.brokers.values()))
    return (br.host, br.port)


def test():
    sport = free_port()
    with Broker(start=False) as b:
        certs = tlscerts.make(b.tmp)
        b.overrides.update({
            "listeners": "PLAINTEXT://127.0.0.1:%d,SSL://127.0.0.1:%d" % (b.port, sport),
            "ssl.keystore.location": certs["server"],
            "ssl.truststore.location": certs["ca"],
            "connections.max.idle.ms": "3000",
            "num.partitions": "1",
        })
        b.start()
        sboot = "127.0.0.1:%d" % sport
        sconf = ssl_conf(certs, sboot)

        # Metadata over each listener advertises that listener
        eq(metadata_endpoint({"bootstrap.servers": b.bootstrap}), ("127.0.0.1", b.port), "plaintext endpoint")
        eq(metadata_endpoint(sconf), ("127.0.0.1", sport), "SSL endpoint")

        # librdkafka over TLS, compressed and not
        for codec in ("none", "lz4", "zstd"):
            topic = "tls-%s" % codec
            produce(sconf, topic, N, codec)
            consume(sconf, topic, N)

        # a fetch of several MB across many batches over TLS
        produce(sconf, "tls-big", 400, "none", size=16000)
        consume(sconf, "tls-big", 400, size=16000)

        # kafka-python over TLS
        from kafka import KafkaConsumer, KafkaProducer
        kp = KafkaProducer(bootstrap_servers=sboot, security_protocol="SSL", ssl_cafile=certs["ca"],
                           acks="all", compression_type="gzip")
        for i in range(N):
            kp.send("tls-kp", b"%08d" % i + b"x" * 92)
        kp.flush(30)
        kp.close()
        kc = KafkaConsumer(bootstrap_servers=sboot, security_protocol="SSL", ssl_cafile=certs["ca"],
                           auto_offset_reset="earliest", consumer_timeout_ms=8000)
        kc.assign([__import__("kafka").TopicPartition("tls-kp", 0)])
        vals = [m.value for m in itertools.islice(kc, N)]  # N, or fewer after a stall
        kc.close()
        eq(vals, [b"%08d" % i + b"x" * 92 for i in range(N)], "kafka-python records over TLS")

        # garbage instead of a ClientHello, and a handshake that stalls
        g = socket.create_connection(("127.0.0.1", sport), timeout=5)
        g.sendall(b"GET / HTTP/1.0\r\n\r\n" + os.urandom(2000))
        stall = socket.create_connection(("127.0.0.1", sport), timeout=10)
        stall.sendall(b"\x16\x03\x01\x02\x00")  # a record header, then nothing
        produce({"bootstrap.servers": b.bootstrap}, "plain-after", 500, "none")
        consume({"bootstrap.servers": b.bootstrap}, "plain-after", 500)
        g.settimeout(5)
        try:
            got = g.recv(4096)
            while got:  # an alert at most, then the close
                got = g.recv(4096)
        except ConnectionResetError:
            pass
        g.close()
        t0 = time.time()
        try:
            data = stall.recv(100)
        except ConnectionResetError:
            data = b""
        eq(data, b"", "stalled handshake closed")
        check(time.time() - t0 < 9, "stalled handshake closed by connections.max.idle.ms")
        stall.close()
        consume(sconf, "tls-none", N)  # TLS still serves after both


if __name__ == "__main__":
    main(test)

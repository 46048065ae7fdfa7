"""SCRAM-SHA-512 and SCRAM-SHA-256 over SASL_SSL: confluent_kafka
(librdkafka, SaslAuthenticate) and kafka-python (bare tokens after a v0
SaslHandshake) produce and consume with users of sasl.scram.users; a
wrong password gets an authentication error on each client and the
broker keeps serving; a mechanism the listener does not enable is
refused with UNSUPPORTED_SASL_MECHANISM and the enabled list."""

import itertools
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, eq, check, free_port, main  # noqa: E402
import tlscerts  # noqa: E402

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402

N = 1000


def rd_conf(port, certs, mech, user, password):
    return {"bootstrap.servers": "localhost:%d" % port, "security.protocol": "SASL_SSL",
            "ssl.ca.location": certs["ca"], "sasl.mechanism": mech,
            "sasl.username": user, "sasl.password": password}


def rdkafka_roundtrip(conf, topic):
    p = Producer(dict(conf, acks="all"))
    for i in range(N):
        p.produce(topic, b"%06d" % i)
    eq(p.flush(30), 0, "records left unflushed")
    c = Consumer(dict(conf, **{"group.id": "g-" + topic, "enable.auto.commit": False}))
    c.assign([TopicPartition(topic, 0, 0)])
    got = []
    deadline = time.time() + 20
    while len(got) < N and time.time() < deadline:
        m = c.poll(1.0)
        if m is not None:
            check(m.error() is None, "consume error: %s" % m.error())
            got.append(m.value())
    c.close()
    eq(got, [b"%06d" % i for i in range(N)], "librdkafka records over %s" % conf["sasl.mechanism"])


def rdkafka_bad_password(conf):
    errs = []
    p = Producer(dict(conf, **{"sasl.password": "wrong", "error_cb": lambda e: errs.append(e)}))
    p.produce("never", b"x")
    deadline = time.time() + 10
    while not errs and time.time() < deadline:
        p.poll(0.2)
    check(any("Authentication failed" in e.str() for e in errs),
          "librdkafka authentication failure: %s" % [e.str() for e in errs])
    p.purge()
    p.flush(0)


def kafka_python(port, certs, mech, user, password, topic):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition as KTP
    from kafka.errors import KafkaError
    kw = dict(bootstrap_servers="localhost:%d" % port, security_protocol="SASL_SSL", ssl_cafile=certs["ca"],
              sasl_mechanism=mech, sasl_plain_username=user)
    kp = KafkaProducer(sasl_plain_password=password, acks="all", **kw)
    for i in range(N):
        kp.send(topic, b"%06d" % i)
    kp.flush(30)
    kp.close()
    kc = KafkaConsumer(sasl_plain_password=password, auto_offset_reset="earliest", consumer_timeout_ms=8000, **kw)
    kc.assign([KTP(topic, 0)])
    vals = [m.value for m in itertools.islice(kc, N)]  # N, or fewer after a stall
    kc.close()
    eq(vals, [b"%06d" % i for i in range(N)], "kafka-python records over %s" % mech)
    try:
        KafkaProducer(sasl_plain_password="wrong", max_block_ms=5000, **kw).close()
        check(False, "kafka-python with a wrong password connected")
    except KafkaError as e:
        check("Authentication" in repr(e) or "NoBrokersAvailable" in repr(e), "kafka-python error: %r" % e)


def test():
    port = free_port()
    with Broker(start=False) as b:
        certs = tlscerts.make(b.tmp)
        b.overrides.update({
            "listeners": "PLAINTEXT://127.0.0.1:%d,SASL_SSL://127.0.0.1:%d" % (b.port, port),
            "advertised.listeners": "PLAINTEXT://127.0.0.1:%d,SASL_SSL://localhost:%d" % (b.port, port),
            "ssl.keystore.location": certs["server"],
            "sasl.enabled.mechanisms": "SCRAM-SHA-512,SCRAM-SHA-256",
            "sasl.scram.users": "dave:dave-pw, erin:e=r;in",
            "num.partitions": "1",
            "connection.failed.authentication.delay.ms": "0",
        })
        b.start()
        conf512 = rd_conf(port, certs, "SCRAM-SHA-512", "dave", "dave-pw")
        rdkafka_roundtrip(conf512, "scram512-rd")
        rdkafka_bad_password(conf512)
        rdkafka_roundtrip(rd_conf(port, certs, "SCRAM-SHA-256", "dave", "dave-pw"), "scram256-rd")
        kafka_python(port, certs, "SCRAM-SHA-512", "dave", "dave-pw", "scram512-kp")
        kafka_python(port, certs, "SCRAM-SHA-256", "dave", "dave-pw", "scram256-kp")
        rdkafka_bad_password(rd_conf(port, certs, "SCRAM-SHA-256", "nobody", "x"))
        # PLAIN is not enabled on this listener (plaintext socket to the PLAINTEXT port cannot ask)
        log = b.log_text()
        check("authenticated as User:dave (SASL/SCRAM-SHA-512)" in log, "principal logged for SCRAM-SHA-512")
        check("SASL/SCRAM-SHA-256 authentication failed for user 'nobody'" in log, "unknown user logged")
        rdkafka_roundtrip(conf512, "scram512-after")


if __name__ == "__main__":
    main(test)

"""SASL_PLAINTEXT with PLAIN: confluent_kafka (librdkafka) and kafka-python
authenticate with users from the listener's JAAS entry, produce and
consume; a wrong password gets an authentication error on each client (Kafka's
error code and message on the wire, answered later as failures from one
address repeat) while the broker keeps serving the others; a Produce sent before
authentication closes that connection; GSSAPI, an unserved mechanism,
SCRAM without users and a malformed or user-less JAAS entry stop the broker with status 2."""

import itertools
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, eq, check, run, main  # noqa: E402
import kwire  # noqa: E402

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402

N = 2000
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'username="admin" password="admin-secret" user_alice="alice-secret" user_bob="b=ob;\'s";')


def sasl_conf(b, user, password):
    return {"bootstrap.servers": b.bootstrap, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN", "sasl.username": user, "sasl.password": password}


def rdkafka_roundtrip(conf, topic):
    p = Producer(dict(conf, **{"acks": "all", "linger.ms": 5}))
    errs = []
    for i in range(N):
        p.produce(topic, value=b"%08d" % i, on_delivery=lambda e, m: errs.append(e) if e else None)
        if i % 500 == 0:
            p.poll(0)
    eq(p.flush(30), 0, "records left unflushed")
    eq(errs, [], "delivery errors")
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
    eq(got, [b"%08d" % i for i in range(N)], "librdkafka records over SASL/PLAIN")


def rdkafka_bad_password(b):
    errs = []
    p = Producer(dict(sasl_conf(b, "alice", "wrong"), error_cb=lambda e: errs.append(e)))
    p.produce("sasl-rd", b"never")
    deadline = time.time() + 10
    while not errs and time.time() < deadline:
        p.poll(0.2)
    check(any("Authentication failed" in e.str() for e in errs),
          "librdkafka reports the authentication failure: %s" % [e.str() for e in errs])
    p.purge()
    p.flush(0)


def kafka_python(b):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition as KTP
    from kafka.errors import KafkaError
    kw = dict(bootstrap_servers=b.bootstrap, security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN")
    kp = KafkaProducer(sasl_plain_username="bob", sasl_plain_password="b=ob;'s", acks="all", **kw)
    for i in range(N):
        kp.send("sasl-kp", b"%08d" % i)
    kp.flush(30)
    kp.close()
    kc = KafkaConsumer(sasl_plain_username="bob", sasl_plain_password="b=ob;'s",
                       auto_offset_reset="earliest", consumer_timeout_ms=8000, **kw)
    kc.assign([KTP("sasl-kp", 0)])
    vals = [m.value for m in itertools.islice(kc, N)]  # N, or fewer after a stall
    kc.close()
    eq(vals, [b"%08d" % i for i in range(N)], "kafka-python records over SASL/PLAIN")
    try:
        KafkaProducer(sasl_plain_username="bob", sasl_plain_password="nope", request_timeout_ms=5000,
                      max_block_ms=5000, **kw).close()
        check(False, "kafka-python with a wrong password connected")
    except KafkaError as e:
        check("Authentication" in repr(e) or "NoBrokersAvailable" in repr(e), "kafka-python error: %r" % e)


def produce_before_auth(b):
    s = kwire.connect(b.port)
    body = kwire.i16(1) + kwire.i32(1000) + kwire.array([])  # Produce v3..: acks, timeout, no topics
    s.sendall(kwire.request(0, 3, 7, kwire.string(None) + body))
    closed, got = kwire.wait_closed(s, 5)
    s.close()
    check(closed, "Produce before authentication closes the connection")
    eq(got, b"", "no answer to a Produce before authentication")


def raw_bad_password(b):
    """SaslHandshake v1 + SaslAuthenticate v0 with a wrong password: Kafka's
    error and message; the third failure in a row from this address is
    answered no sooner than 3 x connection.failed.authentication.delay.ms."""
    for attempt in range(3):
        s = kwire.connect(b.port)
        s.sendall(kwire.request(17, 1, 1, kwire.string("PLAIN")))
        r = kwire.Reader(kwire.recv_response(s)[1])
        eq(r.i16(), 0, "SaslHandshake error")
        eq(r.array(lambda r: r.string()), ["PLAIN"], "mechanisms")
        t0 = time.monotonic()
        s.sendall(kwire.request(36, 0, 2, kwire.nbytes(b"\0alice\0guess%d" % attempt)))
        r = kwire.Reader(kwire.recv_response(s)[1])
        took = time.monotonic() - t0
        eq(r.i16(), 58, "SaslAuthenticate error (SASL_AUTHENTICATION_FAILED)")
        eq(r.string(), "Authentication failed: Invalid username or password", "error message")
        s.sendall(kwire.request(3, 1, 3, kwire.metadata_v1_body()))
        closed, _ = kwire.wait_closed(s, 5)
        s.close()
        check(closed, "Metadata after a failed authentication closes the connection")
    check(took >= 0.6, "third failure answered after %.3f s, want >= 0.6 s" % took)


def bad_settings(b):
    cases = [
        ({"sasl.enabled.mechanisms": "GSSAPI"}, "GSSAPI"),
        ({"sasl.enabled.mechanisms": "PLAIN,OAUTHBEARER"}, "OAUTHBEARER"),
        ({"sasl.enabled.mechanisms": "SCRAM-SHA-256", "sasl.scram.users": "nopassword"}, "sasl.scram.users"),
        ({"sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule required user_a=\"x\""},
         "sasl.jaas.config"),
        ({"sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule required;"}, "user_"),
    ]
    for extra, needle in cases:
        cmd = b.command() + sum((["--override", "%s=%s" % kv] for kv in extra.items()), [])
        p = run(cmd, timeout_s=20, check_rc=False)
        eq(p.returncode, 2, "exit status with %s" % extra)
        out = (p.stdout + p.stderr).decode(errors="replace")
        check(needle in out, "message naming %s:\n%s" % (needle, out[-2000:]))


def test():
    with Broker(start=False) as b:
        b.overrides.update({"listeners": "SASL_PLAINTEXT://%s" % b.bootstrap,
                            "sasl.enabled.mechanisms": "PLAIN", "num.partitions": "1",
                            "connection.failed.authentication.delay.ms": "200",
                            "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS})
        b.start()
        produce_before_auth(b)
        rdkafka_roundtrip(sasl_conf(b, "alice", "alice-secret"), "sasl-rd")
        rdkafka_bad_password(b)
        kafka_python(b)
        raw_bad_password(b)
        produce_before_auth(b)
        check("authentication failed for user 'alice'" in b.log_text(), "failure logged with the user")
        rdkafka_roundtrip(sasl_conf(b, "alice", "alice-secret"), "sasl-rd2")
        b.stop()
        b.overrides.pop("listener.name.sasl_plaintext.plain.sasl.jaas.config")
        b.overrides["sasl.jaas.config"] = JAAS
        bad_settings(b)


if __name__ == "__main__":
    main(test)

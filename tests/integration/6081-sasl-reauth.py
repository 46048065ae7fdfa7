"""connections.max.reauth.ms (KIP-368): SaslAuthenticate v1 answers the
session lifetime; a raw client that re-authenticates on its connection
with the same user keeps it past the lifetime, one that does not is
disconnected at its next request, one that re-authenticates as another
user is refused; a per-listener-and-mechanism setting overrides the
broker-wide one, and a bad value of it stops the broker (exit status 2). A librdkafka consumer keeps consuming across several
session ends while a producer writes (librdkafka 2.0.2 has no KIP-368
re-authentication, so the broker closes its connections and it
reconnects, as with Kafka)."""

import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, check, eq, free_port, main, run  # noqa: E402
import kwire as kw  # noqa: E402

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'user_rita="rita-pw" user_sam="sam-pw";')
LIFETIME_MS = 2000


class Raw:
    """One SASL_PLAINTEXT connection speaking PLAIN by hand."""

    def __init__(self, port):
        self.s = kw.connect(port)
        self.corr = 0

    def call(self, key, version, body):
        self.corr += 1
        self.s.sendall(kw.request(key, version, self.corr, body))
        corr, body = kw.recv_response(self.s)
        eq(corr, self.corr, "correlation id")
        return kw.Reader(body)

    def login(self, user, password):
        r = self.call(17, 1, kw.string("PLAIN"))
        eq(r.i16(), 0, "SaslHandshake error")
        r = self.call(36, 1, kw.nbytes(b"\0" + user.encode() + b"\0" + password.encode()))
        err, msg = r.i16(), r.string()
        r.take(r.i32())
        return err, msg, r.i64()

    def metadata_ok(self):
        r = self.call(3, 1, kw.metadata_v1_body([]))
        return r.i32() >= 1


def raw_clients(port):
    a, b, c = Raw(port), Raw(port), Raw(port)
    for x in (a, b, c):
        err, _, lifetime = x.login("rita", "rita-pw")
        eq(err, 0, "login")
        check(LIFETIME_MS - 500 < lifetime <= LIFETIME_MS, "SessionLifetimeMs %d" % lifetime)
        check(x.metadata_ok(), "Metadata while the session lasts")
    t_end = time.monotonic() + LIFETIME_MS / 1000.0
    # a re-authenticates twice before its session ends, b never
    for _ in range(2):
        time.sleep(LIFETIME_MS / 2000.0 * 0.8)
        err, _, lifetime = a.login("rita", "rita-pw")
        eq(err, 0, "re-authentication as the same user")
        check(lifetime > LIFETIME_MS - 500, "a new lifetime %d" % lifetime)
        check(a.metadata_ok(), "Metadata after re-authentication")
    time.sleep(max(0.0, t_end - time.monotonic()) + 0.3)
    check(a.metadata_ok(), "a re-authenticated connection is served past the first lifetime")
    b.s.sendall(kw.request(3, 1, 99, kw.metadata_v1_body([])))
    closed, got = kw.wait_closed(b.s, 5)
    check(closed and not got, "a connection that did not re-authenticate is closed at its next request")
    err, msg, _ = c.login("sam", "sam-pw")
    eq(err, 58, "re-authentication as another user: SASL_AUTHENTICATION_FAILED")
    for x in (a, b, c):
        x.s.close()


def consume_across_reauth(port, seconds=7):
    conf = {"bootstrap.servers": "127.0.0.1:%d" % port, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN", "sasl.username": "rita", "sasl.password": "rita-pw"}
    p = Producer(dict(conf, acks="all", **{"linger.ms": 5}))
    sent = []
    stop = threading.Event()

    def produce():
        i = 0
        while not stop.is_set():
            p.produce("reauth", b"%06d" % i)
            sent.append(b"%06d" % i)
            p.poll(0)
            i += 1
            time.sleep(0.01)
        p.flush(30)
    t = threading.Thread(target=produce)
    t.start()
    c = Consumer(dict(conf, **{"group.id": "g-reauth", "enable.auto.commit": False}))
    c.assign([TopicPartition("reauth", 0, 0)])
    got = []
    deadline = time.time() + seconds
    while time.time() < deadline:
        m = c.poll(0.2)
        if m is not None and m.error() is None:
            got.append(m.value())
    stop.set()
    t.join()
    deadline = time.time() + 20
    while len(got) < len(sent) and time.time() < deadline:
        m = c.poll(0.2)
        if m is not None and m.error() is None:
            got.append(m.value())
    c.close()
    check(len(sent) > 100, "records produced: %d" % len(sent))
    eq(got, sent, "every record consumed, in order, across session ends")


def test():
    other = free_port()
    with Broker(start=False) as b:
        b.overrides.update({
            "listeners": "SASL_PLAINTEXT://%s,OTHER://127.0.0.1:%d" % (b.bootstrap, other),
            "listener.security.protocol.map": "SASL_PLAINTEXT:SASL_PLAINTEXT,OTHER:SASL_PLAINTEXT",
            "sasl.enabled.mechanisms": "PLAIN",
            "sasl.jaas.config": JAAS,
            "num.partitions": "1",
            "connections.max.reauth.ms": str(LIFETIME_MS),
            "listener.name.other.plain.connections.max.reauth.ms": "0",
            "connection.failed.authentication.delay.ms": "0",
        })
        b.start()
        raw_clients(b.port)
        o = Raw(other)
        eq(o.login("rita", "rita-pw")[2], 0, "no lifetime on the listener that overrides it with 0")
        o.s.close()
        consume_across_reauth(b.port)
        check(b.log_text().count("SASL session expired") >= 3,
              "librdkafka's connections closed at their session end")
        eq(b.stop(), 0, "broker exit status")
        for key, needle in (("listener.name.other.plain.connections.max.reauth.ms", "connections.max.reauth.ms"),
                            ("listener.name.other.PLAIN.connections.max.reauth.ms", "unknown setting")):
            p = run(b.command() + ["--override", key + "=soon"], timeout_s=20, check_rc=False)
            eq(p.returncode, 2, "exit status with %s=soon" % key)
            check(needle in (p.stdout + p.stderr).decode(errors="replace"), "message naming %s" % needle)


if __name__ == "__main__":
    main(test)

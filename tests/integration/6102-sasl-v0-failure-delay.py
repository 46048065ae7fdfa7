"""The failed-authentication delay on the bare token path of SaslHandshake v0
(what kafka-python 2.0 sends): a wrong PLAIN password in a bare,
size-prefixed token closes the connection without an answer, but only after
connection.failed.authentication.delay.ms times the failures from that
address in the last minute (the third in a row: no sooner than 3 x the
delay), as a failed SaslAuthenticate is answered; a SCRAM client-first
naming an unknown user is treated the same; kafka-python with a wrong
password fails no sooner than the delay; while those connections wait the
broker serves others (kafka-python with the right password produces and
reads back)."""

import itertools
import os
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, eq, check, log, main  # noqa: E402
import kwire  # noqa: E402

DELAY_MS = 300
SLACK_S = 0.02  # the broker's timers count whole milliseconds: a delay may end up to 1 ms early
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'user_alice="alice-secret";')


def v0_handshake(b, mech):
    s = kwire.connect(b.port)
    s.sendall(kwire.request(17, 0, 1, kwire.string(mech)))
    r = kwire.Reader(kwire.recv_response(s)[1])
    eq(r.i16(), 0, "SaslHandshake v0 error")
    return s


def bare_token_fails(b, mech, token):
    """Sends a bare token after a v0 handshake; returns seconds until the broker closed the connection."""
    s = v0_handshake(b, mech)
    t0 = time.monotonic()
    s.sendall(struct.pack(">i", len(token)) + token)
    closed, got = kwire.wait_closed(s, 10)
    took = time.monotonic() - t0
    s.close()
    check(closed, "a failed bare %s token closes the connection" % mech)
    eq(got, b"", "no answer to a failed bare token")
    return took


def good_bare_token(b):
    s = v0_handshake(b, "PLAIN")
    tok = b"\0alice\0alice-secret"
    s.sendall(struct.pack(">i", len(tok)) + tok)
    eq(kwire.recv_exact(s, 4), b"\0\0\0\0", "empty frame answering a good bare PLAIN token")
    s.sendall(kwire.request(3, 1, 2, kwire.metadata_v1_body()))
    kwire.recv_response(s)
    s.close()


def kafka_python(b):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition as KTP
    from kafka.errors import KafkaError
    kw = dict(bootstrap_servers=b.bootstrap, security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN")
    t0 = time.monotonic()
    try:
        KafkaProducer(sasl_plain_username="alice", sasl_plain_password="nope", request_timeout_ms=5000,
                      max_block_ms=5000, reconnect_backoff_ms=50, **kw).close()
        check(False, "kafka-python with a wrong password connected")
    except KafkaError as e:
        log("kafka-python refused after %.3f s: %r" % (time.monotonic() - t0, e))
    check(time.monotonic() - t0 >= DELAY_MS / 1000.0 - SLACK_S, "kafka-python's failure came after the delay")
    kp = KafkaProducer(sasl_plain_username="alice", sasl_plain_password="alice-secret", acks="all", **kw)
    for i in range(50):
        kp.send("v0-delay", b"%04d" % i)
    kp.flush(30)
    kp.close()
    kc = KafkaConsumer(sasl_plain_username="alice", sasl_plain_password="alice-secret",
                       auto_offset_reset="earliest", consumer_timeout_ms=8000, **kw)
    kc.assign([KTP("v0-delay", 0)])
    eq([m.value for m in itertools.islice(kc, 50)], [b"%04d" % i for i in range(50)], "kafka-python records over SASL/PLAIN")
    kc.close()


def test():
    with Broker(start=False) as b:
        b.overrides.update({"listeners": "SASL_PLAINTEXT://%s" % b.bootstrap, "num.partitions": "1",
                            "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
                            "sasl.scram.users": "carol:carol-secret",
                            "connection.failed.authentication.delay.ms": str(DELAY_MS),
                            "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS})
        b.start()
        good_bare_token(b)
        took = [bare_token_fails(b, "PLAIN", b"\0alice\0guess%d" % i) for i in range(3)]
        log("bare PLAIN failures closed after %s s" % ["%.3f" % t for t in took])
        check(took[0] >= DELAY_MS / 1000.0 - SLACK_S, "first failure closed after %.3f s, want >= %.1f" % (took[0], DELAY_MS / 1000.0))
        check(took[2] >= 3 * DELAY_MS / 1000.0 - SLACK_S, "third failure closed after %.3f s, want >= %.1f" %
              (took[2], 3 * DELAY_MS / 1000.0))
        t = bare_token_fails(b, "SCRAM-SHA-256", b"n,,n=nobody,r=abcdefgh")
        check(t >= 4 * DELAY_MS / 1000.0 - SLACK_S, "unknown SCRAM user closed after %.3f s, want >= %.1f" %
              (t, 4 * DELAY_MS / 1000.0))
        # while one connection waits out its delay, others are served
        s = v0_handshake(b, "PLAIN")
        s.sendall(struct.pack(">i", 9) + b"\0alice\0xx")
        kafka_python(b)
        closed, _ = kwire.wait_closed(s, 10)
        s.close()
        check(closed, "the waiting connection is closed in the end")
        check("authentication failed for user 'alice'" in b.log_text(), "failure logged with the user")


if __name__ == "__main__":
    main(test)

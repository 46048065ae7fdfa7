"""SCRAM credentials managed over the protocol (KIP-554) on a single node:
gregor-configs creates a SCRAM-SHA-512 user, confluent_kafka (librdkafka)
and kafka-python (bare tokens after SaslHandshake v0) log in with it over SASL_PLAINTEXT and SASL_SSL, a restart keeps the credential (the
log dir's scram-credentials file), --describe shows it, --delete-config
removes it and the next login fails with SASL_AUTHENTICATION_FAILED.
DescribeUserScramCredentials / AlterUserScramCredentials answered raw
(no Debian client has them): a round trip, and each of Kafka's errors."""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, build_bin, check, eq, free_port, main, run  # noqa: E402
import scramwire as sw  # noqa: E402
import tlscerts  # noqa: E402

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition  # noqa: E402

N = 200
CONFIGS = build_bin("gregor-configs")


def conf(port, user, password, mech="SCRAM-SHA-512"):
    return {"bootstrap.servers": "127.0.0.1:%d" % port, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": mech, "sasl.username": user, "sasl.password": password}


def roundtrip(c, topic):
    p = Producer(dict(c, acks="all"))
    for i in range(N):
        p.produce(topic, b"%05d" % i)
    eq(p.flush(30), 0, "records left unflushed")
    cons = Consumer(dict(c, **{"group.id": "g-" + topic, "enable.auto.commit": False}))
    cons.assign([TopicPartition(topic, 0, 0)])
    got = []
    deadline = time.time() + 20
    while len(got) < N and time.time() < deadline:
        m = cons.poll(0.5)
        if m is not None:
            check(m.error() is None, "consume error: %s" % m.error())
            got.append(m.value())
    cons.close()
    eq(got, [b"%05d" % i for i in range(N)], "records read back over %s" % c["sasl.mechanism"])


def kafka_python(port):
    from kafka import KafkaProducer
    kp = KafkaProducer(bootstrap_servers="127.0.0.1:%d" % port, security_protocol="SASL_PLAINTEXT",
                       sasl_mechanism="SCRAM-SHA-512", sasl_plain_username="alice",
                       sasl_plain_password="alice-secret", acks="all")
    kp.send("t-kp", b"from kafka-python").get(timeout=20)
    kp.close()


def login_fails(c):
    errs = []
    p = Producer(dict(c, **{"error_cb": lambda e: errs.append(e)}))
    p.produce("never", b"x")
    deadline = time.time() + 10
    while not errs and time.time() < deadline:
        p.poll(0.2)
    p.purge()
    p.flush(0)
    check(any(e.code() == KafkaError._AUTHENTICATION and "Authentication failed" in e.str() for e in errs),
          "authentication failure expected: %s" % [e.str() for e in errs])


def configs(b, *args):
    return run([CONFIGS, "--bootstrap-server", "127.0.0.1:%d" % b.port, "--entity-type", "users"] + list(args),
               check_rc=False)


def api_errors(port):
    ok = sw.upsertion("erin", sw.SHA256, "e-pw")
    res = sw.alter(port, upsertions=[ok, sw.upsertion("frank", sw.SHA512, "f", iterations=20000)],
                   deletions=[("gina", sw.SHA256)])
    eq(sorted((u, e) for u, e, _ in res), [("erin", 0), ("frank", 93), ("gina", 91)], "alter errors")
    res = sw.alter(port, upsertions=[sw.upsertion("h", sw.SHA256, "x", iterations=4095),
                                     sw.upsertion("i", 3, "x"),
                                     sw.upsertion("j", sw.SHA256, "x", salted=b"short"),
                                     sw.upsertion("", sw.SHA256, "x")])
    eq([e for _, e, _ in res], [93, 33, 93, 93], "too few iterations, unknown mechanism, bad length, no name")
    res = sw.alter(port, deletions=[("erin", sw.SHA256)], upsertions=[sw.upsertion("erin", sw.SHA256, "y")])
    eq(res[0][:2], ("erin", 92), "the same credential twice")
    err, res = sw.describe(port, ["erin", "nobody", "erin"])
    eq(err, 0, "describe top-level error")
    eq(sorted((u, e) for u, e, _, _ in res), [("erin", 92), ("nobody", 91)], "describe errors")
    err, res = sw.describe(port, ["erin"])
    eq(res, [("erin", 0, None, [(sw.SHA256, 4096)])], "erin described")
    eq(sw.alter(port, deletions=[("erin", sw.SHA256)]), [("erin", 0, None)], "erin deleted")


def test():
    sasl, sasl_ssl = free_port(), free_port()
    with Broker(start=False) as b:
        certs = tlscerts.make(b.tmp)
        b.overrides.update({
            "listeners": "PLAINTEXT://127.0.0.1:%d,SASL_PLAINTEXT://127.0.0.1:%d,SASL_SSL://127.0.0.1:%d" % (
                b.port, sasl, sasl_ssl),
            "ssl.keystore.location": certs["server"],
            "sasl.enabled.mechanisms": "SCRAM-SHA-512,SCRAM-SHA-256",
            "num.partitions": "1",
            "connection.failed.authentication.delay.ms": "0",
        })
        b.start()
        c = conf(sasl, "alice", "alice-secret")
        login_fails(c)
        r = configs(b, "--entity-name", "alice", "--alter", "--add-config",
                    "SCRAM-SHA-512=[iterations=8192,password=alice-secret]")
        eq(r.returncode, 0, "gregor-configs --alter: %s" % r.stderr.decode())
        check(b"Completed updating config for user alice." in r.stdout, "alter output: %r" % r.stdout)
        roundtrip(c, "t-before")
        kafka_python(sasl)
        login_fails(conf(sasl, "alice", "wrong"))
        login_fails(conf(sasl, "alice", "alice-secret", "SCRAM-SHA-256"))
        check(os.path.exists(os.path.join(b.data_dir, "scram-credentials")), "credential file in the log dir")
        check(b"alice-secret" not in open(os.path.join(b.data_dir, "scram-credentials"), "rb").read(),
              "no password on disk")
        b.restart()
        roundtrip(c, "t-after")
        roundtrip(dict(conf(sasl_ssl, "alice", "alice-secret"), **{"security.protocol": "SASL_SSL",
                                                                  "ssl.ca.location": certs["ca"]}), "t-ssl")
        r = configs(b, "--entity-name", "alice", "--describe")
        eq(r.returncode, 0, "describe: %s" % r.stderr.decode())
        check(b"SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-512=iterations=8192"
              in r.stdout, "describe output: %r" % r.stdout)
        r = configs(b, "--entity-name", "alice", "--alter", "--delete-config", "SCRAM-SHA-512")
        eq(r.returncode, 0, "delete: %s" % r.stderr.decode())
        login_fails(c)
        r = configs(b, "--entity-name", "alice", "--alter", "--delete-config", "SCRAM-SHA-512")
        check(r.returncode == 1 and b"RESOURCE_NOT_FOUND" in r.stderr, "second delete: %r" % r.stderr)
        r = configs(b, "--entity-name", "bob", "--alter", "--add-config",
                    "SCRAM-SHA-256=[iterations=1000,password=x]")
        check(r.returncode == 1 and b"UNACCEPTABLE_CREDENTIAL" in r.stderr, "few iterations: %r" % r.stderr)
        api_errors(b.port)
        check("SASL/SCRAM-SHA-512 authentication failed for user 'alice'" in b.log_text(),
              "failure logged with the user")
        b.restart()
        login_fails(c)


if __name__ == "__main__":
    main(test)

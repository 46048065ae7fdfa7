"""TLS settings: ssl.client.auth=required (set for one listener with
listener.name.<name>.ssl.client.auth) refuses a client without a
certificate and serves one with a certificate signed by the truststore's CA
(its subject DN logged as the principal); the keystore and truststore given
inline (on one line with literal \\n, and an encrypted key over continuation
lines); a read_committed consumer sees one committed transaction over TLS;
bad settings (missing file, key not matching the certificate, wrong
ssl.key.password, unknown protocol, a SASL listener) stop the broker at
start with exit status 2 and a message naming the problem."""

import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, broker_bin, eq, check, free_port, log, main  # noqa: E402
import tlscerts  # noqa: E402

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient  # noqa: E402


def conf(certs, boot, client_cert):
    c = {"bootstrap.servers": boot, "security.protocol": "SSL", "ssl.ca.location": certs["ca"]}
    if client_cert:
        c.update({"ssl.certificate.location": certs["client_cert"], "ssl.key.location": certs["client_key"]})
    return c


def metadata_ok(c):
    try:
        AdminClient(dict(c, **{"socket.timeout.ms": 3000})).list_topics(timeout=4)
        return True
    except KafkaException as e:
        log("metadata failed as expected: %s" % e)
        return False


def start_fails(tmp, props, needle):
    path = os.path.join(tmp, "bad.properties")
    with open(path, "w") as f:
        f.write("log.dirs=%s\n" % os.path.join(tmp, "bad-data"))
        for k, v in props.items():
            f.write("%s=%s\n" % (k, v))
    r = subprocess.run([broker_bin(), path], capture_output=True, timeout=20)
    out = (r.stdout + r.stderr).decode(errors="replace")
    eq(r.returncode, 2, "exit status with %r" % props)
    check(needle in out, "message %r missing from: %s" % (needle, out[-800:]))


def transaction(c):
    p = Producer(dict(c, **{"transactional.id": "tls-txn", "acks": "all"}))
    p.init_transactions(15)
    p.begin_transaction()
    for i in range(100):
        p.produce("tls-txn", value=b"t%d" % i)
    p.commit_transaction(15)
    cons = Consumer(dict(c, **{"group.id": "g-txn", "isolation.level": "read_committed",
                               "enable.auto.commit": False}))
    cons.assign([TopicPartition("tls-txn", 0, 0)])
    got, deadline = [], time.time() + 20
    while len(got) < 100 and time.time() < deadline:
        m = cons.poll(1.0)
        if m is not None and m.error() is None:
            got.append(m.value())
    cons.close()
    eq(got, [b"t%d" % i for i in range(100)], "read_committed records over TLS")


def test():
    sport = free_port()
    with Broker(start=False) as b:
        certs = tlscerts.make(b.tmp)
        b.overrides.update({
            "listeners": "INTERNAL://127.0.0.1:%d,EXTERNAL://127.0.0.1:%d" % (b.port, sport),
            "listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:SSL",
            "advertised.listeners": "INTERNAL://127.0.0.1:%d,EXTERNAL://localhost:%d" % (b.port, sport),
            "ssl.keystore.certificate.chain": open(certs["server_cert"]).read().replace("\n", "\\n"),
            "ssl.keystore.key": open(certs["server_key"]).read().replace("\n", "\\n"),
            "ssl.truststore.certificates": open(certs["ca"]).read().replace("\n", "\\n"),
            "ssl.client.auth": "none",
            "listener.name.external.ssl.client.auth": "required",  # per-listener override wins
            "log.debug": "net",
            "num.partitions": "1",
            "transaction.state.log.replication.factor": "1",
        })
        b.start()
        sboot = "localhost:%d" % sport
        check(not metadata_ok(conf(certs, sboot, False)), "a client without a certificate was served")
        check(metadata_ok(conf(certs, sboot, True)), "a client with a certificate was refused")
        b.wait_log("principal CN=test-client,O=gregor", timeout_s=5)
        md = AdminClient(conf(certs, sboot, True)).list_topics(timeout=10)
        br = next(iter(md.brokers.values()))
        eq((br.host, br.port), ("localhost", sport), "EXTERNAL advertised endpoint")
        transaction(conf(certs, sboot, True))

        tmp = b.tmp
        bad_key = os.path.join(tmp, "mismatch.pem")
        with open(bad_key, "w") as f:
            f.write(open(certs["client_key"]).read() + open(certs["server_cert"]).read())
        enc = os.path.join(tmp, "enc.pem")
        subprocess.run(["openssl", "pkey", "-in", certs["server_key"], "-aes256", "-passout", "pass:right",
                        "-out", enc], check=True, timeout=20)
        with open(enc, "a") as f:
            f.write(open(certs["server_cert"]).read())
        lis = "SSL://127.0.0.1:%d" % free_port()
        start_fails(tmp, {"listeners": lis, "ssl.keystore.location": os.path.join(tmp, "nope.pem")},
                    "ssl.keystore.location")
        start_fails(tmp, {"listeners": lis, "ssl.keystore.location": bad_key}, "does not match")
        start_fails(tmp, {"listeners": lis, "ssl.keystore.location": enc, "ssl.key.password": "wrong"},
                    "ssl.key.password")
        start_fails(tmp, {"listeners": lis, "ssl.keystore.location": certs["server"],
                          "ssl.enabled.protocols": "TLSv1.1"}, "TLSv1.1")
        start_fails(tmp, {"listeners": lis}, "needs ssl.keystore.location")
        start_fails(tmp, {"listeners": "SASL_SSL://127.0.0.1:%d" % free_port()}, "SASL")
        start_fails(tmp, {"listeners": lis, "ssl.keystore.location": certs["server"],
                          "listener.name.ssl.ssl.nonsense": "1"}, "unknown setting")
        start_fails(tmp, {"listeners": lis, "ssl.keystore.location": os.path.join(tmp, "nope.pem"),
                          "listener.name.ssl.ssl.keystore.location": certs["server"],
                          "listener.name.ssl.ssl.enabled.protocols": "TLSv1.0"}, "TLSv1.0")
        # the right password works: the encrypted key and its chain inline in server.properties,
        # spread over continuation lines (trailing backslash) as Kafka's documentation writes them
        def continued(path):
            return "\\\n    ".join(open(path).read().strip().split("\n"))
        enc_key = os.path.join(tmp, "enc.key")
        subprocess.run(["openssl", "pkey", "-in", certs["server_key"], "-aes256", "-passout", "pass:right",
                        "-out", enc_key], check=True, timeout=20)
        with Broker(overrides={"listeners": lis, "ssl.key.password": "right"},
                    props={"ssl.keystore.key": continued(enc_key),
                           "ssl.keystore.certificate.chain": continued(certs["server_cert"])},
                    start=False) as b2:
            b2.port = int(lis.rsplit(":", 1)[1])
            b2.start()
            check(metadata_ok(conf(certs, "127.0.0.1:%d" % b2.port, False)), "encrypted key with its password")


if __name__ == "__main__":
    main(test)

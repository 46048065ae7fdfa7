"""PKCS12 key and trust stores (ssl.keystore.type=PKCS12,
ssl.truststore.type=PKCS12 with ssl.keystore.password and
ssl.truststore.password), made with `openssl pkcs12 -export`: the broker
serves TLS with them and verifies a client certificate against the PKCS12
truststore (ssl.client.auth=required: confluent-kafka produces and
consumes, kcat consumes, a client without a certificate is refused), also from a store
written with OpenSSL's -legacy algorithms (RC2/3DES, as older Java and
OpenSSL write them). A wrong password, a file that is not PKCS12, a PKCS12
keystore without a key, and a Java KeyStore (JKS, by its type or by its
file's magic number) stop the broker at start-up with exit status 2 and a
message naming the setting (for JKS, the keytool command converting it)."""

import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, broker_bin, check, eq, free_port, log, main, run  # noqa: E402
import tlscerts  # noqa: E402

from confluent_kafka import Consumer, KafkaException, Producer  # noqa: E402
from confluent_kafka.admin import AdminClient  # noqa: E402


def p12(certs, name, args):
    path = os.path.join(certs["dir"], name)
    subprocess.run(["openssl", "pkcs12", "-export", "-out", path] + args, cwd=certs["dir"], check=True,
                   capture_output=True, timeout=60)
    return path


def stores(certs):
    ks = p12(certs, "server.p12", ["-inkey", "server.key", "-in", "server.crt", "-certfile", "ca.pem",
                                   "-name", "server", "-passout", "pass:ks-secret"])
    ks_legacy = p12(certs, "server-legacy.p12", ["-legacy", "-inkey", "server.key", "-in", "server.crt",
                                                 "-passout", "pass:ks-secret"])
    ts = p12(certs, "trust.p12", ["-nokeys", "-in", "ca.pem", "-passout", "pass:ts-secret"])
    return ks, ks_legacy, ts


def client(certs, boot, with_cert=True):
    c = {"bootstrap.servers": boot, "security.protocol": "SSL", "ssl.ca.location": certs["ca"]}
    if with_cert:
        c.update({"ssl.certificate.location": certs["client_cert"], "ssl.key.location": certs["client_key"]})
    return c


def roundtrip(c, topic):
    p = Producer(dict(c, **{"message.timeout.ms": 10000}))
    for i in range(20):
        p.produce(topic, b"p12-%d" % i)
    eq(p.flush(20), 0, "undelivered over a PKCS12 keystore")
    cons = Consumer(dict(c, **{"group.id": "g-" + topic, "auto.offset.reset": "earliest"}))
    cons.subscribe([topic])
    got = []
    for _ in range(60):
        m = cons.poll(0.5)
        if m is not None and not m.error():
            got.append(m.value())
        if len(got) == 20:
            break
    cons.close()
    eq(sorted(got), sorted(b"p12-%d" % i for i in range(20)), "records read back")


def refused(c):
    try:
        AdminClient(dict(c, **{"socket.timeout.ms": 3000})).list_topics(timeout=4)
        return False
    except KafkaException as e:
        log("refused as expected: %s" % e)
        return True


def start_fails(tmp, props, needle):
    path = os.path.join(tmp, "bad.properties")
    with open(path, "w") as f:
        f.write("log.dirs=%s\nlisteners=SSL://127.0.0.1:%d\n" % (os.path.join(tmp, "bad-data"), free_port()))
        for k, v in props.items():
            f.write("%s=%s\n" % (k, v))
    r = subprocess.run([broker_bin(), path], capture_output=True, timeout=20)
    out = (r.stdout + r.stderr).decode(errors="replace")
    eq(r.returncode, 2, "exit status with %r" % props)
    check(needle in out, "message %r missing from: %s" % (needle, out[-800:]))


def serve(tmp, certs, ks, ts, topic):
    with Broker(start=False) as b:
        port = free_port()
        b.overrides.update({"listeners": "PLAINTEXT://%s,SSL://127.0.0.1:%d" % (b.bootstrap, port),
                            "ssl.keystore.type": "PKCS12", "ssl.keystore.location": ks,
                            "ssl.keystore.password": "ks-secret",
                            "ssl.truststore.type": "PKCS12", "ssl.truststore.location": ts,
                            "ssl.truststore.password": "ts-secret", "ssl.client.auth": "required"})
        b.start()
        boot = "127.0.0.1:%d" % port
        roundtrip(client(certs, boot), topic)
        out = run(["kcat", "-b", boot, "-X", "security.protocol=ssl", "-X", "ssl.ca.location=" + certs["ca"],
                   "-X", "ssl.certificate.location=" + certs["client_cert"],
                   "-X", "ssl.key.location=" + certs["client_key"], "-C", "-t", topic, "-o", "beginning",
                   "-c", "20", "-e", "-q"], timeout_s=30)
        eq(len(out.stdout.split()), 20, "kcat reads the records over the PKCS12 keystore")
        check(refused(client(certs, boot, with_cert=False)), "no client certificate, no connection")


def test():
    with Broker(start=False) as tmpb:
        certs = tlscerts.make(tmpb.tmp)
        ks, ks_legacy, ts = stores(certs)
        serve(tmpb.tmp, certs, ks, ts, "p12")
        serve(tmpb.tmp, certs, ks_legacy, ts, "p12-legacy")

        base = {"ssl.keystore.type": "PKCS12", "ssl.keystore.location": ks, "ssl.keystore.password": "ks-secret"}
        start_fails(tmpb.tmp, dict(base, **{"ssl.keystore.password": "wrong"}), "wrong ssl.keystore.password")
        start_fails(tmpb.tmp, dict(base, **{"ssl.keystore.location": certs["server"]}), "not a PKCS12 file")
        start_fails(tmpb.tmp, dict(base, **{"ssl.keystore.location": ts, "ssl.keystore.password": "ts-secret"}),
                    "holds no private key")
        start_fails(tmpb.tmp, dict(base, **{"ssl.truststore.type": "PKCS12", "ssl.truststore.location": ts,
                                            "ssl.truststore.password": "nope", "ssl.client.auth": "required"}),
                    "wrong ssl.truststore.password")
        # a Java KeyStore: refused by its type, and by its magic number (FE ED FE ED) whatever the type says
        jks = os.path.join(certs["dir"], "server.jks")
        with open(jks, "wb") as f:
            f.write(b"\xfe\xed\xfe\xed\x00\x00\x00\x02" + os.urandom(200))
        start_fails(tmpb.tmp, {"ssl.keystore.type": "JKS", "ssl.keystore.location": jks},
                    "keytool -importkeystore -srckeystore %s -srcstoretype JKS" % jks)
        start_fails(tmpb.tmp, dict(base, **{"ssl.keystore.location": jks}), "Java KeyStore (JKS)")
        start_fails(tmpb.tmp, {"ssl.keystore.location": jks}, "Java KeyStore (JKS)")
        start_fails(tmpb.tmp, {"ssl.keystore.location": certs["server"], "ssl.truststore.location": jks,
                               "ssl.client.auth": "required"}, "ssl.truststore: Java KeyStore (JKS)")
        start_fails(tmpb.tmp, {"ssl.keystore.location": certs["server"], "ssl.keystore.type": "BCFKS"},
                    "expected PEM or PKCS12")


if __name__ == "__main__":
    main(test)

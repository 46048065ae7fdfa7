"""ssl.principal.mapping.rules on an SSL listener with ssl.client.auth=required:
the subject DN of the client certificate (CN=test-client,O=gregor) is mapped
by Kafka's RULE:pattern/replacement/L to User:test-client, the principal the
ACLs match (librdkafka may produce to the topic with Write for test-client
and not to another: TOPIC_AUTHORIZATION_FAILED; an ACL for the whole DN no
longer applies); a certificate no rule matches (O=other) is refused at the
handshake while the mapped client goes on; rules that do not parse stop the
broker at start-up with exit status 2 and a message naming the setting."""

import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, broker_bin, check, eq, free_port, log, main  # noqa: E402
import tlscerts  # noqa: E402

from confluent_kafka import KafkaError, KafkaException, Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402
from kafka.admin import (KafkaAdminClient, ACL, ResourcePattern, ACLOperation, ACLPermissionType,  # noqa: E402
                         ResourceType, ACLResourcePatternType)

RULES = "RULE:^CN=(.*?),O=gregor$/$1/L, RULE:^CN=([^,]*),O=ops$/admin-$1/"


def other_cert(certs):
    """A client certificate signed by the same CA whose DN no rule maps (CN=intruder,O=other)."""
    d = certs["dir"]
    for args in (["req", "-newkey", "rsa:2048", "-nodes", "-subj", "/O=other/CN=intruder", "-keyout", "other.key",
                  "-out", "other.csr"],
                 ["x509", "-req", "-in", "other.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                  "-days", "2", "-out", "other.crt"]):
        subprocess.run(["openssl"] + args, cwd=d, check=True, capture_output=True, timeout=60)
    return os.path.join(d, "other.crt"), os.path.join(d, "other.key")


def ssl_conf(boot, certs, cert, key):
    return {"bootstrap.servers": boot, "security.protocol": "SSL", "ssl.ca.location": certs["ca"],
            "ssl.certificate.location": cert, "ssl.key.location": key}


def produce(c, topic):
    p = Producer(dict(c, **{"message.timeout.ms": 8000}))
    res = []
    p.produce(topic, b"x", on_delivery=lambda e, m: res.append(e and e.code()))
    p.flush(15)
    return res


def metadata_ok(c):
    try:
        AdminClient(dict(c, **{"socket.timeout.ms": 3000})).list_topics(timeout=4)
        return True
    except KafkaException as e:
        log("metadata failed as expected: %s" % e)
        return False


def allow_write(boot, principal, topic):
    k = KafkaAdminClient(bootstrap_servers=boot)
    acl = ACL(principal=principal, host="*", operation=ACLOperation.WRITE, permission_type=ACLPermissionType.ALLOW,
              resource_pattern=ResourcePattern(ResourceType.TOPIC, topic, ACLResourcePatternType.LITERAL))
    eq(k.create_acls([acl])["failed"], [], "CreateAcls for %s" % principal)
    k.close()


def start_fails(tmp, certs, rules, needle):
    path = os.path.join(tmp, "bad.properties")
    with open(path, "w") as f:
        f.write("log.dirs=%s\nlisteners=SSL://127.0.0.1:%d\nssl.keystore.location=%s\n"
                "ssl.principal.mapping.rules=%s\n" % (os.path.join(tmp, "bad-data"), free_port(), certs["server"],
                                                      rules))
    r = subprocess.run([broker_bin(), path], capture_output=True, timeout=20)
    out = (r.stdout + r.stderr).decode(errors="replace")
    eq(r.returncode, 2, "exit status with rules %r" % rules)
    check(needle in out, "message %r missing from: %s" % (needle, out[-800:]))


def test():
    with Broker(start=False) as b:
        certs = tlscerts.make(b.tmp)
        ssl_port = free_port()
        b.overrides.update({"listeners": "PLAINTEXT://%s,SSL://127.0.0.1:%d" % (b.bootstrap, ssl_port),
                            "ssl.keystore.location": certs["server"], "ssl.truststore.location": certs["ca"],
                            "ssl.client.auth": "required", "super.users": "User:ANONYMOUS",
                            "ssl.principal.mapping.rules": RULES,
                            "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"})
        b.start()
        a = AdminClient({"bootstrap.servers": b.bootstrap})
        for f in a.create_topics([NewTopic(t, 1, 1) for t in ("map-ok", "map-dn", "map-no")]).values():
            f.result()
        allow_write(b.bootstrap, "User:test-client", "map-ok")
        allow_write(b.bootstrap, "User:CN=test-client,O=gregor", "map-dn")
        boot = "127.0.0.1:%d" % ssl_port
        mapped = ssl_conf(boot, certs, certs["client_cert"], certs["client_key"])
        eq(produce(mapped, "map-ok"), [None], "produce as the mapped User:test-client")
        eq(produce(mapped, "map-dn"), [KafkaError.TOPIC_AUTHORIZATION_FAILED],
           "an ACL for the unmapped DN does not apply")
        eq(produce(mapped, "map-no"), [KafkaError.TOPIC_AUTHORIZATION_FAILED], "produce without an ACL")
        ocert, okey = other_cert(certs)
        check(not metadata_ok(ssl_conf(boot, certs, ocert, okey)), "a DN no rule maps is refused")
        b.wait_log("no ssl.principal.mapping.rules rule matches", timeout_s=10)
        check("CN=intruder,O=other" in b.log_text(), "the refused DN is logged")
        eq(produce(mapped, "map-ok"), [None], "the mapped client goes on after the refusal")

        start_fails(b.tmp, certs, "RULE:^CN=(.*?),O=gregor$/$1", "ssl.principal.mapping.rules")
        start_fails(b.tmp, certs, "DEFAULT/L", "ssl.principal.mapping.rules")
        start_fails(b.tmp, certs, "default", "ssl.principal.mapping.rules")
        start_fails(b.tmp, certs, "RULE:^CN=(.*,O=x$/$1/", "bad pattern")


if __name__ == "__main__":
    main(test)

"""The principal of a TLS client certificate under ACLs: on an SSL listener
with ssl.client.auth=required the client is User:<subject DN in RFC 2253
form> (User:CN=test-client,O=gregor); an ACL for that principal lets
librdkafka produce to one topic and not another (TOPIC_AUTHORIZATION_FAILED),
while User:ANONYMOUS on the PLAINTEXT listener is the super user that set
the ACLs up."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, eq, free_port, main  # noqa: E402
import tlscerts  # noqa: E402

from confluent_kafka import Producer, KafkaError  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402
from kafka.admin import (KafkaAdminClient, ACL, ResourcePattern, ACLOperation, ACLPermissionType,  # noqa: E402
                         ResourceType, ACLResourcePatternType)

DN = "User:CN=test-client,O=gregor"


def produce(boot, certs, topic):
    p = Producer({"bootstrap.servers": boot, "security.protocol": "SSL", "ssl.ca.location": certs["ca"],
                  "ssl.certificate.location": certs["client_cert"], "ssl.key.location": certs["client_key"],
                  "message.timeout.ms": 8000})
    res = []
    p.produce(topic, b"x", on_delivery=lambda e, m: res.append(e and e.code()))
    p.flush(15)
    return res


def test():
    with Broker(start=False) as b:
        certs = tlscerts.make(b.tmp)
        ssl_port = free_port()
        b.overrides.update({"listeners": "PLAINTEXT://%s,SSL://127.0.0.1:%d" % (b.bootstrap, ssl_port),
                            "ssl.keystore.location": certs["server"], "ssl.truststore.location": certs["ca"],
                            "ssl.client.auth": "required", "super.users": "User:ANONYMOUS",
                            "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"})
        b.start()
        a = AdminClient({"bootstrap.servers": b.bootstrap})
        for f in a.create_topics([NewTopic(t, 1, 1) for t in ("tls-ok", "tls-no")]).values():
            f.result()
        k = KafkaAdminClient(bootstrap_servers=b.bootstrap)
        acl = ACL(principal=DN, host="*", operation=ACLOperation.WRITE, permission_type=ACLPermissionType.ALLOW,
                  resource_pattern=ResourcePattern(ResourceType.TOPIC, "tls-ok", ACLResourcePatternType.LITERAL))
        eq(k.create_acls([acl])["failed"], [], "CreateAcls for the certificate's principal")
        k.close()
        boot = "127.0.0.1:%d" % ssl_port
        eq(produce(boot, certs, "tls-ok"), [None], "produce with Write for %s" % DN)
        eq(produce(boot, certs, "tls-no"), [KafkaError.TOPIC_AUTHORIZATION_FAILED], "produce without an ACL")


if __name__ == "__main__":
    main(test)

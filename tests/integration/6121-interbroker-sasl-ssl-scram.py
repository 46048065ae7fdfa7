"""Cluster mode, inter-broker listener SASL_SSL with SCRAM-SHA-512: three
brokers whose only listener is SASL_SSL, sasl.mechanism.inter.broker.protocol
=SCRAM-SHA-512 with the username and password of
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config, the brokers' own
SCRAM credential in ZooKeeper's /config/users/broker (written as Kafka
keeps it before the brokers start), the admin client's from
sasl.scram.users, an authorizer on and User:broker a super user.  Each
inter-broker connection verifies the other broker's certificate against
the truststore, then authenticates (SaslHandshake, SaslAuthenticate).  See tests/lib/interbroker.py for the steps; the broker
restarted with a wrong password in its JAAS entry logs "authentication
failed" and stays out of the ISR until restarted with the right one."""

import base64
import hashlib
import hmac
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import main  # noqa: E402
import interbroker  # noqa: E402

JAAS = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="%s";'
CHROOT = "/gregor/c6121"
conf = {}


def setup(i, b, certs):
    conf.update({"security.protocol": "SASL_SSL", "ssl.ca.location": certs["ca"],
                 "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "admin", "sasl.password": "admin-secret"})
    b.overrides.update({"listeners": "SASL_SSL://127.0.0.1:%d" % b.port,
                        "security.inter.broker.protocol": "SASL_SSL",
                        "ssl.keystore.location": certs["server"], "ssl.truststore.location": certs["ca"],
                        "sasl.enabled.mechanisms": "SCRAM-SHA-512",
                        "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
                        "sasl.scram.users": "admin:admin-secret",
                        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": JAAS % "broker-secret",
                        "super.users": "User:broker;User:admin"})


def wrong(b, certs):
    b.overrides["listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config"] = JAAS % "not-the-password"


def broker_user(zc):
    """User broker's SCRAM-SHA-512 credential in /config/users/broker, as Kafka's ZooKeeper mode keeps it
    (what AlterUserScramCredentials writes), before any broker starts."""
    salt = os.urandom(24)
    salted = hashlib.pbkdf2_hmac("sha512", b"broker-secret", salt, 4096)
    stored = hashlib.sha512(hmac.new(salted, b"Client Key", hashlib.sha512).digest()).digest()
    server = hmac.new(salted, b"Server Key", hashlib.sha512).digest()
    b64 = lambda b: base64.b64encode(b).decode()  # noqa: E731
    cred = "salt=%s,stored_key=%s,server_key=%s,iterations=4096" % (b64(salt), b64(stored), b64(server))
    zc.create(CHROOT + "/config/users/broker", json.dumps({"version": 1, "config": {"SCRAM-SHA-512": cred}}).encode(),
              makepath=True)


def test():
    interbroker.run(CHROOT, setup, conf, wrong, "authentication failed: SCRAM-SHA-512 as 'broker'", before=broker_user)


if __name__ == "__main__":
    main(test)

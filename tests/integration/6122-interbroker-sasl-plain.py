"""Cluster mode, inter-broker listener SASL_PLAINTEXT with PLAIN: three
brokers whose only listener, BROKER, is SASL_PLAINTEXT
(listener.security.protocol.map, inter.broker.listener.name=BROKER);
sasl.mechanism.inter.broker.protocol=PLAIN with the username and password
of listener.name.broker.plain.sasl.jaas.config, whose user_<name> options
are the users the listener accepts, as in Kafka; an authorizer on and
User:broker a super user.  See tests/lib/interbroker.py for the steps; the
broker restarted with a wrong password logs "authentication failed" and
stays out of the ISR until restarted with the right one.  First, a broker
refuses to start with sasl.mechanism.inter.broker.protocol=GSSAPI (Kafka's
default, not supported) and with a JAAS entry without the broker's own
password."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import main  # noqa: E402
import interbroker  # noqa: E402

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" password="%s" '
        'user_broker="broker-secret" user_admin="admin-secret";')
conf = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": "admin",
        "sasl.password": "admin-secret"}


def setup(i, b, certs):
    b.overrides.update({"listeners": "BROKER://127.0.0.1:%d" % b.port,
                        "listener.security.protocol.map": "BROKER:SASL_PLAINTEXT",
                        "inter.broker.listener.name": "BROKER", "sasl.enabled.mechanisms": "PLAIN",
                        "sasl.mechanism.inter.broker.protocol": "PLAIN",
                        "listener.name.broker.plain.sasl.jaas.config": JAAS % "broker-secret",
                        "super.users": "User:broker;User:admin"})


def wrong(b, certs):
    b.overrides["listener.name.broker.plain.sasl.jaas.config"] = JAAS % "not-the-password"


def test():
    interbroker.run("/gregor/c6122", setup, conf, wrong, "authentication failed: PLAIN as 'broker'", refused=[
        ({"sasl.mechanism.inter.broker.protocol": "GSSAPI"}, "GSSAPI, Kafka's default, needs Kerberos"),
        ({"listener.name.broker.plain.sasl.jaas.config":
          'org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" '
          'user_broker="broker-secret";'},
         "no password=")])


if __name__ == "__main__":
    main(test)

"""Cluster mode, inter-broker listener SSL with ssl.client.auth=required and
no PLAINTEXT listener at all: three brokers whose only listener is SSL
(security.inter.broker.protocol=SSL), an authorizer on and the brokers'
certificate principal (User:CN=localhost,O=gregor) a super user.  Followers
fetch, the controller sends LeaderAndIsr, leaders send AlterPartition,
transaction markers and KIP-890 verifications go over TLS, each broker
verifying the other with its truststore (and the host name against the
certificate's subjectAltName) and presenting its keystore certificate.
See tests/lib/interbroker.py for the steps: RF 3 replication, a
transaction across brokers, acks=all records surviving a SIGKILL of the
leader, and a broker restarted with a truststore of another CA kept out of
the ISR with "certificate verify failed" in its log (no plaintext
fallback), rejoining once its truststore is right.  6123 does the same with
the broker refusing the others' client certificates instead."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import main  # noqa: E402
import interbroker  # noqa: E402

SUPER = "User:CN=localhost,O=gregor;User:CN=test-client,O=gregor"
conf = {}


def setup(i, b, certs):
    conf.update({"security.protocol": "SSL", "ssl.ca.location": certs["ca"],
                 "ssl.certificate.location": certs["client_cert"], "ssl.key.location": certs["client_key"]})
    b.overrides.update({"listeners": "SSL://127.0.0.1:%d" % b.port, "security.inter.broker.protocol": "SSL",
                        "ssl.keystore.location": certs["server"], "ssl.truststore.location": certs["ca"],
                        "ssl.client.auth": "required", "super.users": SUPER})


def wrong(b, certs):
    """A truststore of another CA on the client side (its listener asks no client certificate, and takes
    the controller's anonymous requests, so the controller still reaches it): its fetchers refuse the leaders'
    certificates."""
    b.overrides.update({"ssl.truststore.location": interbroker.other_ca(b.tmp), "ssl.client.auth": "none",
                        "super.users": SUPER + ";User:ANONYMOUS"})


def wrong_server(b, certs):
    """The same truststore with ssl.client.auth=required: the broker refuses the others' client certificates,
    which they log (with TLS 1.3 their handshake ends before the refusal comes)."""
    b.overrides["ssl.truststore.location"] = interbroker.other_ca(b.tmp)


def test():
    interbroker.run("/gregor/c6120", setup, conf, wrong, "certificate verify failed")


if __name__ == "__main__":
    main(test)

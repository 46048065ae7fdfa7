"""Cluster mode, inter-broker listener SSL with ssl.client.auth=required (as
6120), the broker restarted after the SIGKILL of its leadership with a
truststore of another CA: it refuses the other brokers' client
certificates, so the controller cannot reach it and it stays out of the
ISR; the brokers connecting to it log the refusal ("alert unknown ca") once
per connection, not on every retry, although with TLS 1.3 their side of the
handshake succeeds before the refusal arrives; restarted with its right
truststore it rejoins the ISR."""

import importlib.util
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import main  # noqa: E402
import interbroker  # noqa: E402

_spec = importlib.util.spec_from_file_location(
    "t6120", os.path.join(os.path.dirname(os.path.abspath(__file__)), "6120-interbroker-ssl.py"))
t6120 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(t6120)


def test():
    interbroker.run("/gregor/c6123", t6120.setup, t6120.conf, t6120.wrong_server, "alert unknown ca")


if __name__ == "__main__":
    main(test)

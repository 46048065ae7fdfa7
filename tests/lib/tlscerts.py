"""Certificates for TLS tests, made with the openssl command in a temp dir:
a CA, a server certificate for 127.0.0.1 and localhost, a client certificate.
Returns a dict of paths: ca, server (key + chain in one PEM), server_key,
server_cert, client_key, client_cert."""

import os
import subprocess


def _ossl(*args, cwd):
    subprocess.run(["openssl"] + list(args), cwd=cwd, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)


def make(dirpath):
    d = os.path.join(dirpath, "certs")
    os.makedirs(d, exist_ok=True)
    _ossl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=gregor-test-ca",
          "-keyout", "ca.key", "-out", "ca.pem", cwd=d)
    with open(os.path.join(d, "san.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    for who, cn, ext in (("server", "localhost", ["-extfile", "san.ext"]), ("client", "test-client", [])):
        _ossl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/O=gregor/CN=%s" % cn,
              "-keyout", who + ".key", "-out", who + ".csr", cwd=d)
        _ossl("x509", "-req", "-in", who + ".csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
              "-days", "2", "-out", who + ".crt", *ext, cwd=d)
    with open(os.path.join(d, "server.pem"), "w") as out:
        for part in ("server.key", "server.crt", "ca.pem"):
            with open(os.path.join(d, part)) as f:
                out.write(f.read())
    p = lambda n: os.path.join(d, n)  # noqa: E731
    return {"ca": p("ca.pem"), "server": p("server.pem"), "server_key": p("server.key"),
            "server_cert": p("server.crt"), "client_key": p("client.key"), "client_cert": p("client.crt"),
            "dir": d}

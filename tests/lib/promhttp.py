"""Helpers of the metrics tests (70xx): the broker's HTTP listener and a real
Prometheus server (Debian's `prometheus`) scraping it.

    with Prometheus(target="127.0.0.1:PORT") as prom:   # own config, data dir, free port
        prom.query('kafka_server_brokertopicmetrics_bytesin_total{topic="t"}')

The Prometheus process is started in the foreground of the test, signalled
only by its own pid and killed with the test (PR_SET_PDEATHSIG).
"""
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

from gregor import _set_pdeathsig, free_port, port_accepts


def http_get(port, path, method="GET", timeout_s=5.0):
    """(status, body bytes) of one request to 127.0.0.1:port; HTTP errors are returned, not raised."""
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), method=method)
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def scrape(port):
    """/metrics of 127.0.0.1:port as {(name, ((label, value), ...)): float}, labels sorted."""
    import re
    status, body = http_get(port, "/metrics")
    if status != 200:
        raise AssertionError("/metrics answered %d" % status)
    out = {}
    for line in body.decode().split("\n"):
        if not line or line.startswith("#"):
            continue
        m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$', line)
        if not m:
            raise AssertionError("not an exposition line: %r" % line)
        labels = tuple(sorted(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', m.group(2) or "")))
        out[(m.group(1), labels)] = float(m.group(3))
    return out


def sample(metrics, name, **labels):
    """One series of a scrape (scrape()), or None if absent."""
    return metrics.get((name, tuple(sorted((k, str(v)) for k, v in labels.items()))))


def promtool_check(port):
    """`promtool check metrics` accepts the exposition of 127.0.0.1:port; raises with its complaint if not."""
    status, body = http_get(port, "/metrics")
    if status != 200:
        raise AssertionError("/metrics answered %d" % status)
    p = subprocess.run(["promtool", "check", "metrics"], input=body, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=30)
    if p.returncode != 0:
        raise AssertionError("promtool check metrics: exit %d: %s" % (p.returncode, p.stdout.decode()[-2000:]))


def raw_exchange(port, data, timeout_s=5.0):
    """Sends raw bytes, returns what came back until close or timeout (b"" if closed at once)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout_s)
    out = b""
    try:
        try:
            s.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            return out
        while True:
            try:
                chunk = s.recv(65536)
            except (ConnectionResetError, socket.timeout):
                break
            if not chunk:
                break
            out += chunk
    finally:
        s.close()
    return out


def status_of(resp):
    """The status code of a raw HTTP response, or None if there was none."""
    if not resp.startswith(b"HTTP/1."):
        return None
    return int(resp.split(b" ", 2)[1])


class Prometheus:
    """A Prometheus server scraping target ("host:port") every second."""

    def __init__(self, target):
        self.tmp = tempfile.mkdtemp(prefix="gregor-itest-prom-")
        self.port = free_port()
        self.cfg = os.path.join(self.tmp, "prometheus.yml")
        with open(self.cfg, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                    "scrape_configs:\n  - job_name: gregor\n    static_configs:\n"
                    "      - targets: ['%s']\n" % target)
        self.proc = None
        self.log_path = os.path.join(self.tmp, "prometheus.log")

    def __enter__(self):
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen(
                ["prometheus", "--config.file=" + self.cfg, "--storage.tsdb.path=" + os.path.join(self.tmp, "data"),
                 "--web.listen-address=127.0.0.1:%d" % self.port, "--log.level=warn"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd=self.tmp, preexec_fn=_set_pdeathsig)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError("prometheus exited %d:\n%s" % (self.proc.returncode, self.log()))
            # it listens before its storage is open and answers 503 until then
            try:
                if port_accepts(self.port) and http_get(self.port, "/-/ready")[0] == 200:
                    return self
            except OSError:
                pass
            time.sleep(0.1)
        raise AssertionError("prometheus not ready within 15 s:\n" + self.log())

    def __exit__(self, exc_type, exc, tb):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if exc_type:
            print("---- prometheus log ----\n" + self.log())
        shutil.rmtree(self.tmp, ignore_errors=True)
        return False

    def log(self):
        try:
            with open(self.log_path) as f:
                return f.read()[-4000:]
        except OSError:
            return ""

    def query(self, expr):
        """The instant vector of expr: a list of (labels dict, float value)."""
        st, body = http_get(self.port, "/api/v1/query?" + urllib.parse.urlencode({"query": expr}))
        if st != 200:
            raise AssertionError("query %r: HTTP %d %r" % (expr, st, body[:500]))
        res = json.loads(body)["data"]["result"]
        return [(r["metric"], float(r["value"][1])) for r in res]

    def targets_up(self):
        return self.query("up") and all(v == 1.0 for _, v in self.query("up"))

#!/usr/bin/python3
"""7002: bad input to the metrics listener never disturbs the broker.

While a confluent_kafka producer keeps writing (acks=all, one record
every 10 ms from a thread), the HTTP listener gets:
  - a request whose header is 100 KiB, and one whose URL is 100 KiB:
    a 4xx or a closed connection;
  - `/../../etc/passwd` (sent raw, not normalised), unknown paths: 404, and
    no file content (`/` is the web console's page, built into the binary);
  - POST, PUT, DELETE: 405;
  - bytes that are not HTTP: a 4xx or a closed connection;
  - four slowloris clients sending half a request and then nothing: each
    is closed by the listener (within its 5 s idle timeout, 15 s allowed)
    while a normal scrape and /health/ready keep answering 200.
Then every record the producer sent was delivered without an error, the
delivery gap never exceeded 2 s, and /metrics still answers.
On code without the listener the broker refuses metrics.listener and the
test fails at start-up.
"""
import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from confluent_kafka import Producer  # noqa: E402
from gregor import Broker, check, eq, free_port, log, main  # noqa: E402
from promhttp import http_get, raw_exchange, status_of  # noqa: E402

TOPIC = "metrics-7002"


class Background:
    """A producer thread: one record every 10 ms until stopped."""

    def __init__(self, bootstrap):
        self.p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
        self.sent = self.delivered = 0
        self.errors = []
        self.last_ok = time.monotonic()
        self.max_gap = 0.0
        self.stop = threading.Event()
        self.t = threading.Thread(target=self.run)

    def on_delivery(self, err, msg):
        if err:
            self.errors.append(str(err))
            return
        now = time.monotonic()
        self.max_gap = max(self.max_gap, now - self.last_ok)
        self.last_ok = now
        self.delivered += 1

    def run(self):
        while not self.stop.is_set():
            self.p.produce(TOPIC, value=b"x" * 100, on_delivery=self.on_delivery)
            self.sent += 1
            self.p.poll(0.01)
        self.p.flush(20)

    def finish(self):
        self.stop.set()
        self.t.join(30)


def expect_refused(port, data, what):
    resp = raw_exchange(port, data)
    st = status_of(resp)
    log("%s: %s" % (what, st if st else "closed (%d bytes)" % len(resp)))
    check(st is None or 400 <= st < 500, "%s: want 4xx or a closed connection, got %r" % (what, resp[:200]))
    return resp


def bad_requests(port):
    big = b"a" * (100 * 1024)
    expect_refused(port, b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + big + b"\r\n\r\n", "100 KiB header")
    expect_refused(port, b"GET /" + big + b" HTTP/1.1\r\nHost: x\r\n\r\n", "100 KiB URL")
    for path in (b"/../../etc/passwd", b"/metrics/../../../etc/passwd", b"/%2e%2e/%2e%2e/etc/passwd"):
        resp = expect_refused(port, b"GET " + path + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                              path.decode())
        eq(status_of(resp), 404, "%s status" % path.decode())
        check(b"root:" not in resp, "no file content for %s" % path.decode())
    for path in ("/metricsx", "/health", "/health/ready/x", "/console", "/index.htm", "/web/index.html"):
        eq(http_get(port, path)[0], 404, "GET " + path)
    st, body = http_get(port, "/")
    check(st == 200 and b"<title>Gregor console</title>" in body, "GET / is the console page (docs/console.md)")
    for method in ("POST", "PUT", "DELETE", "OPTIONS"):
        eq(http_get(port, "/metrics", method=method)[0], 405, method + " /metrics")
    expect_refused(port, bytes(range(256)) * 4 + b"\r\n\r\n", "binary garbage")


def slowloris(port, n=4):
    socks = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=20)
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        socks.append(s)
    t0 = time.monotonic()
    eq(http_get(port, "/metrics")[0], 200, "/metrics while slow clients hold connections")
    eq(http_get(port, "/health/ready")[0], 200, "/health/ready while slow clients hold connections")
    for s in socks:
        try:
            got = s.recv(4096)
        except (ConnectionResetError, socket.timeout) as e:
            got = repr(e).encode()
        check(not got.startswith(b"HTTP/1.1 200"), "slow client answered 200")
        s.close()
    took = time.monotonic() - t0
    log("slow clients closed by the listener after %.1f s" % took)
    check(took < 15, "slow clients closed within 15 s (took %.1f)" % took)


def test():
    mport = free_port()
    with Broker(props={"metrics.listener": "http://127.0.0.1:%d" % mport}) as b:
        b.wait_log("metrics listener on")
        bg = Background(b.bootstrap)
        bg.t.start()
        time.sleep(1)
        bad_requests(mport)
        slowloris(mport)
        bad_requests(mport)
        bg.finish()
        log("producer: %d sent, %d delivered, %d errors, longest gap %.2f s"
            % (bg.sent, bg.delivered, len(bg.errors), bg.max_gap))
        eq(bg.errors, [], "delivery errors")
        eq(bg.delivered, bg.sent, "records delivered")
        check(bg.delivered > 100, "the producer kept producing")
        check(bg.max_gap < 2.0, "no delivery stall over 2 s (longest %.2f s)" % bg.max_gap)
        st, body = http_get(mport, "/metrics")
        eq(st, 200, "/metrics after the bad input")
        check(('kafka_server_brokertopicmetrics_messagesin_total{topic="%s"} %d' % (TOPIC, bg.delivered)).encode()
              in body, "messages in counts every record delivered")
        check(b.alive(), "broker alive")


if __name__ == "__main__":
    main(test)

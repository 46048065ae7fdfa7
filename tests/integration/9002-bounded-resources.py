#!/usr/bin/python3
# itest: alone (it bounds RSS and answer latency under its own load only)
"""9002: bounded resources under hostile load (issue 7).

One broker with queued.max.request.bytes=64 MiB faces, in turn:
  A. 2,000 idle connections
  B. 50 clients that announce a 100 MiB frame (the socket.request.max.bytes
     limit), send 1 KiB of it and stall; one more that sends half a header
  C. 200 clients pipelining 1 MiB acks=all produce requests as fast as they can
  D. 20 clients pipelining big fetches and never reading the responses
Throughout, broker RSS stays under RSS_BOUND_MB (x3 under sanitizers) and a
control client gets ApiVersions and Metadata answers within 3 s each.
Then max.connections.per.ip: the 11th connection from 127.0.0.1 is closed.
Runtime ~25 s.  GREGOR_HARD_LONG=1 runs C and D for 30 s each.
"""
import os, resource, socket, struct, sys, threading, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import kwire as kw  # noqa: E402
from gregor import Broker, check, eq, log, main  # noqa: E402

SAN = "san" in os.environ.get("BUILD", "") or "san" in os.environ.get("GREGOR_BIN", "")
RSS_BOUND_MB = 256 * (3 if SAN else 1)
LAT_MAX_S = 8.0 if SAN else 3.0
LONG = os.environ.get("GREGOR_HARD_LONG") == "1"
TOPIC = "hard"


def rss_mb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) // 1024
    return -1


class Watch:
    """Samples the broker's RSS and the control client's latency in the background."""

    def __init__(self, b):
        self.b, self.peak, self.worst, self.errors, self.stop = b, 0, 0.0, [], threading.Event()
        self.t = threading.Thread(target=self.run, daemon=True)

    def run(self):
        while not self.stop.is_set():
            self.peak = max(self.peak, rss_mb(self.b.pid))
            t0 = time.monotonic()
            try:
                control(self.b.port)
            except Exception as e:  # noqa: BLE001
                self.errors.append(repr(e))
            self.worst = max(self.worst, time.monotonic() - t0)
            time.sleep(0.2)

    def __enter__(self):
        self.t.start()
        return self

    def __exit__(self, *a):
        self.stop.set()
        self.t.join()

    def verdict(self, what):
        log("%s: peak RSS %d MiB (bound %d), slowest control round trip %.2fs"
            % (what, self.peak, RSS_BOUND_MB, self.worst))
        eq(self.errors, [], "%s: control client errors" % what)
        check(self.peak < RSS_BOUND_MB, "%s: RSS %d MiB < %d MiB" % (what, self.peak, RSS_BOUND_MB))
        check(self.worst < LAT_MAX_S, "%s: control round trip %.2fs < %.0fs" % (what, self.worst, LAT_MAX_S))


def control(port):
    s = kw.connect(port, timeout_s=5)
    try:
        s.sendall(kw.request(18, 0, 1, kw.api_versions_v0_body()))
        eq(kw.recv_response(s)[0], 1, "ApiVersions correlation id")
        s.sendall(kw.request(3, 1, 2, kw.metadata_v1_body([TOPIC])))
        md = kw.parse_metadata_v1(kw.recv_response(s)[1])
        check(TOPIC in md["topics"], "metadata lists %s" % TOPIC)
    finally:
        s.close()


def produce_one(port, acks=1):
    s = kw.connect(port)
    try:
        s.sendall(kw.request(0, 3, 7, kw.produce_v3_body(TOPIC, 0, kw.record_batch([(b"k", b"v")]), acks=acks)))
        (err, base), = kw.parse_produce_v3(kw.recv_response(s)[1]).values()
        eq(err, 0, "produce error")
        return base
    finally:
        s.close()


def idle_connections(b, n):
    socks = []
    try:
        for _ in range(n):
            socks.append(socket.create_connection(("127.0.0.1", b.port), timeout=10))
        time.sleep(0.5)
        with Watch(b) as w:
            time.sleep(1.0)
        w.verdict("A: %d idle connections" % n)
        check(all(s.fileno() >= 0 for s in socks), "idle sockets open")
    finally:
        for s in socks:
            s.close()


def stalled_frames(b):
    socks = []
    try:
        for _ in range(50):
            s = socket.create_connection(("127.0.0.1", b.port), timeout=10)
            s.sendall(struct.pack(">i", 100 << 20) + b"\0" * 1024)
            socks.append(s)
        s = socket.create_connection(("127.0.0.1", b.port), timeout=10)
        s.sendall(b"\0\0")
        socks.append(s)
        with Watch(b) as w:
            time.sleep(1.0)
            produce_one(b.port)
        w.verdict("B: 51 stalled half frames")
    finally:
        for s in socks:
            s.close()


def flood(b, clients, secs, frame, what):
    stop = threading.Event()
    sent = [0] * clients

    def run(i):
        try:
            s = socket.create_connection(("127.0.0.1", b.port), timeout=30)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
            s.settimeout(1.0)
            while not stop.is_set():
                try:
                    s.sendall(frame)
                    sent[i] += 1
                except socket.timeout:
                    continue  # back-pressure: the broker is not reading us now
            s.close()
        except OSError:
            pass

    ts = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(clients)]
    with Watch(b) as w:
        for t in ts:
            t.start()
        time.sleep(secs)
        produce_one(b.port)  # a well-behaved producer still gets its answer
        stop.set()
        for t in ts:
            t.join(15)
    log("%s: %d requests sent by %d clients in %ds" % (what, sum(sent), clients, secs))
    w.verdict(what)
    check(sum(sent) > 0, "flood sent something")


def test():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard < 5000:
        log("skipped: RLIMIT_NOFILE hard limit %d < 5000" % hard)
        sys.stdout.flush()
        os._exit(77)  # gregor.main() would turn SystemExit into a failure
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    secs = 30 if LONG else 4
    with Broker(overrides={"queued.max.request.bytes": str(64 << 20), "num.partitions": "1",
                           "log.segment.bytes": str(32 << 20), "log.retention.bytes": str(64 << 20),
                           "log.retention.check.interval.ms": "1000"}) as b:
        eq(produce_one(b.port), 0, "first offset")  # auto-creates the topic
        idle_connections(b, 2000)
        stalled_frames(b)
        batch = kw.record_batch([(b"k", os.urandom(1 << 20) [:(1 << 20) - 200])])
        flood(b, 200, secs, kw.request(0, 3, 1, kw.produce_v3_body(TOPIC, 0, batch, acks=-1)),
              "C: 200 clients x 1 MiB acks=all produce")
        fetch = kw.request(1, 4, 1, kw.i32(-1) + kw.i32(0) + kw.i32(0) + kw.i32(50 << 20) + kw.i8(0) +
                           kw.array([TOPIC], lambda t: kw.string(t) + kw.array(
                               [0], lambda p: kw.i32(p) + kw.i64(0) + kw.i32(50 << 20))))
        flood(b, 20, secs, fetch, "D: 20 clients fetching, never reading")
        check(b.alive(), "broker alive")
        b.stop()
    with Broker(overrides={"max.connections.per.ip": "10"}) as b:
        socks = [kw.connect(b.port) for _ in range(10)]
        extra = kw.connect(b.port)
        closed, _ = kw.wait_closed(extra, 3.0)
        check(closed, "11th connection from one address closed (max.connections.per.ip=10)")
        socks[0].sendall(kw.request(18, 0, 5, kw.api_versions_v0_body()))
        eq(kw.recv_response(socks[0])[0], 5, "a connection under the limit is served")
        for s in socks:
            s.close()
        time.sleep(0.3)
        s = kw.connect(b.port)
        s.sendall(kw.request(18, 0, 6, kw.api_versions_v0_body()))
        eq(kw.recv_response(s)[0], 6, "a new connection is accepted once others closed")
        s.close()


main(test)

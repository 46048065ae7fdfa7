"""Fault-injection TCP proxy for the idempotence tests, loopback only.

Sits between Kafka clients and one broker and understands just the framing
(int32 size, then the request header: api key, version, correlation id), so
it can hurt chosen APIs at the worst moments:

  * drop a response: the broker has processed the request (for Produce: the
    batch is appended) but the client never hears back - the proxy closes
    both sides instead of forwarding the response;
  * cut a request: only a random prefix of the request frame reaches the
    broker, then both sides are closed.

Either way the client sees a broken connection and retries; without
idempotence a dropped Produce response means a duplicate.

    from faultproxy import FaultProxy
    with FaultProxy(target_port=broker_port, drop_response_p=0.03, cut_request_p=0.01, seed=1) as px:
        ... clients use px.bootstrap; the broker must advertise it
            (advertised.listeners=PLAINTEXT://127.0.0.1:<px.port>) ...
        px.set_faults(0, 0)         # e.g. before verifying
        px.stats                    # {'conns': .., 'drops': .., 'cuts': .., 'requests': ..}

Run by hand: python3 tests/lib/faultproxy.py LISTEN_PORT TARGET_PORT [DROP_P [CUT_P]]
Threads: one acceptor, two pumps per connection; all daemon threads, so a
test that dies never hangs on the proxy.  Faults apply to `apis` (default
Produce only); the random generator is seeded for reproducible runs.
"""

import random
import socket
import struct
import sys
import threading

PRODUCE = 0


def _recv_exact(sock, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def _recv_frame(sock):
    """One whole frame (size prefix included) or None at EOF/error."""
    head = _recv_exact(sock, 4)
    if head is None:
        return None
    (size,) = struct.unpack(">i", head)
    if size < 0 or size > 256 << 20:
        return None
    body = _recv_exact(sock, size)
    return None if body is None else head + body


class _Conn:
    def __init__(self, proxy, client):
        self.proxy = proxy
        self.client = client
        self.broker = None
        self.apis = {}          # correlation id -> api key of requests in flight
        self.lock = threading.Lock()
        self.closed = False

    def close(self):
        with self.lock:
            if self.closed:
                return
            self.closed = True
        for s in (self.client, self.broker):
            if s is None:
                continue
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            try:
                s.close()
            except OSError:
                pass
        self.proxy._forget(self)

    def start(self):
        try:
            self.broker = socket.create_connection(("127.0.0.1", self.proxy.target_port), timeout=5)
            self.broker.settimeout(None)
            self.broker.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            self.close()  # broker down: the client sees a closed connection
            return
        for fn in (self._client_to_broker, self._broker_to_client):
            threading.Thread(target=self._run, args=(fn,), daemon=True).start()

    def _run(self, fn):
        try:
            fn()
        except OSError:
            pass
        self.close()

    def _client_to_broker(self):
        while True:
            frame = _recv_frame(self.client)
            if frame is None or len(frame) < 12:
                return
            api, _ver, corr = struct.unpack(">hhi", frame[4:12])
            with self.lock:
                self.apis[corr] = api
            if api in self.proxy.apis and self.proxy._roll("cut"):
                cut = 4 + self.proxy.rng_int(len(frame) - 4)
                self.broker.sendall(frame[:cut])
                return
            self.broker.sendall(frame)
            self.proxy._count("requests")

    def _broker_to_client(self):
        while True:
            frame = _recv_frame(self.broker)
            if frame is None or len(frame) < 8:
                return
            (corr,) = struct.unpack(">i", frame[4:8])
            with self.lock:
                api = self.apis.pop(corr, None)
            if api in self.proxy.apis and self.proxy._roll("drop"):
                return
            self.client.sendall(frame)


class FaultProxy:
    def __init__(self, target_port, port=0, drop_response_p=0.0, cut_request_p=0.0, seed=None,
                 apis=(PRODUCE,)):
        self.target_port = target_port
        self.apis = set(apis)
        self.drop_p = drop_response_p
        self.cut_p = cut_request_p
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.conns = set()
        self.stats = {"conns": 0, "drops": 0, "cuts": 0, "requests": 0}
        self.lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind(("127.0.0.1", port))
        self.lsock.listen(64)
        self.port = self.lsock.getsockname()[1]
        self.bootstrap = "127.0.0.1:%d" % self.port
        self.running = False

    def set_faults(self, drop_response_p, cut_request_p):
        with self.lock:
            self.drop_p, self.cut_p = drop_response_p, cut_request_p

    def rng_int(self, n):
        with self.lock:
            return self.rng.randrange(max(1, n))

    def _roll(self, kind):
        with self.lock:
            p = self.drop_p if kind == "drop" else self.cut_p
            hit = p > 0 and self.rng.random() < p
            if hit:
                self.stats[kind + "s"] += 1
            return hit

    def _count(self, what):
        with self.lock:
            self.stats[what] += 1

    def _forget(self, conn):
        with self.lock:
            self.conns.discard(conn)

    def _accept(self):
        while self.running:
            try:
                client, _ = self.lsock.accept()
            except OSError:
                return
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn = _Conn(self, client)
            with self.lock:
                self.conns.add(conn)
                self.stats["conns"] += 1
            conn.start()

    def start(self):
        self.running = True
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def stop(self):
        self.running = False
        try:
            self.lsock.close()
        except OSError:
            pass
        with self.lock:
            conns = list(self.conns)
        for c in conns:
            c.close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit("usage: faultproxy.py LISTEN_PORT TARGET_PORT [DROP_P [CUT_P]]")
    px = FaultProxy(int(sys.argv[2]), port=int(sys.argv[1]),
                    drop_response_p=float(sys.argv[3]) if len(sys.argv) > 3 else 0.02,
                    cut_request_p=float(sys.argv[4]) if len(sys.argv) > 4 else 0.01)
    px.start()
    print("faultproxy: %s -> 127.0.0.1:%d" % (px.bootstrap, px.target_port))
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        print(px.stats)

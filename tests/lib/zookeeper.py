"""ZooKeeper for the cluster-mode tests: Debian's server on a free loopback port.

    from zookeeper import ZooKeeper, cluster_brokers

    with ZooKeeper() as zk:                      # zk.connect == "127.0.0.1:PORT"
        brokers = cluster_brokers(zk.connect, [1, 2, 3], chroot="/gregor")
        zk.client().get("/gregor/brokers/ids/1")  # kazoo (python3-kazoo)
        zk.stop(); zk.start()                    # same port and data dir: znodes and sessions kept

The server is mk/zookeeper.sh (Debian's zookeeper package run by java in the
foreground with its own zoo.cfg and data dir under the test's temp dir; never
the system service).  Only the pid started here is ever signalled, with
PR_SET_PDEATHSIG so it dies with the test.  Its log goes to <tmp>/zookeeper.log
and is printed when the test fails.
"""

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import gregor
from gregor import Broker, free_port

START_TIMEOUT_S = 30.0


class ZooKeeper:
    def __init__(self, name=None):
        self.name = name or os.path.splitext(os.path.basename(sys.argv[0] or "test"))[0]
        self.tmp = tempfile.mkdtemp(prefix="gregor-itest-%s-zk-" % self.name)
        self.port = free_port()
        self.connect = "127.0.0.1:%d" % self.port
        self.log_path = os.path.join(self.tmp, "zookeeper.log")
        self.proc = None
        self._clients = []

    def start(self):
        """Start the server and wait (bounded) until a client session can be made."""
        script = os.path.join(gregor.REPO_ROOT, "mk", "zookeeper.sh")
        with open(self.log_path, "a") as log:
            log.write("=== gregor-itest: starting zookeeper on %s\n" % self.connect)
            log.flush()
            self.proc = subprocess.Popen(["sh", script, self.tmp, str(self.port)], stdin=subprocess.DEVNULL,
                                         stdout=log, stderr=log, preexec_fn=gregor._set_pdeathsig)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError("zookeeper exited with %d during start-up\n%s"
                                     % (self.proc.returncode, self.log_tail()))
            if self._serving():
                return self
            time.sleep(0.1)
        raise AssertionError("zookeeper not serving on %s within %.0fs\n%s"
                             % (self.connect, START_TIMEOUT_S, self.log_tail()))

    def _serving(self):
        """True once the server serves sessions: "srvr" reports its mode. "ruok" answers
        imok earlier, while the database is still loading, and a session asked for then
        was held unanswered until the client gave up (kazoo: 10 s)."""
        import socket
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as s:
                s.sendall(b"srvr")
                out = b""
                while True:
                    chunk = s.recv(4096)
                    if not chunk:
                        break
                    out += chunk
                return b"Mode:" in out
        except OSError:
            return False

    def stop(self):
        """SIGTERM to the server's pid and wait (bounded)."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.proc = None

    def client(self, timeout_s=10):
        """A started kazoo client (stopped at cleanup). It retries a lost
        connection every second at most: kazoo's own backoff grows to a
        minute, so after a ZooKeeper restart longer than a few seconds it
        came back only once the server had expired its session."""
        from kazoo.client import KazooClient
        c = KazooClient(hosts=self.connect, timeout=timeout_s,
                        connection_retry={"max_tries": -1, "delay": 0.1, "backoff": 1.5, "max_delay": 1.0})
        c.start(timeout=timeout_s)
        self._clients.append(c)
        return c

    def log_tail(self, max_lines=60):
        try:
            with open(self.log_path, errors="replace") as f:
                lines = f.read().splitlines()
        except OSError:
            lines = []
        return "\n".join(["--- zookeeper log %s ---" % self.log_path] + lines[-max_lines:]
                         + ["--- end of zookeeper log ---"])

    def __enter__(self):
        return self.start()

    def __exit__(self, exc_type, exc, tb):
        for c in self._clients:
            try:
                c.stop()
                c.close()
            except Exception:
                pass
        self.stop()
        if exc_type is not None:
            sys.stderr.write(self.log_tail() + "\n")
            sys.stderr.write("gregor-itest: kept %s\n" % self.tmp)
        elif os.environ.get("GREGOR_KEEP") != "1":
            shutil.rmtree(self.tmp, ignore_errors=True)
        return False


def cluster_broker(connect, broker_id, chroot="", start=True, **overrides):
    """One broker joining the cluster at zookeeper.connect=connect+chroot (started unless
    start=False); overrides use Kafka's names with '_' for '.' (zookeeper_session_timeout_ms=3000)."""
    ov = {"broker.id": str(broker_id), "zookeeper.connect": connect + chroot}
    ov.update({k.replace("_", "."): str(v) for k, v in overrides.items()})
    b = Broker(overrides=ov, name="%s-b%d" % (os.path.splitext(os.path.basename(sys.argv[0] or "test"))[0],
                                              broker_id), start=False)
    if start:
        b.start()
    return b


def cluster_brokers(connect, ids, chroot="", **overrides):
    """Starts one broker per id (each on its own free port and data dir)."""
    return [cluster_broker(connect, i, chroot, **overrides) for i in ids]


def with_metrics(ports):
    """A running_cluster setup: each broker gets a metrics listener on a free port, ports[id]."""
    def setup(broker_id, b):
        ports[broker_id] = free_port()
        b.overrides["metrics.listener"] = "http://127.0.0.1:%d" % ports[broker_id]
    return setup


def with_sasl(ports, mechanisms):
    """A running_cluster setup: each broker gets a SASL_PLAINTEXT listener on a free port,
    ports[id], beside its PLAINTEXT one, with these SCRAM/PLAIN mechanisms enabled and no
    failed-authentication delay."""
    def setup(broker_id, b):
        ports[broker_id] = free_port()
        b.overrides.update({
            "listeners": "PLAINTEXT://127.0.0.1:%d,SASL_PLAINTEXT://127.0.0.1:%d" % (b.port, ports[broker_id]),
            "sasl.enabled.mechanisms": mechanisms,
            "connection.failed.authentication.delay.ms": "0"})
    return setup


@contextlib.contextmanager
def running_cluster(ids=(1, 2, 3), chroot="", setup=None, **overrides):
    """ZooKeeper, a kazoo client of it and one started broker per id (cluster_broker's
    overrides; setup(id, broker), if given, may change a broker's overrides before it
    starts: with_metrics, with_sasl), once all are registered, a controller is elected and every broker's
    Metadata lists them all with the controller (a broker that registered last may not
    have heard of the others yet, and would assign a new topic over fewer brokers or
    refuse it): yields (zk, zc, brokers).
    On a clean exit every broker still running must stop with exit status 0; on any failure
    every broker's log is printed; their data dirs go either way."""
    with ZooKeeper() as zk, logs_on_failure([]) as brokers:
        zc = zk.client()
        for i in ids:
            brokers.append(cluster_broker(zk.connect, i, chroot, start=False, **overrides))
            if setup:
                setup(i, brokers[-1])
            brokers[-1].start()
        want = sorted(int(i) for i in ids)
        gregor.wait_until(lambda: zc.exists(chroot + "/controller") and
                          sorted(int(c) for c in zc.get_children(chroot + "/brokers/ids")) == want, 20,
                          "%d brokers registered and a controller" % len(want))
        wait_listed(brokers, controller=True)
        yield zk, zc, brokers
        for b in brokers:
            if b.alive():
                gregor.eq(b.stop(), 0, "exit status of %s" % b.bootstrap)


@contextlib.contextmanager
def logs_on_failure(brokers):
    """Yields brokers (a list the body may add to); if the body fails every broker's log is
    printed, and their data dirs go either way."""
    try:
        yield brokers
    except BaseException:
        for b in brokers:
            b.dump_log()
        raise
    finally:
        for b in brokers:
            b.cleanup(keep=False)


def cpu_seconds(pid):
    """User + system CPU time a process has used so far (from /proc)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_listed(brokers, timeout_s=20, controller=False):
    """Waits (bounded) until the Metadata of every broker in brokers lists all of them,
    so that a topic created next is assigned over every one; with controller=True also
    until each names a controller (librdkafka's AdminClient sends CreateTopics there and,
    given a Metadata without one, may wait longer than a test does)."""
    import kwire

    def listed(b):
        r = kwire.call(b.port, 3, 1, kwire.metadata_v1_body([]))
        md = kwire.parse_metadata_v1(r.d[r.p:])
        return len(md["brokers"]) == len(brokers) and (not controller or md["controller_id"] >= 0)
    gregor.wait_until(lambda: all(listed(b) for b in brokers), timeout_s,
                      "every broker's Metadata lists the %d brokers" % len(brokers))

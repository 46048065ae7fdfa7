"""Shared plumbing for Gregor's benchmarks (bench/compare, bench/partition-sweep).

Starts the real broker (build dir $BUILD, default build-perf) or librdkafka's
mock cluster (bench/mock-cluster.c, built here) as separate processes on free
loopback ports, runs the two perf-test tools against them and parses their
Kafka-format output. Benchmarks only: nothing here asserts on timings.

Only processes started here are ever signalled, by pid.
"""

import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("BUILD", "build-perf")
BIN = os.path.join(ROOT, BUILD, "bin")
PRODUCER = os.path.join(BIN, "gregor-producer-perf-test")
CONSUMER = os.path.join(BIN, "gregor-consumer-perf-test")
TOPICS = os.path.join(BIN, "gregor-topics")
GREGOR = os.environ.get("GREGOR_BIN") or os.path.join(BIN, "gregor")
MOCK = os.path.join(BIN, "mock-cluster")
CLK_TCK = os.sysconf("SC_CLK_TCK")


def log(msg):
    sys.stderr.write("[%s] %s\n" % (time.strftime("%H:%M:%S"), msg))
    sys.stderr.flush()


def build():
    """Builds the broker and both tools in $BUILD, and the mock cluster host.

    GREGOR_BIN=path measures that broker binary instead of $BUILD/bin/gregor.
    BENCH_NO_BUILD=1 uses the binaries already in $BUILD (e.g. to measure a
    fixed broker build while the tree is being edited); so does a failed
    build when they exist, with a warning."""
    targets = [os.path.join(BUILD, "bin", t) for t in
               ("gregor-producer-perf-test", "gregor-consumer-perf-test")]
    if not os.environ.get("GREGOR_BIN"):
        targets.append(os.path.join(BUILD, "bin", "gregor"))
    if os.environ.get("BENCH_NO_BUILD") != "1":
        p = subprocess.run(["make", "-s", "-C", ROOT, "BUILD=" + BUILD] + targets)
        subprocess.run(["make", "-s", "-C", ROOT, "BUILD=" + BUILD, os.path.join(BUILD, "bin", "gregor-topics")])
        if p.returncode != 0:
            if not all(os.path.exists(os.path.join(ROOT, t)) for t in targets):
                raise SystemExit("build failed")
            log("warning: build failed; measuring the binaries already in %s" % BUILD)
    src = os.path.join(ROOT, "bench", "mock-cluster.c")
    if not os.path.exists(MOCK) or os.path.getmtime(MOCK) < os.path.getmtime(src):
        subprocess.run(["cc", "-O2", "-Wall", "-Wextra", src, "-o", MOCK, "-lrdkafka", "-lpthread"],
                       check=True)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def machine():
    model = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return "%d x %s, %s" % (os.cpu_count(), model, os.uname().release)


def warm_page_cache(size_mb=None):
    """Writes and deletes a scratch file once, so that the guest memory the
    page cache will use has been touched before anything is timed.

    On a VM, the first write into never-touched guest memory costs a
    hypervisor fault per page (measured here: dd to a new file 350-550 MB/s
    cold, 5 GB/s once memory has been recycled). The mock cluster never pays
    it (its 5 MiB per partition are reused heap), so timing Gregor on cold
    memory would measure the hypervisor. BENCH_WARM_MB (default: 40 % of
    MemAvailable, at most 12 GiB) sets the size; 0 skips it."""
    if size_mb is None:
        size_mb = os.environ.get("BENCH_WARM_MB")
    if size_mb is None:
        with open("/proc/meminfo") as f:
            avail_kb = next(int(l.split()[1]) for l in f if l.startswith("MemAvailable"))
        size_mb = min(12288, int(avail_kb * 0.4 / 1024))
    size_mb = int(size_mb)
    if size_mb <= 0:
        return
    tmp = tempfile.mkdtemp(prefix="gregor-bench-warm-")
    path = os.path.join(tmp, "warm")
    t0 = time.monotonic()
    chunk = b"\0" * (1 << 20)
    with open(path, "wb") as f:
        for _ in range(size_mb):
            f.write(chunk)
    shutil.rmtree(tmp, ignore_errors=True)
    log("warmed %d MiB of page cache in %.1f s" % (size_mb, time.monotonic() - t0))


class PageCacheFloor:
    """Fills the free guest memory with a clean file kept until close(), so
    that what the brokers write next reuses warm page-cache pages.

    warm_page_cache() touches memory once, but this VM hands freed memory
    back to its host (virtio-balloon free page reporting): a run that writes
    gigabytes of new log meets cold pages again, at ~320 MB/s of first
    touches (dd here: 310-320 MB/s cold, 3.8 GB/s warm). With the free
    memory held by a clean file, the kernel reclaims that file's pages for
    the new log instead, as on a server whose memory is all page cache.
    BENCH_FLOOR_LEAVE_MB (default 1024) is left free; the file is no larger
    than the data disk's free space less 8 GiB; BENCH_FLOOR=0 skips it."""

    def __init__(self):
        self.tmp = None
        if os.environ.get("BENCH_FLOOR") == "0":
            return
        with open("/proc/meminfo") as f:
            free_kb = next(int(l.split()[1]) for l in f if l.startswith("MemFree"))
        leave = int(os.environ.get("BENCH_FLOOR_LEAVE_MB", "1024"))
        self.tmp = tempfile.mkdtemp(prefix="gregor-bench-floor-")
        st = os.statvfs(self.tmp)
        disk_mb = st.f_bavail * st.f_frsize // (1 << 20) - 8192
        size_mb = min(free_kb // 1024 - leave, disk_mb)
        if size_mb <= 0:
            return
        t0 = time.monotonic()
        chunk = b"\0" * (1 << 20)
        with open(os.path.join(self.tmp, "floor"), "wb") as f:
            for _ in range(size_mb):
                f.write(chunk)
            f.flush()
            os.fsync(f.fileno())
        log("page-cache floor: %d MiB held in %.1f s" % (size_mb, time.monotonic() - t0))

    def close(self):
        if self.tmp:
            shutil.rmtree(self.tmp, ignore_errors=True)
            self.tmp = None


def cpu_seconds(pid):
    """utime + stime of a process (all its threads) in seconds, from /proc."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


class Gregor:
    """The real broker on a free port with a temp data dir."""
    name = "gregor"

    def __init__(self, partitions=1, props=None, env=None, data_dir=None, start_timeout_s=10):
        """data_dir: an existing data dir to start on (kept by stop()); default a fresh one in the temp dir."""
        self.tmp = tempfile.mkdtemp(prefix="gregor-bench-")
        self.port = free_port()
        self.bootstrap = "127.0.0.1:%d" % self.port
        data = data_dir or os.path.join(self.tmp, "data")
        os.makedirs(data, exist_ok=True)
        self.data_dir, self.log_path = data, os.path.join(self.tmp, "broker.log")
        with open(os.path.join(self.tmp, "server.properties"), "w") as f:
            f.write("listeners=PLAINTEXT://%s\nlog.dirs=%s\nnum.partitions=%d\n"
                    % (self.bootstrap, data, partitions))
            for k, v in (props or {}).items():
                f.write("%s=%s\n" % (k, v))
        self.logf = open(self.log_path, "w")
        self.t_spawn = time.monotonic()
        self.proc = subprocess.Popen([GREGOR, os.path.join(self.tmp, "server.properties")],
                                     stdout=self.logf, stderr=subprocess.STDOUT, cwd=self.tmp,
                                     env=dict(os.environ, **env) if env else None)
        deadline = time.monotonic() + start_timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("gregor exited during start-up; see %s/broker.log" % self.tmp)
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.01)
        raise RuntimeError("gregor did not start")

    @property
    def pid(self):
        return self.proc.pid

    def create_topic(self, topic, partitions):
        """Creates the topic before anything is timed, as Kafka's recipe does
        (kafka-topics.sh --create, then the perf test): with gregor-topics,
        or else by auto-creating it with one 1-byte record."""
        if os.path.exists(TOPICS):
            p = subprocess.run([TOPICS, "--bootstrap-server", self.bootstrap, "--create", "--topic", topic,
                                "--partitions", str(partitions)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            if p.returncode == 0:
                return 0
            log("gregor-topics failed (%s); auto-creating %s" % (p.stderr.decode().strip(), topic))
        produce(self.bootstrap, topic, 1, 1)
        return 1

    def stop(self):
        """Stops the broker; self.sync_stats then holds its shutdown line's group-commit figures (or None)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.logf.close()
        self.sync_stats = sync_stats(self.log_path)
        shutil.rmtree(self.tmp, ignore_errors=True)


SYNC_RE = re.compile(r"sync rounds: (\d+), partitions synced (\d+) \(at most (\d+) in a round\), ([\d.]+) ms syncing, "
                     r"(\d+) answers waited for a round \([\d.]+ per round, ([\d.]+) us on average\)")


WAKE_RE = re.compile(r"wake-ups: syncer ([\d.]+) us, loop ([\d.]+) us on average")


def wake_stats(line):
    """The shutdown line's mean wake-ups: the syncer thread after the loop's kick, the loop after a round."""
    m = WAKE_RE.search(line)
    return {"syncer_wake_us": float(m.group(1)), "loop_wake_us": float(m.group(2))} if m else {}


def sync_stats(log_path):
    """The broker's shutdown line on group commit (server.c): rounds, partition syncs, ms syncing, answers
    and their mean wait for a round."""
    try:
        with open(log_path) as f:
            for line in f:
                m = SYNC_RE.search(line)
                if m:
                    return {"rounds": int(m.group(1)), "part_syncs": int(m.group(2)), "max_parts": int(m.group(3)),
                            "sync_ms": float(m.group(4)), "answers": int(m.group(5)),
                            "wait_us": float(m.group(6))} | wake_stats(line)
    except OSError:
        pass
    return None


class Mock:
    """librdkafka's in-memory mock cluster in its own process (bench/mock-cluster.c)."""
    name = "mock"

    def __init__(self, topics=()):
        args = [MOCK]
        for t, p in topics:
            args += ["--topic", "%s:%d" % (t, p)]
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.bootstrap = self.proc.stdout.readline().decode().strip()
        if not self.bootstrap:
            raise RuntimeError("mock-cluster printed no bootstrap address")

    @property
    def pid(self):
        return self.proc.pid

    def stop(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


PROD_RE = re.compile(r"^(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, "
                     r"([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99.9th\.$")


def produce(bootstrap, topic, records, size, acks="1", idempotence=False, throughput=-1, extra=()):
    """Runs the producer tool; returns a dict of its final line, or raises with its stderr."""
    props = ["bootstrap.servers=" + bootstrap, "acks=" + acks]
    if idempotence:
        props.append("enable.idempotence=true")
    props += list(extra)
    cmd = [PRODUCER, "--topic", topic, "--num-records", str(records), "--record-size", str(size),
           "--throughput", str(throughput), "--producer-props"] + props
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
    out = p.stdout.decode()
    if p.returncode != 0:
        raise RuntimeError("producer exit %d: %s" % (p.returncode, p.stderr.decode().strip()))
    for line in out.splitlines():
        m = PROD_RE.match(line.strip())
        if m:
            return {"records": int(m.group(1)), "rps": float(m.group(2)), "mbps": float(m.group(3)),
                    "avg_ms": float(m.group(4)), "max_ms": float(m.group(5)), "p50": int(m.group(6)),
                    "p95": int(m.group(7)), "p99": int(m.group(8)), "p999": int(m.group(9))}
    raise RuntimeError("no final line in producer output:\n" + out)


def consume(bootstrap, topic, messages, timeout_ms=10000, assign=True, extra=()):
    """Runs the consumer tool (extra: more of its arguments); returns a dict of its data row."""
    cmd = [CONSUMER, "--bootstrap-server", bootstrap, "--topic", topic, "--messages", str(messages),
           "--timeout", str(timeout_ms), "--hide-header"] + list(extra)
    if assign:
        cmd.append("--assign")
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
    if p.returncode != 0:
        raise RuntimeError("consumer exit %d: %s" % (p.returncode, p.stderr.decode().strip()))
    lines = [l for l in p.stdout.decode().splitlines() if l and not l.startswith("WARNING")]
    f = [x.strip() for x in lines[-1].split(",")]
    return {"mb": float(f[2]), "mbps": float(f[3]), "msgs": int(f[4]), "rebalance_ms": int(f[6]),
            "fetch_ms": int(f[7]), "fetch_mbps": float(f[8]), "fetch_nmsgps": float(f[9]),
            "complete": int(f[4]) >= messages}


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None

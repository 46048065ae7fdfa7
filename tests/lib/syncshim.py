"""Control of the LD_PRELOAD shim (tests/lib/syncshim.c) of the durability and crash-safety tests.

    shim = SyncShim()                        # builds $BUILD/lib/syncshim.so if needed
    with Broker(env=shim.env()) as b:
        shim.hold(".log")  # syncs of .log files wait ...
        shim.release()   # ... until this
        shim.fail_next(".log")   # the next sync of a path containing ".log" fails with EIO
        b.kill9()
        shim.power_cut(b.data_dir)   # every log/txnindex file back to its last synced length

    shim = SyncShim(trace="/tmp/x/trace.log")   # also log every create/fsync/rename/mkdir/unlink
    b.env.update(shim.env())
    b.env[STOP] = "rename:/t-0."   # SIGSTOP right after the first matching call (then kill9)
    b.env[FAIL_ALWAYS] = "/t-0/"   # every fsync/fdatasync of a matching path fails with EIO

A SIGKILL keeps the page cache; power_cut() is what a power loss would have
left: each file as long as it was when a sync of it last succeeded (0 when
it never was). Only .log and .txnindex files are cut: .index/.timeindex are
preallocated (their length says nothing) and are checked and rebuilt by the
broker's recovery anyway.
"""

import atexit
import os
import shutil
import subprocess
import tempfile

from gregor import REPO_ROOT

CUT_EXTS = (".log", ".txnindex")
STOP = "GREGOR_SYNCSHIM_STOP"         # "<op>:<substring>": stop the broker right after that call
FAIL_ALWAYS = "GREGOR_SYNCSHIM_FAIL"  # "<substring>": every sync of a matching path fails


def shim_lib():
    """Absolute path of syncshim.so, built by make if missing."""
    build = os.environ.get("BUILD", "build")
    if not os.path.isabs(build):
        build = os.path.join(REPO_ROOT, build)
    path = os.path.join(build, "lib", "syncshim.so")
    if not os.path.exists(path):
        subprocess.run(["make", "-s", "-C", REPO_ROOT, "BUILD=" + os.environ.get("BUILD", "build"),
                        os.path.join(os.environ.get("BUILD", "build"), "lib", "syncshim.so")], check=True)
    return path


class SyncShim:
    def __init__(self, trace=None):
        """trace: a file to log the broker's file system calls to (None: no log)."""
        self.dir = tempfile.mkdtemp(prefix="gregor-syncshim-")
        atexit.register(shutil.rmtree, self.dir, True)
        self.lib = shim_lib()
        self.trace_path = trace

    def env(self):
        """Environment for the broker process (Broker(env=...))."""
        env = {
            "LD_PRELOAD": self.lib,
            "GREGOR_SYNCSHIM_DIR": self.dir,
            # an ASan broker otherwise refuses a preloaded library before its runtime
            "ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0",
        }
        if self.trace_path:
            env["GREGOR_SYNCSHIM_TRACE"] = self.trace_path
        return env

    def trace_text(self):
        """The trace so far ("" when none)."""
        try:
            with open(self.trace_path) as f:
                return f.read()
        except (FileNotFoundError, TypeError):
            return ""

    def _path(self, name):
        return os.path.join(self.dir, name)

    def hold(self, match=""):
        """Syncs of files whose path contains match (default: any) wait until release()."""
        with open(self._path("hold"), "w") as f:
            f.write(match)

    def release(self):
        try:
            os.unlink(self._path("hold"))
        except FileNotFoundError:
            pass

    def hold_syncfs(self, match=""):
        """syncfs calls (on a path containing match) wait until release_syncfs()."""
        with open(self._path("hold-syncfs"), "w") as f:
            f.write(match)

    def release_syncfs(self):
        try:
            os.unlink(self._path("hold-syncfs"))
        except FileNotFoundError:
            pass

    def fail_next_syncfs(self, match=""):
        """The next syncfs (on a path containing match) fails with EIO."""
        with open(self._path("fail-syncfs"), "w") as f:
            f.write(match)

    def fail_next(self, match=""):
        with open(self._path("fail"), "w") as f:
            f.write(match)

    def fail_pending(self):
        """True while the armed failure has not happened yet."""
        return os.path.exists(self._path("fail"))

    def journal(self):
        """[(size, path)] of every successful sync of a regular file, in order."""
        try:
            with open(self._path("journal")) as f:
                lines = f.read().splitlines()
        except FileNotFoundError:
            return []
        out = []
        for line in lines:
            size, _, path = line.partition("\t")
            if path:
                out.append((int(size), path))
        return out

    def synced_sizes(self):
        """{path: length covered by its last successful sync}."""
        return {path: size for size, path in self.journal()}

    def sync_count(self, suffix):
        """Successful syncs of files whose path ends with suffix."""
        return sum(1 for _, path in self.journal() if path.endswith(suffix))

    def power_cut(self, data_dir):
        """Cuts every .log/.txnindex under data_dir back to its last synced length.

        Returns {path: bytes cut} for the files that lost something. Call it
        only after the broker is dead (kill9)."""
        synced = self.synced_sizes()
        cut = {}
        for root, _dirs, files in os.walk(data_dir):
            for name in files:
                if not name.endswith(CUT_EXTS):
                    continue
                path = os.path.join(root, name)
                size = os.path.getsize(path)
                keep = min(synced.get(os.path.realpath(path), 0), size)
                if keep < size:
                    os.truncate(path, keep)
                    cut[path] = size - keep
        return cut


def log_batches(path):
    """(position, base offset, size) of each batch of a .log file, up to the first header of zeros (the
    unwritten part of a preallocated file) or the end; and the file's length."""
    import struct
    with open(path, "rb") as f:
        data = f.read()
    out, pos = [], 0
    while pos + 12 <= len(data):
        base, length = struct.unpack(">qi", data[pos:pos + 12])
        if length <= 0:
            break
        out.append((pos, base, 12 + length))
        pos += 12 + length
    return out, len(data)


def read_values(bootstrap, topic, partition=0, isolation="read_uncommitted", idle_s=2.0, timeout_s=30):
    """Every value a consumer reads from the start of topic-partition.

    Stops once nothing new arrived for idle_s (bounded by timeout_s)."""
    import time
    from confluent_kafka import Consumer, TopicPartition, OFFSET_BEGINNING

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "itest-syncshim-%d" % os.getpid(),
                  "enable.auto.commit": False, "isolation.level": isolation,
                  "check.crcs": True, "fetch.wait.max.ms": 100})
    out = []
    try:
        c.assign([TopicPartition(topic, partition, OFFSET_BEGINNING)])
        deadline = time.monotonic() + timeout_s
        last = time.monotonic()
        while time.monotonic() - last < idle_s and time.monotonic() < deadline:
            m = c.poll(0.1)
            if m is None or m.error():
                continue
            out.append(m.value())
            last = time.monotonic()
    finally:
        c.close()
    return out

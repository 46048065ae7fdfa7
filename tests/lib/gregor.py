"""Integration-test harness for Gregor: start the real broker binary, talk to it.

Every integration test in tests/integration/ that is written in Python imports
this module (tests/integration/run.sh puts tests/lib on PYTHONPATH; a test run
by hand adds it itself, see tests/README.md).

    from gregor import Broker, eq, main

    def test():
        with Broker(overrides={"num.partitions": "3"}) as b:
            ... use b.bootstrap ("127.0.0.1:PORT") with any Kafka client ...
            b.restart()        # SIGTERM, wait, start again on the same port + data dir
            b.kill9()          # SIGKILL, no clean shutdown; then b.start()

    main(test)

Shape and rules:
  * Each Broker gets its own free loopback port and its own temp data dir, so
    tests never share state and may run concurrently.
  * Only the pid this object started is ever signalled (never a name match).
    The broker also gets PR_SET_PDEATHSIG=SIGKILL so it dies with the test
    process even if the test is killed -9 by the runner's timeout.
  * The broker's stderr goes to <tmp>/broker.log (appended across restarts,
    with a marker line per start). When the test fails, main() / __exit__
    print that log so the failure report shows both sides.
  * Every wait is bounded; nothing here loops forever.

Environment:
  GREGOR_BIN   broker binary (default $BUILD/bin/gregor under the repo root)
  BUILD        build directory (default "build")
  GREGOR_KEEP  "1" keeps temp dirs even when the test passes
"""

import atexit
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

START_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 10.0

_live_brokers = []      # brokers whose process may still be running (for atexit)
_failed = False         # set by main() / __exit__ when the test failed


def broker_bin():
    """Absolute path of the broker binary the tests run."""
    path = os.environ.get("GREGOR_BIN")
    if not path:
        path = os.path.join(os.environ.get("BUILD", "build"), "bin", "gregor")
    if not os.path.isabs(path):
        path = os.path.join(REPO_ROOT, path)
    return path


def build_bin(*parts):
    """Absolute path of a built program, e.g. build_bin("itest", "3002-idem-proxy");
    fails the test if it is missing."""
    build = os.environ.get("BUILD", "build")
    path = os.path.join(build if os.path.isabs(build) else os.path.join(REPO_ROOT, build), "bin", *parts)
    if not os.access(path, os.X_OK):
        raise AssertionError("%s missing (make %s)" % (path, path))
    return path


def free_port():
    """A loopback TCP port that was free a moment ago (bind to 0, read, close)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
    finally:
        s.close()


def port_accepts(port, timeout_s=0.2):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout_s):
            return True
    except OSError:
        return False


def _set_pdeathsig():
    """preexec_fn: SIGKILL the broker if the test process dies."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except Exception:
        pass


class BrokerError(Exception):
    pass


class Broker:
    """One real broker process on a free port with its own temp data dir.

    props:      extra server.properties entries (Kafka config names) written to the file
    overrides:  entries passed as `--override key=value` on the command line
    port:       fixed port (default: a free one)
    data_dir:   existing data dir to reuse (default: <tmp>/data, fresh)
    start:      start the process in __enter__ (default True)
    env:        extra environment variables for the broker process
    """

    def __init__(self, props=None, overrides=None, port=None, data_dir=None,
                 name=None, start=True, start_timeout_s=START_TIMEOUT_S, env=None):
        self.name = name or os.path.splitext(os.path.basename(sys.argv[0] or "test"))[0]
        self.tmp = tempfile.mkdtemp(prefix="gregor-itest-%s-" % self.name)
        self.port = port or free_port()
        self.host = "127.0.0.1"
        self.bootstrap = "%s:%d" % (self.host, self.port)
        self.data_dir = data_dir or os.path.join(self.tmp, "data")
        os.makedirs(self.data_dir, exist_ok=True)
        self.props = dict(props or {})
        self.overrides = dict(overrides or {})
        self.env = dict(env or {})
        self.log_path = os.path.join(self.tmp, "broker.log")
        self.props_path = os.path.join(self.tmp, "server.properties")
        self.start_timeout_s = start_timeout_s
        self.proc = None
        self.starts = 0
        self.last_returncode = None
        self._autostart = start
        self._write_props()

    # -- configuration ----------------------------------------------------

    def _write_props(self):
        lines = [
            "# written by tests/lib/gregor.py",
            "listeners=PLAINTEXT://%s" % self.bootstrap,
            "log.dirs=%s" % self.data_dir,
        ]
        for k, v in self.props.items():
            lines.append("%s=%s" % (k, v))
        with open(self.props_path, "w") as f:
            f.write("\n".join(lines) + "\n")

    def command(self):
        cmd = [broker_bin(), self.props_path]
        for k, v in self.overrides.items():
            cmd += ["--override", "%s=%s" % (k, v)]
        return cmd

    # -- lifecycle ----------------------------------------------------------

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def start(self):
        """Start the process and wait (bounded) until the port accepts connections."""
        if self.alive():
            raise BrokerError("broker already running (pid %d)" % self.proc.pid)
        exe = broker_bin()
        if not os.access(exe, os.X_OK):
            raise BrokerError("broker binary %s missing or not executable "
                              "(run `make build/bin/gregor` or set GREGOR_BIN)" % exe)
        self.starts += 1
        with open(self.log_path, "a") as log:
            log.write("=== gregor-itest: start #%d: %s\n" % (self.starts, " ".join(self.command())))
            log.flush()
            self.proc = subprocess.Popen(self.command(), stdin=subprocess.DEVNULL,
                                         stdout=log, stderr=log, cwd=self.tmp,
                                         env=dict(os.environ, **self.env) if self.env else None,
                                         preexec_fn=_set_pdeathsig)
        if self not in _live_brokers:
            _live_brokers.append(self)
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            rc = self.proc.poll()
            if rc is not None:
                self.last_returncode = rc
                raise BrokerError("broker exited with status %d during start-up\n%s"
                                  % (rc, self.log_tail()))
            if port_accepts(self.port):
                return self
            time.sleep(0.05)
        raise BrokerError("broker did not accept connections on %s within %.0fs\n%s"
                          % (self.bootstrap, self.start_timeout_s, self.log_tail()))

    def stop(self, timeout_s=STOP_TIMEOUT_S):
        """SIGTERM and wait (bounded). Returns the exit status.

        Raises BrokerError if the broker does not exit in time (it is then
        SIGKILLed so nothing leaks) - a clean shutdown that hangs is a bug."""
        if self.proc is None:
            return self.last_returncode
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
                self.last_returncode = self.proc.returncode
                self.proc = None
                raise BrokerError("broker did not exit within %.0fs of SIGTERM (killed)" % timeout_s)
        self.last_returncode = self.proc.returncode
        self.proc = None
        self._note("stopped, exit status %d" % self.last_returncode)
        return self.last_returncode

    def kill9(self):
        """SIGKILL the broker (simulated crash) and reap it."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)
        self.last_returncode = self.proc.returncode
        self.proc = None
        self._note("killed with SIGKILL")
        return self.last_returncode

    def restart(self):
        """Clean stop (SIGTERM) then start again on the same port and data dir."""
        rc = self.stop()
        if rc not in (0, None):
            raise BrokerError("broker exited with status %d on SIGTERM\n%s" % (rc, self.log_tail()))
        return self.start()

    def cleanup(self, keep=False):
        if self.alive():
            self.kill9()
        if self in _live_brokers:
            _live_brokers.remove(self)
        if keep or os.environ.get("GREGOR_KEEP") == "1":
            sys.stderr.write("gregor-itest: kept %s\n" % self.tmp)
        else:
            shutil.rmtree(self.tmp, ignore_errors=True)

    # -- logs -------------------------------------------------------------

    def _note(self, what):
        try:
            with open(self.log_path, "a") as log:
                log.write("=== gregor-itest: %s\n" % what)
        except OSError:
            pass

    def log_text(self):
        try:
            with open(self.log_path, "r", errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def log_tail(self, max_lines=200):
        lines = self.log_text().splitlines()
        head = "--- broker log %s (last %d of %d lines) ---" % (self.log_path, min(max_lines, len(lines)), len(lines))
        return "\n".join([head] + lines[-max_lines:] + ["--- end of broker log ---"])

    def dump_log(self, out=None):
        (out or sys.stderr).write(self.log_tail() + "\n")

    def wait_log(self, needle, timeout_s=10.0, since=0):
        """Wait until the broker log (from char offset `since`) contains needle; returns the line."""
        deadline = time.monotonic() + timeout_s
        while True:
            text = self.log_text()[since:]
            for line in text.splitlines():
                if needle in line:
                    return line
            if time.monotonic() >= deadline:
                raise AssertionError("broker log has no line containing %r after %.0fs\n%s"
                                     % (needle, timeout_s, self.log_tail()))
            time.sleep(0.1)

    def log_size(self):
        return len(self.log_text())

    def partition_dir(self, topic, partition=0):
        return os.path.join(self.data_dir, "%s-%d" % (topic, partition))

    # -- context manager --------------------------------------------------

    def __enter__(self):
        if self._autostart:
            try:
                self.start()
            except BaseException:
                self.dump_log()
                self.cleanup(keep=True)
                raise
        return self

    def __exit__(self, exc_type, exc, tb):
        global _failed
        failed = exc_type is not None
        if failed:
            _failed = True
        stop_error = None
        if self.alive():
            try:
                rc = self.stop()
                if rc != 0 and not failed:
                    stop_error = BrokerError("broker exit status %d after SIGTERM (want 0)" % rc)
            except BrokerError as e:
                stop_error = e
        if failed or stop_error:
            self.dump_log()
        self.cleanup(keep=failed or stop_error is not None)
        if stop_error and not failed:
            _failed = True
            raise stop_error
        return False


@atexit.register
def _kill_leftovers():
    for b in list(_live_brokers):
        if b.alive():
            sys.stderr.write("gregor-itest: killing leftover broker pid %d\n" % b.pid)
            if _failed:
                b.dump_log()
            b.cleanup(keep=_failed)


def _on_sigterm(signum, frame):
    # The runner's timeout sends SIGTERM: turn it into an exception so that
    # context managers and atexit run and the broker log gets printed.
    raise SystemExit("gregor-itest: got signal %d (timeout?)" % signum)


# -- assertions: exact values, with both sides in the message --------------

def eq(got, want, what="value"):
    if got != want:
        g, w = repr(got), repr(want)
        if len(g) > 400:
            g = g[:400] + "...(%d chars)" % len(g)
        if len(w) > 400:
            w = w[:400] + "...(%d chars)" % len(w)
        raise AssertionError("%s: got %s, want %s" % (what, g, w))


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def wait_until(pred, timeout_s, what, interval_s=0.1):
    """Poll pred() until truthy (returns its value) or fail after timeout_s."""
    deadline = time.monotonic() + timeout_s
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() >= deadline:
            raise AssertionError("timed out after %.0fs waiting for %s" % (timeout_s, what))
        time.sleep(interval_s)


def poll_until(members, pred, what, timeout_s=30):
    """Calls poll() on each of members (group consumers, which must keep
    polling to stay in their group) until pred() is true; fails after
    timeout_s."""
    deadline = time.monotonic() + timeout_s
    while not pred():
        check(time.monotonic() < deadline, "timed out waiting for " + what)
        for m in members:
            m.poll()


def run(cmd, timeout_s=60, input_bytes=None, check_rc=True):
    """Run a client command (e.g. kcat); returns CompletedProcess with bytes stdout/stderr."""
    p = subprocess.run(cmd, input=input_bytes, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=timeout_s)
    if check_rc and p.returncode != 0:
        raise AssertionError("%s exited %d\nstderr:\n%s" % (" ".join(cmd), p.returncode,
                                                             p.stderr.decode(errors="replace")[-4000:]))
    return p


def log(msg):
    sys.stdout.write("[%s] %s\n" % (time.strftime("%H:%M:%S"), msg))
    sys.stdout.flush()


def main(test_fn):
    """Run test_fn() as the whole test: exit 0 on success, 1 with a traceback on failure."""
    global _failed
    signal.signal(signal.SIGTERM, _on_sigterm)
    t0 = time.monotonic()
    try:
        test_fn()
    except BaseException as e:
        if isinstance(e, SystemExit) and e.code in (0, None):
            _finish(0)
        _failed = True
        traceback.print_exc()
        sys.stderr.write("FAILED after %.1fs\n" % (time.monotonic() - t0))
        _finish(1)
    log("ok (%.1fs)" % (time.monotonic() - t0))
    _finish(0)


def _finish(rc):
    # os._exit: client libraries with background threads (librdkafka) can
    # hang in interpreter shutdown; every broker is already cleaned up.
    _kill_leftovers()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(rc)

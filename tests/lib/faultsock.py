"""Fault commands for gregor-verify-eos that ask the test process to act.

gregor-verify-eos runs its --fault-cmd and --restore-cmd with /bin/sh, but the
brokers are the test's children (the harness kills and restarts them by pid),
so those commands cannot touch them.  Instead the test serves a unix socket
while the tool runs, and the commands talk to it:

    from faultsock import FaultServer

    def act(words):                    # ["kill", "txn-coordinator"] -> one answer line
        ...
        return "killed broker 2 (txn-coordinator)"

    with FaultServer(act) as fs:
        cmd = fs.command("kill", "txn-coordinator")  # a shell command line for --fault-cmd
        rc, out, err = fs.run([tool, ..., "--fault-cmd", cmd], timeout_s=240)
        fs.requests                                  # [(words, answer)]

run() serves the requests in the calling thread (the test's main thread)
until the tool exits: a broker the handler starts is then a child of that
thread, and the harness's PR_SET_PDEATHSIG (which fires when the thread that
forked it ends) does not kill it after the tool is done.  The tool's stdout
is echoed as it comes.

Run as a program, this file is that command:

    /usr/bin/python3 tests/lib/faultsock.py SOCKET WORD...

It sends the words as one line, prints the answer and exits 0 if the handler
returned (the answer is printed as "ok: <answer>"), 1 if it raised (the
answer is "error: <exception>") or no answer came within ANSWER_TIMEOUT_S.
"""

import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time

ANSWER_TIMEOUT_S = 150.0


class FaultServer:
    def __init__(self, handler):
        self.handler = handler
        self.requests = []
        self.dir = tempfile.mkdtemp(prefix="gregor-faultsock-")
        self.path = os.path.join(self.dir, "s")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(self.path)
        self.sock.listen(4)
        self.sock.settimeout(0.1)

    def command(self, *words):
        """The shell command line that sends words to this server."""
        return " ".join(shlex.quote(w) for w in [sys.executable, os.path.abspath(__file__), self.path] + list(words))

    def _answer(self, words):
        try:
            return "ok: %s" % self.handler(words)
        except Exception as e:  # the command reports it; the test checks the exit status
            return "error: %s" % e

    def _serve_one(self):
        """Answers one request if one comes within the socket's timeout."""
        try:
            conn, _ = self.sock.accept()
        except socket.timeout:
            return
        with conn:
            conn.settimeout(10)
            try:
                words = conn.makefile("r").readline().split()
            except OSError:
                return
            answer = self._answer(words)
            self.requests.append((words, answer))
            try:
                conn.sendall((answer + "\n").encode())
            except OSError:
                pass

    def run(self, argv, timeout_s):
        """Runs argv to its end (killed after timeout_s), answering requests meanwhile.
        Returns (exit status, stdout text, stderr text); stdout is echoed as it comes."""
        out_path, err_path = os.path.join(self.dir, "out"), os.path.join(self.dir, "err")
        with open(out_path, "wb") as out, open(err_path, "wb") as err, open(out_path, "rb") as reader:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
            deadline = time.monotonic() + timeout_s
            while proc.poll() is None and time.monotonic() < deadline:
                self._serve_one()
                self._echo(reader)
            if proc.poll() is None:
                proc.kill()
            proc.wait(10)
            self._echo(reader)
        with open(out_path, "rb") as out, open(err_path, "rb") as err:
            return proc.returncode, out.read().decode(errors="replace"), err.read().decode(errors="replace")

    @staticmethod
    def _echo(reader):
        data = reader.read()
        if data:
            sys.stdout.write(data.decode(errors="replace"))
            sys.stdout.flush()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.sock.close()
        shutil.rmtree(self.dir, ignore_errors=True)
        return False


def _client(path, words):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(ANSWER_TIMEOUT_S)
    try:
        s.connect(path)
        s.sendall((" ".join(words) + "\n").encode())
        answer = s.makefile("r").readline().strip()
    except OSError as e:
        answer = "error: no answer from %s: %s" % (path, e)
    print(answer)
    return 0 if answer.startswith("ok") else 1


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.stderr.write("usage: faultsock.py SOCKET WORD...\n")
        sys.exit(2)
    sys.exit(_client(sys.argv[1], sys.argv[2:]))

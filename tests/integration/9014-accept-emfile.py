#!/usr/bin/python3
# itest: alone (it samples the broker's CPU time under its own load only)
"""9014: accept(2) at the file-descriptor limit backs off instead of spinning.

The broker's RLIMIT_NOFILE is lowered (prlimit) to what it holds open plus
LIMIT_SPARE; then clients open far more connections than that.  The
pending ones wait in the listen backlog while accept fails with EMFILE.
Checks:
  - the broker logs the condition once (`cannot accept connections`);
  - over SAMPLE_S seconds at the limit its CPU time (utime + stime from
    /proc) stays under CPU_MAX_S: generous, a spinning accept loop burns
    about one CPU second per second (the old broker did);
  - once the clients close their connections, a new client is served
    (ApiVersions, Metadata) and the log says `accepting connections again`;
  - SIGTERM exits 0.
"""
import os
import resource
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import kwire as kw  # noqa: E402
from gregor import Broker, check, eq, log, main, wait_until  # noqa: E402

LIMIT_SPARE = 16
CLIENTS = 64
SAMPLE_S = 2.0
CPU_MAX_S = 0.5


def cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def served(port):
    s = kw.connect(port, timeout_s=5)
    try:
        s.sendall(kw.request(18, 0, 1, kw.api_versions_v0_body()))
        eq(kw.recv_response(s)[0], 1, "ApiVersions answered")
        s.sendall(kw.request(3, 1, 2, kw.metadata_v1_body([])))
        eq(kw.recv_response(s)[0], 2, "Metadata answered")
    finally:
        s.close()


def test():
    with Broker(props={"socket.listen.backlog.size": 512}) as b:
        served(b.port)
        nfd = len(os.listdir("/proc/%d/fd" % b.pid))
        limit = nfd + LIMIT_SPARE
        resource.prlimit(b.pid, resource.RLIMIT_NOFILE, (limit, limit))
        log("broker holds %d descriptors; limit set to %d" % (nfd, limit))
        socks = []
        for _ in range(CLIENTS):
            s = socket.create_connection(("127.0.0.1", b.port), timeout=5)
            s.sendall(kw.request(18, 0, 1, kw.api_versions_v0_body()))
            socks.append(s)
        wait_until(lambda: len(os.listdir("/proc/%d/fd" % b.pid)) >= limit, 10, "the broker at its fd limit")
        time.sleep(0.2)
        c0, t0 = cpu_s(b.pid), time.monotonic()
        time.sleep(SAMPLE_S)
        used, wall = cpu_s(b.pid) - c0, time.monotonic() - t0
        log("at the fd limit: %.2f CPU seconds in %.1f s" % (used, wall))
        check(used < CPU_MAX_S, "broker CPU at the fd limit: %.2f s in %.1f s (bound %.1f)" % (used, wall, CPU_MAX_S))
        eq(b.log_text().count("cannot accept connections"), 1, "the EMFILE condition logged once")
        for s in socks:
            s.close()
        wait_until(lambda: "accepting connections again" in b.log_text(), 10, "accepting again")
        served(b.port)
        eq(b.stop(), 0, "exit status on SIGTERM")


if __name__ == "__main__":
    main(test)

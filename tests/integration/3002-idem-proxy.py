"""Idempotent librdkafka producer through the fault-injection proxy.

The proxy (tests/lib/faultproxy.py) drops Produce responses after the broker
appended (closing the connection) and cuts Produce requests mid-frame.

A. enable.idempotence=true, acks=all, max.in.flight=5: IDEM_COUNT numbered
   messages (default 100000, the issue's count; IDEM_COUNT overrides) to 6
   partitions; reading back gives every number exactly once, in order per
   partition, although the proxy dropped and cut many requests.
B. The same without idempotence (fewer messages, more responses dropped)
   shows duplicates: the proxy really bites.
"""

import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, check, free_port, log, main, build_bin  # noqa: E402
from faultproxy import FaultProxy  # noqa: E402

PARTS = 6
COUNT = int(os.environ.get("IDEM_COUNT", "100000"))
PLAIN_COUNT = 6000


def itest_bin():
    return build_bin("itest", "3002-idem-proxy")


def run(args, timeout_s=170):
    p = subprocess.run([itest_bin()] + [str(a) for a in args], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=timeout_s)
    out = p.stdout.decode(errors="replace")
    sys.stdout.write(out)
    return p.returncode, out


def counts(out):
    line = [ln for ln in out.splitlines() if ln.startswith("verify ")][-1]
    return {k: int(v) for k, v in (kv.split("=") for kv in line.split(": ", 1)[1].split())}


def test():
    port = free_port()
    with FaultProxy(port, drop_response_p=0.05, cut_request_p=0.02, seed=3002) as px:
        props = {"advertised.listeners": "PLAINTEXT://%s" % px.bootstrap, "num.partitions": str(PARTS)}
        with Broker(port=port, props=props) as b:
            rc, _ = run(["produce", px.bootstrap, "idem", COUNT, PARTS, 1])
            check(rc == 0, "idempotent producer delivered everything")
            stats = dict(px.stats)
            log("A: proxy %r" % stats)
            check(stats["drops"] >= 10 and stats["cuts"] >= 3, "the proxy dropped and cut requests: %r" % stats)
            px.set_faults(0, 0)
            rc, out = run(["verify", px.bootstrap, "idem", COUNT, PARTS, 1])
            check(rc == 0, "exactly once, in order")
            log("A: %d messages exactly once in order" % counts(out)["total"])

            # 6,000 records are only ~60 requests: at A's 5 % a run with no drop
            # at all is a few percent likely, so B drops one response in five
            px.set_faults(0.2, 0.02)
            before = dict(px.stats)
            rc, _ = run(["produce", px.bootstrap, "plain", PLAIN_COUNT, PARTS, 0])
            check(rc == 0, "plain producer delivered everything")
            log("B: proxy drops %d cuts %d" % (px.stats["drops"] - before["drops"], px.stats["cuts"] - before["cuts"]))
            px.set_faults(0, 0)
            rc, out = run(["verify", px.bootstrap, "plain", PLAIN_COUNT, PARTS, 0])
            c = counts(out)
            check(c["dups"] > 0, "without idempotence the proxy causes duplicates: %r" % c)
            check(c["missing"] == 0, "without idempotence nothing is lost either: %r" % c)
            log("B: without idempotence %d duplicates, %d reordered" % (c["dups"], c["reordered"]))


main(test)

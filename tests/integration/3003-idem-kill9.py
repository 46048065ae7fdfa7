"""Idempotent producer survives broker kill -9 + restart mid-run.

An idempotent librdkafka producer (acks=all, max.in.flight=5, paced) sends
KILL9_COUNT numbered messages (default 40000) to 6 partitions through the
fault-injection proxy; the broker is killed with SIGKILL twice in the middle
and restarted on the same port and data dir.  The producer recovers (its
in-flight batches are retried against producer state rebuilt from the
snapshots and the log tail) and reading back gives every number exactly
once, in order per partition.
"""

import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, check, free_port, log, main, build_bin  # noqa: E402
from faultproxy import FaultProxy  # noqa: E402

PARTS = 6
COUNT = int(os.environ.get("KILL9_COUNT", "40000"))
RATE = 8000  # messages per second: the run lasts about 5 s


def itest_bin():
    return build_bin("itest", "3002-idem-proxy")


def test():
    port = free_port()
    with FaultProxy(port, drop_response_p=0.02, cut_request_p=0.01, seed=3003) as px:
        # small segments: rolls write producer snapshots during the run
        props = {"advertised.listeners": "PLAINTEXT://%s" % px.bootstrap, "num.partitions": str(PARTS),
                 "log.segment.bytes": "65536"}
        with Broker(port=port, props=props) as b:
            prod = subprocess.Popen([itest_bin(), "produce", px.bootstrap, "idem-k9", str(COUNT), str(PARTS),
                                     "1", str(RATE)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            for k in range(2):
                time.sleep(1.5)
                check(prod.poll() is None, "producer still running at kill %d" % (k + 1))
                b.kill9()
                log("killed the broker (SIGKILL) with the producer running")
                time.sleep(0.3)
                since = b.log_size()
                b.start()
                b.wait_log("producer state of", since=since)
            out, _ = prod.communicate(timeout=170)
            sys.stdout.write(out.decode(errors="replace"))
            check(prod.returncode == 0, "producer delivered everything (exit %d)" % prod.returncode)
            log("proxy %r" % px.stats)
            px.set_faults(0, 0)
            v = subprocess.run([itest_bin(), "verify", px.bootstrap, "idem-k9", str(COUNT), str(PARTS), "1"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
            sys.stdout.write(v.stdout.decode(errors="replace"))
            check(v.returncode == 0, "exactly once, in order, across two kill -9")


main(test)

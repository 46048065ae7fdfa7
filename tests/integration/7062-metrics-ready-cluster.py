#!/usr/bin/python3
"""7062: /health/ready in cluster mode says ready only while the broker is
registered in ZooKeeper and holds the controller's metadata.

  1. Broker 1 starts with zookeeper.connect pointing at a ZooKeeper that is
     not running yet: its Kafka listener accepts and /health/live answers
     200, but /health/ready answers 503 throughout 2 seconds.
  2. ZooKeeper starts: the broker registers, becomes controller and gets
     its UpdateMetadata; /health/ready turns 200, and from then on its
     Metadata lists broker 1.
  3. ZooKeeper stops: once zookeeper.connection.timeout.ms passes without a
     connection the broker gives its registration up and /health/ready is
     503 again; ZooKeeper back, 200 again.
On code that answered ready once the listener was up, step 1 gets 200.
"""
import os
import shutil
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import kwire  # noqa: E402
from gregor import eq, free_port, log, main, wait_until  # noqa: E402
from promhttp import http_get  # noqa: E402
from zookeeper import ZooKeeper, cluster_broker  # noqa: E402

CHROOT = "/gregor/m7062"


def ready(mport):
    return http_get(mport, "/health/ready")[0]


def listed(port):
    r = kwire.call(port, 3, 1, kwire.metadata_v1_body([]))
    return [b[0] for b in kwire.parse_metadata_v1(r.d[r.p:])["brokers"]]


def test():
    zk = ZooKeeper()
    mport = free_port()
    b = cluster_broker(zk.connect, 1, CHROOT, start=False, zookeeper_connection_timeout_ms=2000,
                       zookeeper_session_timeout_ms=6000, metrics_listener="http://127.0.0.1:%d" % mport)
    ok = False
    try:
        b.start()
        eq(http_get(mport, "/health/live")[0], 200, "/health/live without zookeeper")
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:
            eq(ready(mport), 503, "/health/ready before zookeeper is reachable")
            time.sleep(0.2)
        log("no zookeeper: live 200, ready 503 for 2 s")

        zk.start()
        wait_until(lambda: ready(mport) == 200, 30, "/health/ready once registered with metadata")
        eq(listed(b.port), [1], "brokers in Metadata when ready")
        log("zookeeper up: ready 200, Metadata lists the broker")

        zk.stop()
        wait_until(lambda: ready(mport) == 503, 30, "/health/ready once the registration is given up")
        log("zookeeper gone: ready 503")
        zk.start()
        wait_until(lambda: ready(mport) == 200, 60, "/health/ready after zookeeper returned")
        log("zookeeper back: ready 200")
        eq(b.stop(), 0, "broker exit status")
        ok = True
    except BaseException:
        b.dump_log()
        sys.stderr.write(zk.log_tail() + "\n")
        raise
    finally:
        b.cleanup(keep=False)
        zk.stop()
        if ok:
            shutil.rmtree(zk.tmp, ignore_errors=True)


if __name__ == "__main__":
    main(test)

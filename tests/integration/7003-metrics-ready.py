#!/usr/bin/python3
"""7003: /health/ready follows the broker's state; the HTTP listener
answers while the event loop is busy shutting down.

  1. A running broker: /health/live and /health/ready answer 200 (also
     to HEAD, with no body).
  2. The sync shim holds every fdatasync of .log files; one acks=1 record
     leaves the partition dirty; the broker gets SIGTERM.  Its clean
     shutdown now waits on the final sync, and meanwhile /health/ready
     answers 503, /health/live 200, and /metrics 200 within a second (the
     last snapshot: the loop no longer takes new ones).
  3. The sync is released: the broker exits 0 and the record survives a
     restart.
On code without the listener the broker refuses metrics.listener; on code
that kept reporting ready during shutdown step 2 fails.
"""
import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from confluent_kafka import Producer  # noqa: E402
from gregor import Broker, check, eq, free_port, log, main, run, wait_until  # noqa: E402
from promhttp import http_get  # noqa: E402
from syncshim import SyncShim  # noqa: E402

TOPIC = "metrics-7003"


def test():
    mport = free_port()
    shim = SyncShim()
    with Broker(props={"metrics.listener": "http://127.0.0.1:%d" % mport}, env=shim.env()) as b:
        b.wait_log("metrics listener on")
        eq(http_get(mport, "/health/live")[0], 200, "/health/live")
        eq(http_get(mport, "/health/ready"), (200, b"ready\n"), "/health/ready")
        eq(http_get(mport, "/health/ready", method="HEAD"), (200, b""), "HEAD /health/ready")
        p = Producer({"bootstrap.servers": b.bootstrap, "acks": "1"})
        p.produce(TOPIC, value=b"kept")
        eq(p.flush(20), 0, "record unflushed")
        shim.hold(".log")
        p.produce(TOPIC, value=b"kept too")
        eq(p.flush(20), 0, "record unflushed")
        b.proc.send_signal(signal.SIGTERM)
        try:
            wait_until(lambda: http_get(mport, "/health/ready")[0] == 503, 10, "/health/ready 503 in shutdown")
            eq(http_get(mport, "/health/live")[0], 200, "/health/live during shutdown")
            t0 = time.monotonic()
            st, body = http_get(mport, "/metrics")
            took = time.monotonic() - t0
            log("/metrics during shutdown: %d, %d bytes in %.3f s" % (st, len(body), took))
            eq(st, 200, "/metrics during shutdown")
            check(b"kafka_server_brokertopicmetrics_messagesin_total 2" in body, "counters in the last scrape")
            check(took < 1.5, "/metrics answered within 1.5 s while the loop is stopping (%.2f s)" % took)
            check(b.alive(), "shutdown waits on the held sync")
        finally:
            shim.release()
        eq(b.stop(), 0, "exit status")
        b.start()
        out = run(["kcat", "-C", "-b", b.bootstrap, "-t", TOPIC, "-e", "-q"]).stdout
        eq(out, b"kept\nkept too\n", "records after the restart")


if __name__ == "__main__":
    main(test)

"""Controlled shutdown when the controller asked goes away before it answers.

ZooKeeper and three brokers (3 s session timeout), a topic with replication
factor 3, and a controlled-shutdown bound of 60 s
(controlled.shutdown.max.retries 3 x controlled.shutdown.retry.backoff.ms
20000), so a broker that kept waiting for the lost controller would take a
minute to stop:

  1. the controller is frozen (SIGSTOP), a broker is sent SIGTERM and asks
     it; the frozen controller is killed: once its session expires another
     controller is elected, the stopping broker asks that one (Kafka's broker
     retries with the controller it finds) and exits 0 long before the bound
  2. the last two brokers: the controller frozen and killed while the other
     stops: left alone, that broker becomes controller itself with nowhere to
     move its partitions, and stops without waiting out the bound
"""

import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import kwire  # noqa: E402
from gregor import check, eq, log, main, wait_until  # noqa: E402
from zookeeper import running_cluster, wait_listed  # noqa: E402

CHROOT = "/gregor/c85"
OPTS = {"zookeeper_session_timeout_ms": 3000, "zookeeper_connection_timeout_ms": 1000,
        "controlled_shutdown_max_retries": 3, "controlled_shutdown_retry_backoff_ms": 20000}
BOUND_S = 30  # well under the 60 s a broker waiting for the lost controller would take


def controller(zc):
    import json
    return json.loads(zc.get(CHROOT + "/controller")[0])["brokerid"]


def stop_while_controller_lost(zc, brokers, want_line):
    ctl_id = controller(zc)
    ctl = next(b for b in brokers if int(b.overrides["broker.id"]) == ctl_id)
    leaving = next(b for b in brokers if b is not ctl)
    ctl.proc.send_signal(signal.SIGSTOP)
    t0 = time.monotonic()
    leaving.proc.send_signal(signal.SIGTERM)
    wait_until(lambda: "controlled shutdown: asking controller %d" % ctl_id in leaving.log_text(), 10,
               "broker %s asked the frozen controller" % leaving.overrides["broker.id"])
    ctl.kill9()
    leaving.proc.wait(timeout=BOUND_S + 10)
    took = time.monotonic() - t0
    rc = leaving.proc.returncode
    leaving.last_returncode, leaving.proc = rc, None
    eq(rc, 0, "exit status of the broker that stopped")
    check(took < BOUND_S, "it took %.1f s to stop (the bound is 60 s)" % took)
    check(want_line in leaving.log_text(), "no %r in its log:\n%s" % (want_line, leaving.log_tail()))
    log("broker %s stopped in %.1f s after controller %d went away" % (leaving.overrides["broker.id"], took, ctl_id))
    return [b for b in brokers if b is not ctl and b is not leaving]


def test():
    with running_cluster((1, 2, 3), CHROOT, **OPTS) as (zk, zc, brokers):
        wait_listed(brokers)
        eq(kwire.create_topic(brokers[0].port, "cs", 3)[0], 0, "CreateTopics")
        rest = stop_while_controller_lost(zc, brokers, "went away; asking controller")
        eq(len(rest), 1, "brokers left")
        for b in brokers:
            if b not in rest and b.proc is None and b.last_returncode != 0:
                b.start()  # the killed controller comes back
        live = [b for b in brokers if b.alive()]
        wait_until(lambda: len(zc.get_children(CHROOT + "/brokers/ids")) == len(live) and
                   zc.exists(CHROOT + "/controller"), 20, "the remaining brokers registered, a controller")
        stop_while_controller_lost(zc, live, "no other broker can take the partitions")


if __name__ == "__main__":
    main(test)

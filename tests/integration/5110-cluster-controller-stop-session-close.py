"""Cluster mode: a controller stopped while it still has ZooKeeper requests in flight closes its
session, so the others see it leave at once and elect a new controller.

ZooKeeper and, each round in a chroot of its own, three brokers with
zookeeper.session.timeout.ms=30000 (a session whose close ZooKeeper never took lives that long)
and Gregor's default controlled-shutdown bound (3 x 5 s).  CreateTopics of 300 partitions, all
on the third broker T, through the controller C; as soon as the first partition state is
written (C's pass has hundreds of requests in flight) C and then the second broker B are sent
SIGTERM at once:

  1. C exits 0, and within 5 s of its exit neither /brokers/ids/<C> nor a /controller naming C
     is left (the close went behind unanswered requests: ZooKeeper, still writing their replies,
     was reset by the client's socket close before it read the close, and the session stayed
     until it expired);
  2. B, leading nothing, exits 0 within 10 s (its controlled shutdown needs a controller: one
     that never comes held it for the whole 15 s bound);
  3. T is controller within 10 s and stops cleanly.

Up to 8 rounds, fewer once 35 s have passed.  Before the fix about one round in three failed 1.
"""

import json
import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import kwire  # noqa: E402
from kazoo.exceptions import NoNodeError  # noqa: E402
from gregor import check, eq, log, main, wait_until  # noqa: E402
from kwire import array, i8, i16, i32, string  # noqa: E402
from zookeeper import ZooKeeper, cluster_broker, wait_listed  # noqa: E402

CHROOT = "/gregor/c110"
TOPIC = "burst"
NPARTS = 300
ROUNDS = 8
ROUNDS_S = 35.0
GONE_S = 5.0
STOP_S = 10.0
OPTS = {"zookeeper_session_timeout_ms": 30000}


def create_on(port, topic, nparts, broker_id):
    """CreateTopics v1 of topic with every partition assigned to broker_id alone -> error code."""
    body = (array([topic], lambda t: string(t) + i32(-1) + i16(-1) +
                  array(list(range(nparts)), lambda p: i32(p) + array([broker_id], i32)) + array([])) +
            i32(30000) + i8(0))
    r = kwire.call(port, 19, 1, body)
    return kwire.parse_create_topics_v1(r.d[r.p:])[topic][0]


def controller_of(zc, chroot):
    """The broker /controller names, or None (none, or it went between two reads)."""
    try:
        data = zc.get(chroot + "/controller")[0]
    except NoNodeError:
        return None
    return json.loads(data)["brokerid"] if data else None


def wait_exit(b, timeout_s, what):
    """Waits (bounded) for a broker already sent SIGTERM: its exit status, then forgets the process."""
    try:
        rc = b.proc.wait(timeout=timeout_s)
    except Exception:
        raise AssertionError("%s did not exit within %.0f s of SIGTERM" % (what, timeout_s))
    b.last_returncode, b.proc = rc, None
    return rc


def one_round(zk, zc, k):
    chroot = "%s/r%d" % (CHROOT, k)
    brokers = {}
    try:
        brokers = {i: cluster_broker(zk.connect, i, chroot, **OPTS) for i in (1, 2, 3)}
        wait_until(lambda: controller_of(zc, chroot) is not None and
                   sorted(zc.get_children(chroot + "/brokers/ids")) == ["1", "2", "3"], 20,
                   "3 brokers registered and a controller")
        wait_listed(list(brokers.values()), controller=True)
        c = controller_of(zc, chroot)
        b, t = [i for i in (1, 2, 3) if i != c]
        eq(create_on(brokers[c].port, TOPIC, NPARTS, t), 0, "CreateTopics through controller %d" % c)
        wait_until(lambda: zc.exists("%s/brokers/topics/%s/partitions/0/state" % (chroot, TOPIC)), 20,
                   "the controller's pass writing partition states")
        brokers[c].proc.send_signal(signal.SIGTERM)
        brokers[b].proc.send_signal(signal.SIGTERM)
        eq(wait_exit(brokers[c], STOP_S, "controller %d" % c), 0, "exit status of controller %d" % c)
        t0 = time.monotonic()
        while time.monotonic() - t0 < GONE_S and (controller_of(zc, chroot) == c or
                                                   str(c) in zc.get_children(chroot + "/brokers/ids")):
            time.sleep(0.05)
        left = [p for p, there in (("/controller", controller_of(zc, chroot) == c),
                                   ("/brokers/ids/%d" % c, str(c) in zc.get_children(chroot + "/brokers/ids")))
                if there]
        check(not left, "round %d: %s of stopped controller %d still there %.0f s after its clean exit "
              "(its session was not closed)" % (k, " and ".join(left), c, GONE_S))
        eq(wait_exit(brokers[b], STOP_S, "broker %d" % b), 0, "exit status of broker %d" % b)
        wait_until(lambda: controller_of(zc, chroot) == t, 10, "broker %d controller" % t)
        eq(brokers[t].stop(), 0, "exit status of broker %d" % t)
        log("round %d: controller %d stopped with its pass under way, its znodes gone at once; "
            "broker %d stopped, broker %d took over" % (k, c, b, t))
    except BaseException:
        for x in brokers.values():
            x.dump_log()
        raise
    finally:
        for x in brokers.values():
            x.cleanup(keep=False)


def test():
    with ZooKeeper() as zk:
        zc = zk.client()
        t0 = time.monotonic()
        rounds = 0
        while rounds < ROUNDS and (rounds == 0 or time.monotonic() - t0 < ROUNDS_S):
            one_round(zk, zc, rounds)
            rounds += 1
        log("%d rounds in %.1f s" % (rounds, time.monotonic() - t0))


if __name__ == "__main__":
    main(test)

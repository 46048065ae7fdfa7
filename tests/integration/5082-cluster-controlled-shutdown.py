"""Cluster mode: controlled shutdown (ControlledShutdown, api key 7).

ZooKeeper and three brokers in the chroot /gregor/c82:

  1. ControlledShutdown v2 sent to a broker that is not the controller: NOT_CONTROLLER;
     to the controller with a broker epoch older than the czxid of the broker's
     /brokers/ids znode: STALE_BROKER_EPOCH, and no leader moves
  2. SIGTERM of a non-controller broker leading partitions (controlled.shutdown.enable
     defaults to true): its log shows the controller's answer with as many remaining
     partitions as it led, and (kazoo watches) the state znodes of those partitions show
     leader -1 before its /brokers/ids znode goes
  3. started again it leads its partitions again (its new registration clears it from
     the controller's shutting-down set)
  4. with controlled.shutdown.enable=false, SIGTERM logs no controlled shutdown
"""

import json
import os
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import kwire  # noqa: E402
from gregor import eq, log, main, wait_until  # noqa: E402
from zookeeper import running_cluster, wait_listed  # noqa: E402

CHROOT = "/gregor/c82"
TOPIC = "cshut6"
NOT_CONTROLLER, STALE_BROKER_EPOCH = 41, 77


def create(b, topic, nparts):
    eq(kwire.create_topic(b.port, topic, nparts)[0], 0, "CreateTopics of %s" % topic)


def leaders(b):
    r = kwire.call(b.port, 3, 1, kwire.metadata_v1_body([TOPIC]))
    err, parts = kwire.parse_metadata_v1(r.d[r.p:])["topics"].get(TOPIC, (-1, []))
    return {p: leader for _, p, leader in (parts or [])}


def controlled_shutdown_error(b, broker_id, epoch):
    """ControlledShutdown v2 to b: its error code."""
    r = kwire.call(b.port, 7, 2, kwire.i32(broker_id) + kwire.i64(epoch))
    return struct.unpack_from(">h", r.d, r.p)[0]


def log_text(b, start=0):
    with open(b.log_path, errors="replace") as f:
        return f.read()[start:]


def watch_shutdown(zc, victim, parts):
    """kazoo watches: monotonic times at which each partition's state got leader -1 and
    at which the victim's registration went."""
    times, lock = {}, threading.Lock()

    def state_watch(p):
        def fn(data, stat):
            if data is not None and json.loads(data)["leader"] == -1:
                with lock:
                    times.setdefault(p, time.monotonic())
        zc.DataWatch("%s/brokers/topics/%s/partitions/%d/state" % (CHROOT, TOPIC, p), fn)

    def ids_fn(data, stat):
        if data is None:
            with lock:
                times.setdefault("ids", time.monotonic())
    for p in parts:
        state_watch(p)
    zc.DataWatch("%s/brokers/ids/%d" % (CHROOT, victim), ids_fn)
    return times


def test():
    with running_cluster((1, 2, 3), CHROOT) as (zk, zc, brokers):
        wait_listed(brokers)
        create(brokers[0], TOPIC, 6)
        wait_until(lambda: all(len(leaders(b)) == 6 and -1 not in leaders(b).values() for b in brokers), 15,
                   "every partition led on every broker")
        before = leaders(brokers[0])
        ctl_id = json.loads(zc.get(CHROOT + "/controller")[0])["brokerid"]
        ctl = brokers[ctl_id - 1]
        victim = next(i for i in (3, 2, 1) if i != ctl_id and i in before.values())
        vb = brokers[victim - 1]
        other = next(b for i, b in enumerate(brokers, 1) if i != ctl_id)
        epoch = zc.get("%s/brokers/ids/%d" % (CHROOT, victim))[1].czxid
        led = sorted(p for p, leader in before.items() if leader == victim)
        log("controller %d, victim %d (broker epoch %d) leads partitions %r" % (ctl_id, victim, epoch, led))

        eq(controlled_shutdown_error(other, victim, epoch), NOT_CONTROLLER, "ControlledShutdown to a non-controller")
        eq(controlled_shutdown_error(ctl, victim, epoch - 1), STALE_BROKER_EPOCH, "ControlledShutdown, older epoch")
        eq(leaders(ctl), before, "leaders after the refused requests")

        times = watch_shutdown(zc, victim, led)
        eq(vb.stop(), 0, "exit status of broker %d after SIGTERM" % victim)
        text = log_text(vb)
        want_line = "controlled shutdown: controller %d answered in" % ctl_id
        line = next((ln for ln in text.splitlines() if want_line in ln), None)
        eq(line is not None, True, "a log line '%s ...' of broker %d" % (want_line, victim))
        eq(line.endswith(", %d remaining partitions" % len(led)), True, "remaining partitions in %r" % line)
        wait_until(lambda: "ids" in times and all(p in times for p in led), 5, "the watches fired (%r)" % times)
        eq(all(times[p] < times["ids"] for p in led), True, "leader -1 before the registration went (%r)" % times)
        log("leader -1 %.3f s before the registration went" % (times["ids"] - max(times[p] for p in led)))

        vb.start()
        wait_until(lambda: all(leaders(b) == before for b in brokers), 20, "broker %d leads again" % victim)

        vb.overrides["controlled.shutdown.enable"] = "false"
        vb.stop()
        start = len(log_text(vb))
        vb.start()
        wait_until(lambda: all(leaders(b) == before for b in brokers), 20, "broker %d leads again" % victim)
        eq(vb.stop(), 0, "exit status of broker %d with controlled.shutdown.enable=false" % victim)
        text = log_text(vb, start)
        eq("clean shutdown complete" in text, True, "the clean shutdown logged after the restart")
        eq("controlled shutdown" in text, False, "a controlled shutdown in the log")
        vb.start()


if __name__ == "__main__":
    main(test)

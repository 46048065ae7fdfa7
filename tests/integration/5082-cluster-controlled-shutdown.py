"""Cluster mode: ControlledShutdown (api key 7) on the controller.

ZooKeeper and three brokers in the chroot /gregor/c82:

  1. ControlledShutdown v2 sent to a broker that is not the controller: NOT_CONTROLLER
  2. to the controller with a broker epoch older than the victim's registration czxid:
     STALE_BROKER_EPOCH, and no leader moves
  3. to the controller with the czxid of the victim's /brokers/ids znode: no error, the
     remaining partitions are exactly those the victim led (one replica each: none can move),
     and their state znodes show leader -1 while its registration is still there
  4. the victim stopped (SIGTERM) and started again: a new registration clears it from
     the shutting-down set and it leads its partitions again
"""

import json
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import kwire  # noqa: E402
from gregor import eq, log, main, wait_until  # noqa: E402
from zookeeper import running_cluster, wait_listed  # noqa: E402

CHROOT = "/gregor/c82"
TOPIC = "cshut6"
NOT_CONTROLLER, STALE_BROKER_EPOCH = 41, 77


def create(b, topic, nparts):
    body = (kwire.array([topic], lambda t: kwire.string(t) + kwire.i32(nparts) + kwire.i16(1) + kwire.array([]) +
                        kwire.array([])) + kwire.i32(15000) + kwire.i8(0))
    r = kwire.call(b.port, 19, 1, body)
    eq(kwire.parse_create_topics_v1(r.d[r.p:])[topic][0], 0, "CreateTopics of %s" % topic)


def leaders(b):
    r = kwire.call(b.port, 3, 1, kwire.metadata_v1_body([TOPIC]))
    err, parts = kwire.parse_metadata_v1(r.d[r.p:])["topics"].get(TOPIC, (-1, []))
    return {p: leader for _, p, leader in (parts or [])}


def controlled_shutdown(b, broker_id, epoch):
    """ControlledShutdown v2 to b: (error code, sorted [(topic, partition)])."""
    r = kwire.call(b.port, 7, 2, kwire.i32(broker_id) + kwire.i64(epoch))
    d, p = r.d, r.p
    err, n = struct.unpack_from(">hi", d, p)
    p += 6
    parts = []
    for _ in range(max(n, 0)):
        ln = struct.unpack_from(">h", d, p)[0]
        name = d[p + 2:p + 2 + ln].decode()
        p += 2 + ln
        parts.append((name, struct.unpack_from(">i", d, p)[0]))
        p += 4
    return err, sorted(parts)


def state_leader(zc, p):
    data, _ = zc.get("%s/brokers/topics/%s/partitions/%d/state" % (CHROOT, TOPIC, p))
    return json.loads(data)["leader"]


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
        other = next(b for i, b in enumerate(brokers, 1) if i != ctl_id)
        epoch = zc.get("%s/brokers/ids/%d" % (CHROOT, victim))[1].czxid
        led = sorted((TOPIC, p) for p, leader in before.items() if leader == victim)
        log("controller %d, victim %d (broker epoch %d) leads %r" % (ctl_id, victim, epoch, led))

        eq(controlled_shutdown(other, victim, epoch)[0], NOT_CONTROLLER, "ControlledShutdown to a non-controller")
        eq(controlled_shutdown(ctl, victim, epoch - 1)[0], STALE_BROKER_EPOCH, "ControlledShutdown, older epoch")
        eq(leaders(ctl), before, "leaders after the refused requests")

        eq(controlled_shutdown(ctl, victim, epoch), (0, led), "ControlledShutdown answer")
        wait_until(lambda: all(state_leader(zc, p) == -1 for _, p in led), 5, "leader -1 in the state znodes")
        eq(zc.exists("%s/brokers/ids/%d" % (CHROOT, victim)) is not None, True, "victim still registered")
        want = {p: (-1 if leader == victim else leader) for p, leader in before.items()}
        wait_until(lambda: all(leaders(b) == want for b in brokers), 5, "victim's partitions offline everywhere")

        vb = brokers[victim - 1]
        eq(vb.stop(), 0, "exit status of broker %d after SIGTERM" % victim)
        vb.start()
        wait_until(lambda: all(leaders(b) == before for b in brokers), 20, "victim leads its partitions again")


if __name__ == "__main__":
    main(test)

"""Cluster mode: the controller elects partition leaders and keeps them in
ZooKeeper as Kafka's controller does (/brokers/topics/<t>/partitions/<p>/state),
following broker failures and controller failover.

ZooKeeper and three brokers in the chroot /gregor/c21, 3 s sessions; kazoo
reads the znodes.

  1. a topic of 12 partitions (RF 1) created through a broker that is not
     the controller: every partition gets a state with Kafka's keys, leader =
     its assigned replica, leader epoch 0, ISR [leader], the controller's epoch
  2. kill -9 of a broker that is not controller: within its session timeout
     its partitions show leader -1, leader epoch 1, ISR [it] (unclean election
     is off); the others are untouched; restarted, it leads them again (epoch 2)
  3. kill -9 of the controller: another is elected, sets the old controller's
     partitions to leader -1 with the new controller epoch; a topic created
     within session timeout + 5 s gets its states from the new controller;
     the old controller restarted leads its partitions again
  4. DeleteTopics of a topic with states marks /admin/delete_topics/<t>; the
     controller removes the states, partitions, assignment, config and mark,
     and the name can be created again through another broker
  5. /controller_epoch moved on by someone else (as a newer controller would):
     the controller, which lost its place without noticing, writes no state
     when a broker dies (each write checks the epoch's znode version)
"""

import json
import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import kwire  # noqa: E402
from gregor import check, eq, log, main, wait_until  # noqa: E402
from zookeeper import running_cluster  # noqa: E402

CHROOT = "/gregor/c21"
SESSION_MS = 3000
SESSION = {"zookeeper_session_timeout_ms": SESSION_MS, "zookeeper_connection_timeout_ms": 1000}
STATE_KEYS = ["controller_epoch", "isr", "leader", "leader_epoch", "version"]


def zjson(zc, path):
    return json.loads(zc.get(CHROOT + path)[0])


def controller(zc):
    """(controller id, controller epoch), or None while there is no controller (its znode may go
    between any two reads)."""
    from kazoo.exceptions import NoNodeError
    try:
        return zjson(zc, "/controller")["brokerid"], int(zc.get(CHROOT + "/controller_epoch")[0])
    except NoNodeError:
        return None


def create(b, topic, nparts):
    eq(kwire.create_topic(b.port, topic, nparts)[0], 0, "CreateTopics of %s through %s" % (topic, b.bootstrap))


def delete(b, topic):
    r = kwire.call(b.port, 20, 1, kwire.array([topic], kwire.string) + kwire.i32(15000))
    r.i32()
    eq(dict(r.array(lambda r: (r.string(), r.i16()))), {topic: 0}, "DeleteTopics of %s" % topic)


def deletion(zc, maker, other, topic):
    paths = ["/brokers/topics/" + topic, "/config/topics/" + topic, "/admin/delete_topics/" + topic]
    check(all(zc.exists(CHROOT + p) for p in paths[:2]), "%s has no znodes to delete" % topic)
    delete(maker, topic)
    wait_until(lambda: not any(zc.exists(CHROOT + p) for p in paths), 10, "znodes of %s deleted" % topic)
    create(other, topic, 2)
    eq(len(assignment(zc, topic)), 2, "%s created again" % topic)


def zombie(zc, ids, ctl, a):
    """The epoch taken from under the controller: a broker's death changes no state."""
    data, stat = zc.get(CHROOT + "/controller_epoch")
    zc.set(CHROOT + "/controller_epoch", str(int(data) + 1).encode(), version=stat.version)
    x = [i for i in (1, 2, 3) if i != ctl][0]
    before = states(zc, "lead12", 12)
    ids[x].proc.send_signal(signal.SIGKILL)
    ids[x].proc.wait(timeout=10)
    ids[x].proc = None
    wait_until(lambda: not zc.exists(CHROOT + "/brokers/ids/%d" % x), SESSION_MS / 1000 + 10,
               "broker %d's registration gone" % x)
    wait_until(lambda: "state not written" in ids[ctl].log_text() or states(zc, "lead12", 12) != before, 10,
               "the controller's attempt")
    eq(states(zc, "lead12", 12), before, "states after a write by a controller that lost its epoch")
    check(any(a[p] == x for p in range(12)), "broker %d leads nothing" % x)
    return x


def assignment(zc, topic):
    parts = zjson(zc, "/brokers/topics/" + topic)["partitions"]
    return {int(p): r[0] for p, r in parts.items()}


def states(zc, topic, nparts):
    """{partition: state document}, only those written so far."""
    out = {}
    for p in range(nparts):
        path = "/brokers/topics/%s/partitions/%d/state" % (topic, p)
        if zc.exists(CHROOT + path):
            out[p] = zjson(zc, path)
    return out


def wait_states(zc, topic, nparts, want, what, timeout_s):
    """Waits until every partition's (leader, leader_epoch, isr) is want(p); returns the states."""
    def ok():
        st = states(zc, topic, nparts)
        return len(st) == nparts and all((s["leader"], s["leader_epoch"], s["isr"]) == want(p) for p, s in st.items())
    wait_until(ok, timeout_s, what)
    return states(zc, topic, nparts)


def by_id(brokers):
    return {int(b.overrides["broker.id"]): b for b in brokers}


def restart(b):
    b.start()


def test():
    with running_cluster((1, 2, 3), CHROOT, **SESSION) as (zk, zc, brokers):
        ids = by_id(brokers)
        wait_until(lambda: controller(zc) and sorted(int(c) for c in zc.get_children(CHROOT + "/brokers/ids"))
                   == [1, 2, 3], 20, "three brokers and a controller")
        time.sleep(0.5)  # each broker's listing of the others
        ctl, epoch = controller(zc)
        other = [i for i in (1, 2, 3) if i != ctl]
        create(ids[other[0]], "lead12", 12)
        a = assignment(zc, "lead12")
        eq(sorted(set(a.values())), [1, 2, 3], "12 partitions over all brokers")
        st = wait_states(zc, "lead12", 12, lambda p: (a[p], 0, [a[p]]), "states of lead12", 10)
        for p, s in st.items():
            eq(sorted(s), STATE_KEYS, "state keys of lead12-%d" % p)
            eq((s["version"], s["controller_epoch"]), (1, epoch), "version, controller epoch of lead12-%d" % p)
        log("lead12: leaders %r, controller %d epoch %d" % ([a[p] for p in range(12)], ctl, epoch))

        victim = other[1]
        ids[victim].proc.send_signal(signal.SIGKILL)
        ids[victim].proc.wait(timeout=10)
        ids[victim].proc = None
        t0 = time.monotonic()
        wait_states(zc, "lead12", 12,
                    lambda p: (-1, 1, [victim]) if a[p] == victim else (a[p], 0, [a[p]]),
                    "broker %d's partitions leaderless" % victim, SESSION_MS / 1000 + 10)
        log("broker %d killed: its partitions leaderless after %.1f s" % (victim, time.monotonic() - t0))
        restart(ids[victim])
        wait_states(zc, "lead12", 12,
                    lambda p: (victim, 2, [victim]) if a[p] == victim else (a[p], 0, [a[p]]),
                    "broker %d leads again" % victim, 20)

        ids[ctl].proc.send_signal(signal.SIGKILL)
        ids[ctl].proc.wait(timeout=10)
        ids[ctl].proc = None
        t0 = time.monotonic()
        wait_until(lambda: (controller(zc) or (ctl,))[0] != ctl, SESSION_MS / 1000 + 10,
                   "a new controller")
        new_ctl, new_epoch = controller(zc)
        check(new_epoch > epoch, "controller epoch %d after %d" % (new_epoch, epoch))

        def after_failover(p):
            if a[p] == ctl:
                return (-1, 1, [ctl])
            return (a[p], 2 if a[p] == victim else 0, [a[p]])
        st = wait_states(zc, "lead12", 12, after_failover, "the old controller's partitions leaderless", 10)
        for p in range(12):
            if a[p] == ctl:
                eq(st[p]["controller_epoch"], new_epoch, "controller epoch of lead12-%d" % p)
        live = [i for i in (1, 2, 3) if i != ctl]
        create(ids[live[0]], "after", 4)
        b = assignment(zc, "after")
        check(ctl not in b.values(), "a dead broker was assigned: %r" % b)
        wait_states(zc, "after", 4, lambda p: (b[p], 0, [b[p]]), "states of a topic made after failover",
                    SESSION_MS / 1000 + 5)
        log("controller %d killed: %d elected (epoch %d) after %.1f s; new topic led" %
            (ctl, new_ctl, new_epoch, time.monotonic() - t0))
        restart(ids[ctl])
        wait_states(zc, "lead12", 12,
                    lambda p: (ctl, 2, [ctl]) if a[p] == ctl else after_failover(p),
                    "the old controller leads again", 20)
        deletion(zc, ids[live[0]], ids[live[1]], "after")
        log("'after' deleted from zookeeper and created again")
        cur = controller(zc)[0]
        dead = zombie(zc, ids, cur, a)
        log("controller %d without its epoch: broker %d's death wrote no state" % (cur, dead))
        for b_ in brokers:
            if b_ is not ids[dead]:
                eq(b_.stop(), 0, "exit status of %s" % b_.bootstrap)


main(test)

"""Cluster mode: AlterPartition (api 56) and ElectLeaders (api 43) on the controller, and
gregor-leader-election.

ZooKeeper and three brokers (auto.leader.rebalance.enable=false) in the chroot /gregor/c141;
a topic of 6 partitions with replication factor 3 (each broker the preferred replica of two):

  AlterPartition v1 (raw) from partition 0's leader to the controller, ISR shrunk to two (the
  follower taken out SIGSTOPped meanwhile, else the leader would add it back itself):
  accepted, the state znode has the new ISR (leader epoch kept) and the answer the new partition
  epoch (= znode version); the same again with the old partition epoch: INVALID_UPDATE_VERSION;
  another leader epoch: FENCED_LEADER_EPOCH; sent by a follower: NOT_LEADER_OR_FOLLOWER; an ISR
  naming a broker that is no replica: INELIGIBLE_REPLICA (v0: OPERATION_NOT_ATTEMPTED); an older
  broker epoch: STALE_BROKER_EPOCH; to a broker that is not the controller: NOT_CONTROLLER;
  v2 with an unknown topic id: UNKNOWN_TOPIC_ID; the ISR grown back with v2 (topic id): accepted.

  ElectLeaders v1 (preferred) of every partition (null list): ELECTION_NOT_NEEDED for each; to a
  non-controller: NOT_CONTROLLER.  Kill -9 of a non-controller broker X: its two partitions are
  led elsewhere and X is in no ISR: preferred election of them: PREFERRED_LEADER_NOT_AVAILABLE;
  X restarted: its leaders add it back to the ISR (AlterPartition); then ElectLeaders
  (raw) of one and gregor-leader-election --topic/--partition of the other make X lead them
  again (leader epoch + 1, Metadata of every broker), gregor-leader-election --all-topic-partitions
  then prints "Valid replica already elected", and --path-to-json-file of an unknown partition
  exits 1 with UNKNOWN_TOPIC_OR_PARTITION.  Unclean election of a partition with a live leader:
  ELECTION_NOT_NEEDED.
(Neither confluent_kafka 1.7 nor kafka-python 2.0.2 as Debian ships them has an ElectLeaders API.)
"""

import json
import os
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import kwire  # noqa: E402
import replicas  # noqa: E402
from gregor import build_bin, eq, log, main, wait_until  # noqa: E402
from zookeeper import running_cluster, wait_listed  # noqa: E402

CHROOT = "/gregor/c141"
TOPIC = "ap6"
NPARTS = 6
SESSION = {"zookeeper_session_timeout_ms": 4000, "zookeeper_connection_timeout_ms": 1000,
           "auto_leader_rebalance_enable": "false"}
NOT_LEADER, NOT_CONTROLLER, OP_NOT_ATTEMPTED, FENCED, STALE_BROKER_EPOCH = 6, 41, 55, 74, 77
PREF_NOT_AVAILABLE, NOT_NEEDED, INVALID_UPDATE_VERSION, INELIGIBLE = 80, 84, 95, 107
UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID = 3, 100


def st(zc, p):
    return replicas.state(zc, CHROOT, TOPIC, p)


def broker_epoch(zc, i):
    return zc.get("%s/brokers/ids/%d" % (CHROOT, i))[1].czxid


def meta_leaders(b):
    r = kwire.call(b.port, 3, 1, kwire.metadata_v1_body([TOPIC]))
    err, parts = kwire.parse_metadata_v1(r.d[r.p:])["topics"].get(TOPIC, (-1, []))
    return {p: leader for _, p, leader in (parts or [])}


def tool(b, *args):
    r = subprocess.run([build_bin("gregor-leader-election"), "--bootstrap-server", b.bootstrap] + list(args),
                       capture_output=True, text=True, timeout=60)
    log("gregor-leader-election %s -> %d\n%s%s" % (" ".join(args), r.returncode, r.stdout, r.stderr))
    return r


def alter_partition_checks(zc, brokers, ctl_id):
    """The checks, with the follower taken out stopped so that its leader does not add it back."""
    ctl = brokers[ctl_id - 1]
    s, version = st(zc, 0)
    leader, isr = s["leader"], s["isr"]
    follower = next(i for i in isr if i not in (leader, ctl_id))
    brokers[follower - 1].proc.send_signal(signal.SIGSTOP)
    try:
        running = next(b for i, b in enumerate(brokers, 1) if i not in (ctl_id, follower))
        alter_partition_cases(zc, ctl, running, s, version, follower)
    finally:
        brokers[follower - 1].proc.send_signal(signal.SIGCONT)


def alter_partition_cases(zc, ctl, other, s, version, follower):
    leader, isr = s["leader"], s["isr"]
    shrunk = [i for i in isr if i != follower]
    epoch = broker_epoch(zc, leader)
    top, p = replicas.alter_partition(ctl.port, leader, epoch, TOPIC, 0, s["leader_epoch"], shrunk, version)
    eq((top, p["error"], p["leader"], p["isr"], p["leader_epoch"], p["partition_epoch"]),
       (0, 0, leader, shrunk, s["leader_epoch"], version + 1), "AlterPartition shrinking the ISR")
    s2, v2 = st(zc, 0)
    eq((s2["isr"], s2["leader"], s2["leader_epoch"], v2), (shrunk, leader, s["leader_epoch"], version + 1),
       "state znode after AlterPartition")
    cases = [
        ("old partition epoch", ctl, leader, epoch, s["leader_epoch"], isr, version, 1, (0, INVALID_UPDATE_VERSION)),
        ("another leader epoch", ctl, leader, epoch, s["leader_epoch"] + 1, isr, v2, 1, (0, FENCED)),
        ("sent by a follower", ctl, follower, broker_epoch(zc, follower), s["leader_epoch"], isr, v2, 1,
         (0, NOT_LEADER)),
        ("an ISR with broker 99", ctl, leader, epoch, s["leader_epoch"], shrunk + [99], v2, 1, (0, INELIGIBLE)),
        ("an ISR with broker 99, v0", ctl, leader, epoch, s["leader_epoch"], shrunk + [99], v2, 0,
         (0, OP_NOT_ATTEMPTED)),
    ]
    for what, b, sender, bepoch, lepoch, new_isr, pepoch, ver, want in cases:
        top, p = replicas.alter_partition(b.port, sender, bepoch, TOPIC, 0, lepoch, new_isr, pepoch, version=ver)
        eq((top, p["error"]), want, "AlterPartition, %s" % what)
        eq(st(zc, 0), (s2, v2), "state znode unchanged after AlterPartition, %s" % what)
    top, _ = replicas.alter_partition(ctl.port, leader, epoch - 1, TOPIC, 0, s["leader_epoch"], isr, v2)
    eq(top, STALE_BROKER_EPOCH, "AlterPartition with an older broker epoch")
    top, _ = replicas.alter_partition(other.port, leader, epoch, TOPIC, 0, s["leader_epoch"], isr, v2)
    eq(top, NOT_CONTROLLER, "AlterPartition to a broker that is not the controller")
    tid = replicas.topic_id(zc, CHROOT, TOPIC)
    top, p = replicas.alter_partition(ctl.port, leader, epoch, bytes(16), 0, s["leader_epoch"], isr, v2, version=2)
    eq((top, p["error"]), (0, UNKNOWN_TOPIC_ID), "AlterPartition v2 of an unknown topic id")
    top, p = replicas.alter_partition(ctl.port, leader, epoch, tid, 0, s["leader_epoch"], isr, v2, version=2)
    eq((top, p["error"], p["isr"], p["partition_epoch"]), (0, 0, isr, v2 + 1), "AlterPartition v2 growing the ISR")
    eq(st(zc, 0)[0]["isr"], isr, "ISR back in the state znode")


def test():
    with running_cluster((1, 2, 3), CHROOT, **SESSION) as (zk, zc, brokers):
        wait_listed(brokers)
        eq(replicas.create_topic(brokers[0].port, TOPIC, NPARTS, 3)[0], 0, "CreateTopics RF 3")
        wait_until(lambda: all(st(zc, p)[0] is not None for p in range(NPARTS)), 15, "states made")
        assign = replicas.assignment(zc, CHROOT, TOPIC)
        ctl_id = json.loads(zc.get(CHROOT + "/controller")[0])["brokerid"]
        ctl = brokers[ctl_id - 1]
        other = next(b for i, b in enumerate(brokers, 1) if i != ctl_id)
        wait_until(lambda: all(meta_leaders(b) == {p: assign[p][0] for p in range(NPARTS)} for b in brokers), 15,
                   "every broker's Metadata has the preferred leaders")

        alter_partition_checks(zc, brokers, ctl_id)

        top, res = replicas.elect_leaders(ctl.port, 0, None)
        eq((top, res), (0, {(TOPIC, p): NOT_NEEDED for p in range(NPARTS)}), "preferred election of every partition")
        top, res = replicas.elect_leaders(other.port, 0, {TOPIC: [0]})
        eq((top, res), (NOT_CONTROLLER, {(TOPIC, 0): NOT_CONTROLLER}), "ElectLeaders to a non-controller")

        x = next(i for i in (3, 2, 1) if i != ctl_id)
        mine = sorted(p for p in range(NPARTS) if assign[p][0] == x)
        log("controller %d; killing broker %d, preferred leader of %r" % (ctl_id, x, mine))
        brokers[x - 1].kill9()
        wait_until(lambda: all(st(zc, p)[0]["leader"] not in (x, -1) for p in mine), 20, "partitions moved")
        top, res = replicas.elect_leaders(ctl.port, 0, {TOPIC: mine})
        eq(res, {(TOPIC, p): PREF_NOT_AVAILABLE for p in mine}, "preferred election while %d is in no ISR" % x)
        brokers[x - 1].start()
        wait_until(lambda: len(meta_leaders(brokers[x - 1])) == NPARTS, 20, "broker %d back" % x)
        wait_until(lambda: all(x in st(zc, p)[0]["isr"] for p in mine), 20,
                   "the leaders add broker %d back to the ISR of %r" % (x, mine))
        before = {p: st(zc, p)[0] for p in mine}
        top, res = replicas.elect_leaders(ctl.port, 0, {TOPIC: mine[:1]})
        eq((top, res), (0, {(TOPIC, mine[0]): 0}), "preferred election of %s-%d" % (TOPIC, mine[0]))
        r = tool(ctl, "--election-type", "preferred", "--topic", TOPIC, "--partition", str(mine[1]))
        eq((r.returncode, r.stdout), (0, "Successfully completed leader election (PREFERRED) for partitions %s-%d\n" %
                                      (TOPIC, mine[1])), "gregor-leader-election --topic --partition")
        for p in mine:
            s = st(zc, p)[0]
            eq((s["leader"], s["leader_epoch"]), (x, before[p]["leader_epoch"] + 1), "%s-%d led by %d" % (TOPIC, p, x))
        wait_until(lambda: all(meta_leaders(b) == {p: assign[p][0] for p in range(NPARTS)} for b in brokers), 15,
                   "every broker's Metadata has the preferred leaders again")

        r = tool(other, "--election-type", "PREFERRED", "--all-topic-partitions")
        eq(r.returncode, 0, "gregor-leader-election --all-topic-partitions")
        eq("Valid replica already elected for partitions " in r.stdout and "%s-0" % TOPIC in r.stdout, True,
           "'Valid replica already elected' in %r" % r.stdout)
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump({"partitions": [{"topic": TOPIC, "partition": 0}, {"topic": TOPIC, "partition": 99}]}, f)
        try:
            r = tool(other, "--election-type", "preferred", "--path-to-json-file", f.name)
        finally:
            os.unlink(f.name)
        eq(r.returncode, 1, "exit status with an unknown partition")
        eq("Error completing leader election (PREFERRED) for partition: %s-99: UNKNOWN_TOPIC_OR_PARTITION" % TOPIC
           in r.stdout, True, "the error line in %r" % r.stdout)
        eq("Valid replica already elected for partitions %s-0\n" % TOPIC in r.stdout, True, "the noop line")
        r = tool(other, "--election-type", "preferred")
        eq(r.returncode, 2, "usage error without partitions")

        top, res = replicas.elect_leaders(ctl.port, 1, {TOPIC: [0]})
        eq((top, res), (0, {(TOPIC, 0): NOT_NEEDED}), "unclean election of a partition with a live leader")


if __name__ == "__main__":
    main(test)

"""Cluster mode: gregor-topics --describe shows each partition's Leader,
Replicas and Isr as kafka-topics.sh does, the same through every broker.

ZooKeeper and three brokers in the chroot /gregor/c61, 3 s sessions.

  1. a topic of 6 partitions created with gregor-topics through broker 2:
     --describe through each of the three brokers prints the header
     (PartitionCount 6, ReplicationFactor 1) and one line per partition
     whose Leader, Replicas and Isr are the controller's state in ZooKeeper
     (/brokers/topics/<t>/partitions/<p>/state, the assignment of
     /brokers/topics/<t>), identical on every broker
  2. a broker killed: through the others its partitions show "Leader: none"
     with Replicas and Isr still naming it (unclean election is off), as
     kafka-topics.sh prints a leaderless partition
"""

import json
import os
import re
import signal
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import build_bin, check, eq, log, main, wait_until  # noqa: E402
from zookeeper import running_cluster, wait_listed  # noqa: E402

CHROOT = "/gregor/c61"
SESSION = {"zookeeper_session_timeout_ms": 3000, "zookeeper_connection_timeout_ms": 1000}
TOPIC = "desc6"
LINE = re.compile(r"^\tTopic: (\S+)\tPartition: (\d+)\tLeader: (\S+)\tReplicas: (\S*)\tIsr: (\S*)$")


def topics(b, *args):
    r = subprocess.run([build_bin("gregor-topics"), "--bootstrap-server", b.bootstrap] + list(args),
                       capture_output=True, text=True, timeout=60)
    eq(r.returncode, 0, "gregor-topics %s through %s (stderr %r)" % (" ".join(args), b.bootstrap, r.stderr))
    return r.stdout


def describe(b):
    """{partition: (leader, replicas, isr)} and the header line of --describe through b."""
    out = topics(b, "--describe", "--topic", TOPIC).splitlines()
    check(out and out[0].startswith("Topic: %s\tPartitionCount: 6\tReplicationFactor: 1\t" % TOPIC),
          "header of --describe through %s: %r" % (b.bootstrap, out[:1]))
    parts = {}
    for line in out[1:]:
        m = LINE.match(line)
        check(m is not None, "partition line of --describe: %r" % line)
        eq(m.group(1), TOPIC, "topic of %r" % line)
        parts[int(m.group(2))] = (m.group(3), m.group(4), m.group(5))
    return parts


def zk_view(zc):
    """What --describe must print, from ZooKeeper: {partition: (leader, replicas, isr)}."""
    a = json.loads(zc.get(CHROOT + "/brokers/topics/" + TOPIC)[0])["partitions"]
    view = {}
    for p, replicas in a.items():
        path = "%s/brokers/topics/%s/partitions/%s/state" % (CHROOT, TOPIC, p)
        if not zc.exists(path):
            return None
        st = json.loads(zc.get(path)[0])
        leader = "none" if st["leader"] < 0 else str(st["leader"])
        view[int(p)] = (leader, ",".join(map(str, replicas)), ",".join(map(str, st["isr"])))
    return view


def same_everywhere(brokers, want):
    got = {}
    for b in brokers:
        got[b.bootstrap] = describe(b)
    return all(g == want for g in got.values()), got


def wait_described(brokers, zc, what):
    last = {}

    def ok():
        want = zk_view(zc)
        if not want:
            return False
        good, last["got"] = same_everywhere(brokers, want)
        last["want"] = want
        return good
    wait_until(ok, 20, "%s: --describe as in zookeeper (last %r)" % (what, last))
    return last["want"]


def test():
    with running_cluster((1, 2, 3), CHROOT, **SESSION) as (zk, zc, brokers):
        wait_listed(brokers)
        wait_until(lambda: subprocess.run(
            [build_bin("gregor-topics"), "--bootstrap-server", brokers[1].bootstrap, "--create", "--topic",
             TOPIC, "--partitions", "6", "--replication-factor", "1"], capture_output=True,
            timeout=60).returncode == 0 or zc.exists(CHROOT + "/brokers/topics/" + TOPIC), 20, "topic created")
        view = wait_described(brokers, zc, "all brokers up")
        leaders = sorted(set(v[0] for v in view.values()))
        eq(leaders, ["1", "2", "3"], "leaders of %s" % TOPIC)
        for p, (leader, replicas, isr) in view.items():
            eq((replicas, isr), (leader, leader), "replicas and isr of %s-%d" % (TOPIC, p))
        log("described alike through 3 brokers: %r" % view)

        victim = brokers[2]
        victim.proc.send_signal(signal.SIGKILL)
        victim.proc.wait(timeout=10)
        victim.proc = None
        wait_until(lambda: all(v[0] == "none" for v in zk_view(zc).values() if v[1] == "3"), 15,
                   "broker 3's partitions leaderless in zookeeper")
        view = wait_described(brokers[:2], zc, "broker 3 killed")
        for p, (leader, replicas, isr) in view.items():
            if replicas == "3":
                eq((leader, isr), ("none", "3"), "a leaderless partition %s-%d" % (TOPIC, p))
        check(any(v[0] == "none" for v in view.values()), "broker 3 led nothing: %r" % view)
        log("broker 3 killed: %r" % view)


if __name__ == "__main__":
    main(test)

"""Cluster mode: exactly once through copier kills and broker kills, checked by gregor-verify-eos.

itest: alone (three brokers, ZooKeeper, the copier and a 100,000-message copy on the machine's cores)

ZooKeeper and three brokers in the chroot /gregor/c210 (3 s ZooKeeper sessions,
min.insync.replicas 2; __transaction_state and __consumer_offsets of 3 partitions,
replication factor 3).  build/bin/gregor-verify-eos copies 100,000 numbered
messages (6 partitions, replication factor 3) through eos-copier in eos mode,
SIGKILLs the copier 10 times and runs 5 fault commands, each restored after 2-4 s.
The brokers are this test's children, so the fault commands ask it to act
(tests/lib/faultsock.py):

  kill txn-coordinator | kill group-coordinator | kill leader
      once every partition of the data and internal topics has an ISR of 3, and
      (waiting up to 3 s) the copier's transaction is Ongoing with sink
      partitions in it (DescribeTransactions at its coordinator): kill -9 the
      broker that FindCoordinator names for the copier's transactional id, for
      its group, or the leader of a random sink partition; the answer names
      every role that broker held (txn-coordinator, group-coordinator,
      sink-leader) and whether the transaction was still Ongoing
  restore
      once the killed broker's ZooKeeper session has expired (its partitions and
      coordinators moved), start it again and wait until it is registered and
      back in every ISR

The tool draws every fault command once before any repeats, so the three kinds
run within the first three faults.  Checks, from the tool's output: exit 0,
expected = seen = 100,000, no duplicate, missing, out-of-order or unexpected
message, 10 copier kills and 5 faults done and restored, and each role
(transaction coordinator, group coordinator, sink partition leader) held by a
broker killed mid-transaction.  This test's own read_committed reader
counts the same; its read_uncommitted reader sees the aborted duplicates.

GREGOR_SEED replays one run's kill points and victims.
"""

import os
import random
import re
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from confluent_kafka.admin import AdminClient  # noqa: E402

import kwire  # noqa: E402
import txnwire  # noqa: E402
from eos import read_sink, verify_copy  # noqa: E402
from faultsock import FaultServer  # noqa: E402
from gregor import check, eq, log, main, wait_until  # noqa: E402
from zookeeper import running_cluster  # noqa: E402

CHROOT = "/gregor/c210"
N = 100000
PARTS = 6
KILLS = 10
FAULTS = 5
PREFIX = "v210"
SINK, SOURCE, TID = PREFIX + "-sink", PREFIX + "-source", PREFIX + "-copier"
ROLES = ("txn-coordinator", "group-coordinator", "sink-leader")
TOOL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", os.environ.get("BUILD", "build"),
                    "bin", "gregor-verify-eos")
SETTINGS = {"zookeeper_session_timeout_ms": 3000, "zookeeper_connection_timeout_ms": 1000,
            "transaction_state_log_num_partitions": 3, "offsets_topic_num_partitions": 3,
            "group_initial_rebalance_delay_ms": 0, "min_insync_replicas": 2,
            "transaction_abort_timed_out_transaction_cleanup_interval_ms": 1000}


class Chaos:
    """The fault commands' requests (served in the main thread while the tool runs)."""

    def __init__(self, zc, brokers, rng):
        self.zc, self.brokers, self.rng = zc, brokers, rng
        boot = ",".join(b.bootstrap for b in brokers)
        self.admin = AdminClient({"bootstrap.servers": boot})
        self.victim = None

    def __call__(self, words):
        if len(words) == 2 and words[0] == "kill" and words[1] in ("txn-coordinator", "group-coordinator", "leader"):
            return self.kill(words[1])
        if words == ["restore"]:
            return self.restore()
        raise ValueError("unknown request %s" % words)

    def live(self):
        return [b for b in self.brokers if b.alive()]

    def partitions(self):
        """{(topic, partition): (leader, isr)} of the data and internal topics."""
        md = self.admin.list_topics(timeout=5).topics
        return {(t, p): (m.leader, sorted(m.isrs)) for t in (SOURCE, SINK, "__consumer_offsets", "__transaction_state")
                if t in md for p, m in md[t].partitions.items()}

    def full_isr(self):
        try:
            parts = self.partitions()
        except Exception:
            return False
        return len(parts) == 2 * PARTS + 6 and all(lead > 0 and len(isr) == 3 for lead, isr in parts.values())

    def coordinator(self, key, key_type):
        got = {}

        def found():
            got["r"] = kwire.find_coordinator(self.live()[0].port, key, key_type)
            return got["r"][0] == 0
        wait_until(found, 30, "a coordinator for '%s'" % key)
        return got["r"][1]

    def open_txn(self):
        """True if the copier's transaction coordinator (DescribeTransactions) has its
        transaction Ongoing with sink partitions in it."""
        try:
            c = txnwire.Client(self.brokers[self.coordinator(TID, 1) - 1].port)
            try:
                d = c.describe_transactions([TID])[TID]
            finally:
                c.close()
        except Exception:
            return False
        return d["error"] == 0 and d["state"] == "Ongoing" and bool(d["topics"].get(SINK))

    def roles(self, vid, parts):
        held = [r for r, key, kt in (("txn-coordinator", TID, 1), ("group-coordinator", TID, 0))
                if self.coordinator(key, kt) == vid]
        led = sorted(p for (t, p), (lead, _) in parts.items() if t == SINK and lead == vid)
        return held + (["sink-leader"] if led else []), led

    def kill(self, role):
        check(self.victim is None, "broker %s restored before the next kill" % self.victim)
        wait_until(self.full_isr, 60, "an ISR of 3 for every partition before a kill")
        deadline = time.monotonic() + 3
        while not self.open_txn() and time.monotonic() < deadline:
            time.sleep(0.01)
        parts = self.partitions()
        if role == "leader":
            vid = parts[(SINK, self.rng.randrange(PARTS))][0]
        else:
            vid = self.coordinator(TID, 1 if role == "txn-coordinator" else 0)
        held, led = self.roles(vid, parts)
        txn = self.open_txn()
        self.brokers[vid - 1].kill9()
        self.victim = vid
        return ("killed broker %d with -9; roles: %s; sink partitions led: %s; open transaction: %s"
                % (vid, ",".join(held) or "none", led, "yes" if txn else "no"))

    def restore(self):
        vid, t0 = self.victim, time.monotonic()
        check(vid is not None, "a broker to restore")
        ids = CHROOT + "/brokers/ids"
        wait_until(lambda: str(vid) not in self.zc.get_children(ids), 30, "broker %d's ZooKeeper session expired" % vid)
        self.brokers[vid - 1].start()
        wait_until(lambda: str(vid) in self.zc.get_children(ids), 20, "broker %d registered again" % vid)
        wait_until(self.full_isr, 90, "broker %d back in every ISR" % vid)
        self.victim = None
        return "broker %d started again, back in every ISR %.1f s after the restore began" % (
            vid, time.monotonic() - t0)


def tool_argv(boot, fs, seed):
    argv = [TOOL, "--bootstrap-server", boot, "--messages", str(N), "--partitions", str(PARTS),
            "--replication-factor", "3", "--mode", "eos", "--copier-kills", str(KILLS), "--faults", str(FAULTS),
            "--restore-after-ms", "4000", "--copier-throughput", "1500", "--stall-timeout-ms", "90000",
            "--seed", str(seed), "--topic-prefix", PREFIX]
    for what in ("txn-coordinator", "group-coordinator", "leader"):
        argv += ["--fault-cmd", fs.command("kill", what), "--restore-cmd", fs.command("restore")]
    return argv


def roles_killed(out):
    """{role: kills of a broker holding it} and the same counting only kills with the copier's
    transaction Ongoing at its coordinator (as the fault command's answer, echoed by the tool, says)."""
    every, mid = {}, {}
    for m in re.finditer(r"\| ok: killed broker \d+ with -9; roles: ([\w,-]+); .*open transaction: (yes|no)", out):
        for role in m.group(1).split(","):
            every[role] = every.get(role, 0) + 1
            mid[role] = mid.get(role, 0) + (m.group(2) == "yes")
    return every, mid


def check_report(rc, out, err):
    # the report is in the assertion itself: printed last, after the brokers' logs
    eq(rc, 0, "gregor-verify-eos exit status; the end of its output:\n%s\nand of its errors:\n%s\n"
       % ("\n".join(out.splitlines()[-60:]), "\n".join(err.splitlines()[-20:])))
    rep = {m.group(1): m.group(2) for m in re.finditer(r"(?m)^(expected|seen|duplicates|missing|out-of-order|"
                                                        r"unexpected|copier kills|faults|open txn) +(.*)$", out)}
    eq([rep.get(k) for k in ("expected", "seen", "duplicates", "missing", "out-of-order", "unexpected")],
       [str(N), str(N), "0", "0", "0", "0"], "expected, seen, duplicates, missing, out-of-order, unexpected")
    eq(rep.get("copier kills"), "%d of %d" % (KILLS, KILLS), "copier kills")
    eq(rep.get("faults"), "%d of %d (%d restored, 0 commands failed)" % (FAULTS, FAULTS, FAULTS), "faults")
    check("result: OK: exactly once" in out, "the verdict")
    log("kills and faults with records of an open transaction on the sink (the tool's count): %s" % rep.get("open txn"))
    every, mid = roles_killed(out)
    log("kills of a broker holding each role: %s; with the transaction Ongoing: %s" % (every, mid))
    eq([r for r in ROLES if mid.get(r, 0) == 0], [], "roles never held by a broker killed mid-transaction")


def test():
    check(os.access(TOOL, os.X_OK), "gregor-verify-eos is built at %s" % TOOL)
    seed = int(os.environ.get("GREGOR_SEED", str(random.randrange(1 << 30))))
    log("GREGOR_SEED=%d" % seed)
    t0 = time.monotonic()
    with running_cluster((1, 2, 3), CHROOT, **SETTINGS) as (_zk, zc, brokers):
        boot = ",".join(b.bootstrap for b in brokers)
        with FaultServer(Chaos(zc, brokers, random.Random(seed))) as fs:
            t1 = time.monotonic()
            rc, out, err = fs.run(tool_argv(boot, fs, seed), 250)
            log("gregor-verify-eos: exit %d in %.1f s" % (rc, time.monotonic() - t1))
        check_report(rc, out, err)
        eq(verify_copy(read_sink(brokers[0], SINK, PARTS, "read_committed", N, 60), N, PARTS), (N, 0, 0, 0, 0),
           "this test's read_committed reader: (seen, duplicates, missing, out of order, bad case)")
        useen, udups, umissing, _, _ = verify_copy(read_sink(brokers[1], SINK, PARTS, "read_uncommitted", N, 60),
                                                   N, PARTS)
        log("read_uncommitted: seen %d, duplicates %d, missing %d" % (useen, udups, umissing))
        check(udups > 0, "read_uncommitted sees the aborted duplicates")
    log("total %.1f s" % (time.monotonic() - t0))


if __name__ == "__main__":
    main(test)

"""eos-verify: gregor-verify-eos against one broker, and a check of what it reports.

Three runs of build/bin/gregor-verify-eos (tools/gregor-verify-eos.c), each on
its own topics:

  1. --mode eos: N numbered messages (EOS_VERIFY_MESSAGES, default 20000; the
     full run is 100000) on 6 partitions, eos-copier SIGKILLed EOS_VERIFY_KILLS
     times (default 10) and the broker killed with -9 twice and started again,
     through --fault-cmd/--restore-cmd that ask this test to do it
     (tests/lib/faultsock.py).  The tool must exit 0 and report expected = seen
     = N, no duplicate, missing or out-of-order message, every kill and fault
     done, most of them (at least half) with a transaction open (the tool
     waits up to 2 s for one; a copier still starting after the previous
     event may have none); this test's own
     read_committed reader must count the same, and its read_uncommitted reader
     must see aborted duplicates (so the isolation level is what matters).
  2. --mode read-uncommitted (3000 messages, 3 kills): exit 0, the duplicates
     (records of aborted transactions) reported as expected and as many as this
     test's own read_uncommitted reader counts, and more than none: a kill with
     a transaction open always leaves some.
  3. --mode idempotent (3000 messages, 3 kills): exit 0 (duplicates allowed),
     the counts the same as this test's own reader's.
Before them, bad flags and values: exit 2 with the reason and the usage.
EOS_VERIFY_SEED replays the kill points.
"""

import os
import random
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, eq, check, log, main  # noqa: E402
from eos import read_sink, verify_copy  # noqa: E402
from faultsock import FaultServer  # noqa: E402

N = int(os.environ.get("EOS_VERIFY_MESSAGES", "20000"))
KILLS = int(os.environ.get("EOS_VERIFY_KILLS", "10"))
PARTS = 6
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
BIN = os.path.join(ROOT, os.environ.get("BUILD", "build"), "bin")
TOOL = os.path.join(BIN, "gregor-verify-eos")
PROPS = {
    "transaction.state.log.num.partitions": "3",
    "offsets.topic.num.partitions": "3",
    "group.initial.rebalance.delay.ms": "0",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
}


def report(out):
    """The tool's summary: {"expected": n, "seen": n, ...} and the raw lines by their first word."""
    got = {}
    for line in out.splitlines():
        m = re.match(r"^(expected|seen|duplicates|missing|out-of-order|unexpected) +(\d+)", line)
        if m:
            got[m.group(1)] = int(m.group(2))
        m = re.match(r"^(copier kills|faults|open txn) +(.*)$", line)
        if m:
            got[m.group(1)] = m.group(2)
    return got


def run_tool(fs, b, prefix, mode, n, kills, seed, throughput, extra=()):
    cmd = [TOOL, "--bootstrap-server", b.bootstrap, "--messages", str(n), "--partitions", str(PARTS),
           "--mode", mode, "--copier-kills", str(kills), "--seed", str(seed), "--topic-prefix", prefix,
           "--copier-throughput", str(throughput), "--stall-timeout-ms", "60000"] + list(extra)
    t0 = time.time()
    rc, out, err = fs.run(cmd, 240)
    log("%s mode: exit %d in %.1fs" % (mode, rc, time.time() - t0))
    if rc != 0:
        sys.stdout.write(err[-3000:])
    return rc, report(out), out


def own_count(b, sink, isolation, want):
    return verify_copy(read_sink(b, sink, PARTS, isolation, want, 30), want, PARTS)


def eos_run(fs, b, seed):
    rc, rep, out = run_tool(fs, b, "eos", "eos", N, KILLS, seed, 1000,
                            ["--fault-cmd", fs.command("kill"), "--restore-cmd", fs.command("restore"),
                             "--faults", "2", "--restore-after-ms", "1000"])
    eq([w for w, _ in fs.requests], [["kill"], ["restore"]] * 2, "requests from the fault commands")
    eq(rc, 0, "gregor-verify-eos exit status in eos mode")
    eq([rep.get(k) for k in ("expected", "seen", "duplicates", "missing", "out-of-order", "unexpected")],
       [N, N, 0, 0, 0, 0], "expected, seen, duplicates, missing, out-of-order, unexpected")
    eq(rep.get("copier kills"), "%d of %d" % (KILLS, KILLS), "copier kills")
    eq(rep.get("faults"), "2 of 2 (2 restored, 0 commands failed)", "faults")
    m = re.match(r"^at (\d+) of the (\d+) kills and faults$", rep.get("open txn") or "")
    check(m and int(m.group(2)) == KILLS + 2 and 2 * int(m.group(1)) >= KILLS + 2,
          "kills and faults with a transaction open: %r, want at least half of %d" % (rep.get("open txn"), KILLS + 2))
    check("result: OK: exactly once" in out, "the verdict")
    eq(own_count(b, "eos-sink", "read_committed", N), (N, 0, 0, 0, 0),
       "this test's read_committed reader: (seen, duplicates, missing, out of order, bad case)")
    useen, udups, umissing, _, _ = own_count(b, "eos-sink", "read_uncommitted", N)
    log("read_uncommitted of the eos run's sink: seen %d, duplicates %d, missing %d" % (useen, udups, umissing))
    check(udups > 0, "read_uncommitted shows the aborted duplicates")


def dup_run(fs, b, mode, seed):
    n = 3000
    rc, rep, out = run_tool(fs, b, mode, mode, n, 3, seed, 1000)
    eq(rc, 0, "gregor-verify-eos exit status in %s mode" % mode)
    isolation = "read_uncommitted" if mode == "read-uncommitted" else "read_committed"
    seen, dups, missing, _, bad = own_count(b, mode + "-sink", isolation, n)
    eq([rep.get(k) for k in ("expected", "seen", "duplicates", "missing", "out-of-order", "unexpected")],
       [n, seen, dups, 0, 0, 0], "%s mode: the tool's counts against this test's reader's" % mode)
    eq((missing, bad), (0, 0), "missing, bad case (this test's reader)")
    check(("OK for %s mode" % mode) in out, "the verdict")
    if dups:
        check("expected in %s mode" % mode in out, "the duplicates are called expected")
    return dups


def usage_errors():
    """A bad flag or value: the reason and the usage on stderr, exit 2, before any connection."""
    base = ["--bootstrap-server", "127.0.0.1:1", "--messages", "10", "--partitions", "2"]
    for args, why in ((["--bogus"], "--bogus is not a recognized option"),
                      (base[:4], 'Missing required argument "[partitions]"'),
                      (base + ["--mode", "exact"], '"exact" is not one of eos, idempotent, read-uncommitted'),
                      (base + ["--faults", "2"], "--faults needs at least one --fault-cmd"),
                      (base + ["--restore-cmd", "true"], "more --restore-cmd (1) than --fault-cmd (0)"),
                      (base + ["--copier", "/nonexistent"], "no executable copier at /nonexistent")):
        r = subprocess.run([TOOL] + args, capture_output=True, timeout=10)
        err = r.stderr.decode()
        eq(r.returncode, 2, "exit status of %s" % args)
        check(why in err and "Usage: gregor-verify-eos" in err, "%s: reason and usage in %r" % (args, err[:300]))


def test():
    check(os.access(TOOL, os.X_OK), "gregor-verify-eos is built at %s" % TOOL)
    usage_errors()
    seed = int(os.environ.get("EOS_VERIFY_SEED", str(random.randrange(1 << 30))))
    log("EOS_VERIFY_SEED=%d" % seed)
    t0 = time.time()
    with Broker(props=PROPS) as b:
        def act(words):
            """The fault commands' requests, served in this thread (tests/lib/faultsock.py)."""
            if words == ["kill"]:
                pid = b.pid
                b.kill9()
                return "broker (pid %d) killed with -9" % pid
            if words == ["restore"]:
                b.start()
                return "broker started again (pid %d)" % b.pid
            raise ValueError("unknown request %s" % words)

        with FaultServer(act) as fs:
            eos_run(fs, b, seed)
            check(dup_run(fs, b, "read-uncommitted", seed) > 0, "read-uncommitted mode reports aborted duplicates")
            dup_run(fs, b, "idempotent", seed)
    log("total %.1fs" % (time.time() - t0))


main(test)

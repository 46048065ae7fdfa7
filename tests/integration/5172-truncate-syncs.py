"""part_truncate_to() makes every change durable before it returns, in an
order that leaves a prefix of the old log at each step.

SIGKILL keeps the page cache, so this looks at the calls themselves: the
log layer's truncation test (tests/unit/log/test_truncate.c, three cuts of
a partition of several segments, epochs, idempotent and transactional
producers) runs under the LD_PRELOAD shim (tests/lib/syncshim.c) with its
trace on.  Each cut is traced between the files trunc-begin-N and
trunc-end-N it makes around the call.  In each window:

  - every file created or rewritten in the partition directory (a
    .txnindex, leader-epoch-checkpoint.tmp) is fsynced afterwards, and a
    replaced file is renamed into place only after its fsync
  - the cut segment's .log, .index and .timeindex are fsynced
  - every unlink and rename is followed by an fsync of the directory, and
    the directory's fsync is the last call of the cut
  - the cuts at 13 and 5 rewrite leader-epoch-checkpoint (epochs 5, then 2
    start past the new end); the cut at 15 keeps it (epoch 5 starts at 14)
  - snapshot files above the new end are removed, none at or below it
  - segments wholly above the new end are removed with all their files
"""

import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import REPO_ROOT, check, eq, log, main  # noqa: E402
from syncshim import shim_lib  # noqa: E402

CUTS = {15: 15, 13: 12, 5: 4}  # offset asked -> new log end offset


def unit_bin():
    build = os.environ.get("BUILD", "build")
    rel = os.path.join(build, "bin", "unit", "log", "test_truncate")
    path = rel if os.path.isabs(rel) else os.path.join(REPO_ROOT, rel)
    if not os.access(path, os.X_OK):
        subprocess.run(["make", "-s", "-C", REPO_ROOT, "BUILD=" + build, rel], check=True, timeout=600)
    return path


def windows(lines):
    """{offset: [(op, args...)]} of the calls between trunc-begin-N and trunc-end-N."""
    out, cur = {}, None
    for ln in lines:
        parts = ln.split(" ")
        m = re.search(r"/trunc-(begin|end)-(\d+)$", ln) if parts[0] == "open" else None
        if m and m.group(1) == "begin":
            cur = int(m.group(2))
            out[cur] = []
        elif m:
            cur = None
        elif cur is not None:
            out[cur].append(parts)
    return out


def check_window(n, calls):
    pdir = None
    for c in calls:
        if c[0] in ("unlink", "open", "rename") and "/topic-0/" in c[1]:
            pdir = os.path.dirname(c[1])
            break
    check(pdir is not None, "cut at %d touched the partition directory" % n)
    eq(calls[-1], ["fsync", pdir], "last call of the cut at %d" % n)
    for i, c in enumerate(calls):
        later = calls[i + 1:]
        if c[0] == "open":
            check(["fsync", c[1]] in later, "cut at %d: %s made and never fsynced" % (n, c[1]))
        if c[0] in ("unlink", "rename"):
            check(["fsync", pdir] in later, "cut at %d: %s %s without a directory fsync after" % (n, c[0], c[1]))
        if c[0] == "rename":
            check(["fsync", c[1]] in calls[:i], "cut at %d: %s renamed before its fsync" % (n, c[1]))
    end = CUTS[n]
    synced = {os.path.basename(c[1]) for c in calls if c[0] == "fsync"}
    logs = sorted(x for x in synced if x.endswith(".log"))
    eq(len(logs), 1, "cut at %d: one .log fsynced (%r)" % (n, logs))
    base = logs[0][:-4]
    check(int(base) <= end, "cut at %d: the cut segment %s holds the end %d" % (n, base, end))
    check({base + ".index", base + ".timeindex"} <= synced, "cut at %d: indexes of %s fsynced" % (n, base))
    epochs = any(c[0] == "rename" and c[2].endswith("/leader-epoch-checkpoint") for c in calls)
    eq(epochs, n != 15, "cut at %d rewrote leader-epoch-checkpoint" % n)
    gone = [os.path.basename(c[1]) for c in calls if c[0] == "unlink"]
    for g in gone:
        off = int(g[:20])
        if g.endswith(".snapshot"):
            check(off > end, "cut at %d removed snapshot %s" % (n, g))
        elif not g.endswith(".txnindex") or off != int(base):
            check(off > end, "cut at %d removed %s" % (n, g))
    segs = {int(g[:20]) for g in gone if g.endswith(".log")}
    for s in segs:
        check(all("%020d%s" % (s, ext) in gone for ext in (".log", ".index", ".timeindex")),
              "cut at %d: all files of segment %d removed (%r)" % (n, s, gone))
    return len(segs)


def test():
    with tempfile.TemporaryDirectory(prefix="gregor-5172-") as tmp:
        trace = os.path.join(tmp, "trace")
        env = dict(os.environ, LD_PRELOAD=shim_lib(), GREGOR_SYNCSHIM_DIR=tmp, GREGOR_SYNCSHIM_TRACE=trace)
        out = subprocess.run([unit_bin()], env=env, capture_output=True, timeout=300)
        eq(out.returncode, 0, "test_truncate under the shim: %s" % out.stderr.decode(errors="replace")[-3000:])
        with open(trace) as f:
            w = windows(f.read().splitlines())
        eq(sorted(w), sorted(CUTS), "traced cuts")
        removed = {n: check_window(n, calls) for n, calls in w.items()}
        check(removed[5] >= 2, "the cut at 5 removed segments: %r" % removed)
        log("3 cuts: every change fsynced, the directory last; segments removed %r" % removed)


if __name__ == "__main__":
    main(test)

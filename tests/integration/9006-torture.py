#!/usr/bin/python3
"""9006: a short crash-loop torture run (issue 7), so CI exercises it.

Runs tests/torture/torture.py in quick mode: 5 SIGKILLs 0.3..1.0 s apart
(torn tails on), an idempotent librdkafka producer with acks=all and a
read_committed consumer with check.crcs after each restart.  Passes when
torture.py exits 0 (nothing acknowledged lost, duplicated or reordered)
and printed its final counts.  Bounded: ~20-40 s, killed after 90 s.
The long run stays by hand: tests/torture/torture.py --cycles 200.
"""
import os, re, subprocess, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import check, eq, log, main  # noqa: E402

TORTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "torture", "torture.py")


def test():
    cmd = ["/usr/bin/python3", TORTURE, "--cycles", "5", "--min-s", "0.3", "--max-s", "1.0"]
    log("running %s" % " ".join(cmd[1:]))
    try:
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=90)
    except subprocess.TimeoutExpired as e:
        sys.stdout.write((e.stdout or b"").decode(errors="replace"))
        raise AssertionError("torture.py did not finish within 90 s")
    out = r.stdout.decode(errors="replace")
    sys.stdout.write(out)
    cycles = re.findall(r"^cycle +\d+: acknowledged (\d+)", out, re.M)
    final = re.search(r"^final: acknowledged (\d+) found (\d+) lost (\d+) duplicated (\d+) out-of-order (\d+)",
                      out, re.M)
    eq(r.returncode, 0, "torture.py exit status")
    eq(len(cycles), 5, "kill/restart cycles run")
    check(final, "a 'final: acknowledged ...' line")
    acked, found, lost, dup, order = (int(x) for x in final.groups())
    eq((lost, dup, order), (0, 0, 0), "lost, duplicated, out-of-order")
    check(acked > 0 and found >= acked, "acknowledged %d > 0, found %d >= acknowledged" % (acked, found))


main(test)

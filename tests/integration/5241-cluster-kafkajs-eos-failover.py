"""Cluster mode: a kafkajs consume-transform-produce application
(tests/lib/eos-kafkajs.js: sendOffsets in each transaction; after a failure
a new producer, its InitProducerId, then a rewind to the committed offset)
stays exactly-once when the transaction coordinator's broker is killed
with -9 mid-run.

ZooKeeper and three brokers in the chroot /gregor/c241, 3 s ZooKeeper
sessions, min.insync.replicas 2, internal topics of replication factor 3.

  1. an input topic of 3 partitions holds numbered records; the group's
     coordinator is not the transactional id's
  2. the application runs small transactions (20 input records each); after
     its third commit the transaction coordinator's broker is killed with -9
     and, once the application has committed again, started again
  3. the application reaches the input's end; a read_committed reader sees
     every input exactly once in the output, and the group's committed
     offsets are the input's end offsets
"""

import collections
import json
import os
import subprocess
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

import gregor  # noqa: E402
from eoscluster import (SETTINGS, committed, coordinator, end_offsets, isr_full, kill9, leaders,  # noqa: E402
                        numbered, read_values, restart)
from gregor import check, eq, log, main, wait_until  # noqa: E402
from zookeeper import running_cluster, wait_listed  # noqa: E402

CHROOT = "/gregor/c241"
TID = "tx-5241"
SRC = "in5241"
DST = "out5241"
NPARTS = 3
N = 2000
KILL_AFTER = 3
APP = os.path.join(gregor.REPO_ROOT, "tests", "lib", "eos-kafkajs.js")


class AppProc:
    """The node process and the events it prints."""

    def __init__(self, cfg):
        env = dict(os.environ, NODE_PATH=os.path.join(gregor.REPO_ROOT, "tests", "js", "node_modules"))
        self.proc = subprocess.Popen(["node", APP, json.dumps(cfg)], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                                     preexec_fn=gregor._set_pdeathsig)
        self.events = []
        self.other = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            try:
                self.events.append(json.loads(line))
            except ValueError:
                self.other.append(line.decode(errors="replace"))

    def commits(self):
        return sum(1 for e in self.events if "commit" in e)

    def failures(self):
        return [e for e in self.events if "failed" in e]

    def running(self):
        if self.proc.poll() is not None and self.proc.returncode != 0:
            raise AssertionError("the kafkajs application exited with %d: %s %s"
                                 % (self.proc.returncode, self.events[-5:], "".join(self.other)[-2000:]))
        return True


def test():
    with running_cluster((1, 2, 3), CHROOT, **SETTINGS) as (zk, zc, brokers):
        wait_listed(brokers, controller=True)
        bootstrap = ",".join(b.bootstrap for b in brokers)
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for f in admin.create_topics([NewTopic(t, NPARTS, 3) for t in (SRC, DST)]).values():
            f.result(30)
        wait_until(lambda: len(leaders(brokers, SRC)) == NPARTS and len(leaders(brokers, DST)) == NPARTS, 30,
                   "leaders for every partition")
        numbered(bootstrap, SRC, NPARTS, N)
        ends = end_offsets(bootstrap, SRC, NPARTS)
        tcoord = coordinator(brokers, TID, 1)
        group = next(g for g in ("g5241-%d" % i for i in range(50)) if coordinator(brokers, g, 0) != tcoord)
        log("transaction coordinator %d; group '%s' at %d" % (tcoord, group, coordinator(brokers, group, 0)))
        isr_full(brokers, [SRC, DST, "__consumer_offsets", "__transaction_state"])

        app = AppProc({"brokers": [b.bootstrap for b in brokers], "src": SRC, "dst": DST, "group": group,
                       "tid": TID, "ends": {str(p): o for p, o in ends.items()}})
        try:
            wait_until(lambda: app.running() and app.commits() >= KILL_AFTER, 60, "the application's first commits")
            kill9(brokers[tcoord - 1])
            at = app.commits()
            log("broker %d (the transaction coordinator) killed with -9 after %d commits" % (tcoord, at))
            wait_until(lambda: app.running() and app.commits() > at, 60, "a commit after the kill")
            new = coordinator(brokers, TID, 1)
            log("the application committed again; the transactional id moved from %d to %d" % (tcoord, new))
            restart(zc, CHROOT, brokers[tcoord - 1], tcoord)
            eq(app.proc.wait(timeout=130), 0, "the application's exit status (%s)" % app.events[-3:])
        except BaseException:
            log("the application's last events: %s %s" % (app.events[-8:], "".join(app.other)[-2000:]))
            raise
        finally:
            if app.proc.poll() is None:
                app.proc.kill()
                app.proc.wait(timeout=10)
        fails = app.failures()
        log("%d transactions committed, %d failed: %s; rewound to %s"
            % (app.commits(), len(fails), sorted(set(f["error"] for f in fails)),
               [(e["rewound"], e["offset"]) for e in app.events if "rewound" in e]))
        check(app.commits() > at, "transactions committed after the kill")
        got = read_values(bootstrap, DST, NPARTS, N)
        twice = sorted((v for v, n in collections.Counter(got).items() if n > 1), key=lambda v: int(v.split("-")[-1]))
        if twice:
            bad = set(e["partition"] for e in app.failures())
            log("the application's events of partitions %s: %s"
                % (sorted(bad), [e for e in app.events if e.get("partition", e.get("rewound")) in bad]))
        eq(twice, [], "outputs seen more than once")
        eq(sorted(got), sorted("o-v-%d" % i for i in range(N)), "read_committed output: every input once")
        eq(committed(bootstrap, group, SRC, NPARTS), ends, "the group's committed offsets")


if __name__ == "__main__":
    main(test)

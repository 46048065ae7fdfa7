"""Cluster mode: consumer-side idempotence (examples/db-sink: offsets and
results in one SQLite transaction) survives kill -9 of brokers and of the
sink itself.

ZooKeeper and three brokers in the chroot /gregor/c240, 3 s ZooKeeper
sessions, min.insync.replicas 2, internal topics of replication factor 3.

  1. a topic of 3 partitions (replication factor 3); db-sink runs with the
     bootstrap list of all three brokers
  2. numbered records are produced in rounds; while the sink works on
     each round one of these is killed with -9 and started again: the
     group's coordinator's broker, the sink, the leader of a data partition
     on another broker, the sink, the group's coordinator's broker again
     (each broker kill waits for every partition to be back in sync first)
  3. in one more round records trickle in while a second sink on the same
     database joins the group and is killed with -9: the first sink goes
     through two rebalances holding records it has not stored yet
  4. the sink never meets a record twice in one database transaction (it
     exits 1 if it does), and at the end the database holds every record
     exactly once: processed rows, business rows, distinct values, counters
"""

import os
import signal
import sqlite3
import subprocess
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from eoscluster import SETTINGS, coordinator, isr_full, kill9, leaders, numbered, restart  # noqa: E402
from gregor import check, eq, log, main, wait_until  # noqa: E402
from zookeeper import running_cluster, wait_listed  # noqa: E402

CHROOT = "/gregor/c240"
TOPIC = "t5240"
GROUP = "g5240"
NPARTS = 3
ROUND = 1500
TRICKLE = 3000  # the second sink's round: 100 records every 0.25 s
ROUNDS = ("coordinator", "sink", "leader", "second sink", "sink", "coordinator")
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SINK = os.path.join(ROOT, os.environ.get("BUILD", "build"), "bin", "db-sink")


class Sink:
    """The db-sink process and its database."""

    def __init__(self, bootstrap, db, errlog):
        self.cmd = [SINK, "--bootstrap-server", bootstrap, "--topic", TOPIC, "--group", GROUP, "--db", db,
                    "--batch", "20", "--idle-exit-ms", "60000"]
        self.db = db
        self.errlog = errlog
        self.proc = None
        self.starts = 0

    def start(self):
        self.starts += 1
        with open(self.errlog, "a") as f:
            f.write("=== start #%d\n" % self.starts)
            f.flush()
            self.proc = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL, stdout=f, stderr=f)

    def alive(self):
        if self.proc.poll() is not None:
            with open(self.errlog, errors="replace") as f:
                raise AssertionError("db-sink exited with %d on its own:\n%s" % (self.proc.returncode,
                                                                              f.read()[-2000:]))
        return True

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=60)

    def q(self, sql):
        con = sqlite3.connect(self.db, timeout=10)
        try:
            return con.execute(sql).fetchone()[0]
        except sqlite3.OperationalError:
            return 0  # no table yet
        finally:
            con.close()

    def done(self):
        return self.q("SELECT COUNT(*) FROM processed")


def kill_broker(zc, brokers, victim_id, what):
    isr_full(brokers, [TOPIC, "__consumer_offsets"])
    kill9(brokers[victim_id - 1])
    log("%s: broker %d killed with -9" % (what, victim_id))
    restart(zc, CHROOT, brokers[victim_id - 1], victim_id)


def two_sinks(bootstrap, sink, k, total):
    """A second sink on the same database joins the group while records trickle in, and is killed
    with -9 (its partitions come back to the first after session.timeout.ms): two rebalances of a
    sink that holds records not yet stored.  Returns the new total."""
    second = Sink(bootstrap, sink.db, sink.errlog)
    feed = threading.Thread(target=numbered, args=(bootstrap, TOPIC, NPARTS, TRICKLE, total, 0.25))
    feed.start()
    try:
        wait_until(lambda: sink.alive() and sink.done() > total, 60, "the sink working on round %d" % k)
        second.start()
        wait_until(lambda: sink.alive() and second.alive() and sink.done() > total + TRICKLE // 3, 60,
                   "two sinks working on round %d" % k)
        second.kill9()
        log("round %d: a second sink joined the group and was killed with -9 at %d rows" % (k, sink.done()))
    finally:
        feed.join(130)
    return total + TRICKLE


def test():
    check(os.access(SINK, os.X_OK), "db-sink is built at %s" % SINK)
    with running_cluster((1, 2, 3), CHROOT, **SETTINGS) as (zk, zc, brokers):
        wait_listed(brokers, controller=True)
        bootstrap = ",".join(b.bootstrap for b in brokers)
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic(TOPIC, NPARTS, 3)])[TOPIC].result(30)
        wait_until(lambda: len(leaders(brokers, TOPIC)) == NPARTS, 30, "leaders for every partition")
        sink = Sink(bootstrap, os.path.join(brokers[0].tmp, "sink.db"), os.path.join(brokers[0].tmp, "sink.err"))
        sink.start()
        total = 0
        for k, what in enumerate(ROUNDS):
            if what == "second sink":
                total = two_sinks(bootstrap, sink, k, total)
                continue
            numbered(bootstrap, TOPIC, NPARTS, ROUND, total)
            total += ROUND
            wait_until(lambda: sink.alive() and sink.done() > total - ROUND, 60, "the sink working on round %d" % k)
            gc = coordinator(brokers, GROUP, 0)
            if what == "sink":
                sink.kill9()
                log("round %d: the sink killed with -9 at %d rows" % (k, sink.done()))
                sink.start()
            elif what == "coordinator":
                kill_broker(zc, brokers, gc, "round %d, the group's coordinator" % k)
            else:
                lead = next(n for p, n in sorted(leaders(brokers, TOPIC).items()) if n != gc)
                kill_broker(zc, brokers, lead, "round %d, a data partition's leader (not %d)" % (k, gc))
        wait_until(lambda: sink.alive() and sink.done() >= total, 90, "every record in the database")
        eq(sink.stop(), 0, "db-sink exit status after SIGTERM")
        counts = (sink.q("SELECT COUNT(*) FROM processed"), sink.q("SELECT COUNT(*) FROM messages"),
                  sink.q("SELECT COUNT(DISTINCT value) FROM messages"),
                  sink.q("SELECT COALESCE(SUM(n), 0) FROM counters"))
        log("db-sink over %d starts: processed %d, messages %d, distinct %d, counters %d"
            % ((sink.starts,) + counts))
        eq(counts, (total, total, total, total), "(processed, messages, distinct values, counter sum)")
        eq(sink.q("SELECT COUNT(*) FROM messages WHERE CAST(SUBSTR(value, 3) AS INTEGER) BETWEEN 0 AND %d"
                  % (total - 1)), total, "values v-0 .. v-%d" % (total - 1))


if __name__ == "__main__":
    main(test)

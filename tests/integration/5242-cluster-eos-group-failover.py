"""Cluster mode: confluent_kafka consume-transform-produce stays exactly-once
when the group's coordinator's broker is killed with -9 mid-transaction, so
that TxnOffsetCommit has to find the group's new coordinator.

ZooKeeper and three brokers in the chroot /gregor/c242, 3 s ZooKeeper
sessions, min.insync.replicas 2, internal topics of replication factor 3.

  1. an input topic of 3 partitions holds numbered records; a group whose
     coordinator is not the transactional id's coordinator
  2. the application consumes a batch, produces 'o-<value>' to the output
     topic and sends the consumer's positions in the same transaction, as
     Kafka's EOS applications do; on an abortable error it aborts and
     rewinds to the group's committed offsets, on a fatal one it also makes
     a new producer (init_transactions fences the old epoch)
  3. in the third transaction, after its records are acknowledged and before
     send_offsets_to_transaction, the group's coordinator's broker is killed
     with -9, and started again after the next commit; in the eighth, the
     (new) group coordinator's broker is killed after
     send_offsets_to_transaction returned and before commit_transaction, so
     the new coordinator must have the staged offsets and apply them at the
     COMMIT marker (this broker may be the transaction coordinator too)
  4. a read_committed reader sees every input exactly once in the output,
     and the group's committed offsets are the input's end offsets
"""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from eoscluster import (SETTINGS, committed, coordinator, end_offsets, isr_full, kill9, leaders,  # noqa: E402
                        numbered, read_values, restart)
from gregor import check, eq, log, main, wait_until  # noqa: E402
from zookeeper import running_cluster, wait_listed  # noqa: E402

CHROOT = "/gregor/c242"
TID = "tx-5242"
SRC = "in5242"
DST = "out5242"
NPARTS = 3
N = 3000
KILLS = ((3, "acked"), (8, "offsets sent"))  # (transaction, point): where the group's coordinator dies


class App:
    """The consume-transform-produce application."""

    def __init__(self, bootstrap, group):
        self.bootstrap = bootstrap
        self.c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                           "auto.offset.reset": "earliest", "isolation.level": "read_committed",
                           "session.timeout.ms": 10000, "heartbeat.interval.ms": 500,
                           "topic.metadata.refresh.interval.ms": 1000})
        self.c.subscribe([SRC])
        self.p = self.producer()
        self.aborts = 0
        self.fenced = 0
        self.commits = 0

    def producer(self):
        p = Producer({"bootstrap.servers": self.bootstrap, "transactional.id": TID, "linger.ms": 5,
                      "transaction.timeout.ms": 60000, "topic.metadata.refresh.interval.ms": 1000})
        p.init_transactions(60)
        return p

    def rewind(self):
        """Back to the group's committed offsets (the beginning where none)."""
        parts = self.c.assignment()
        if parts:
            for tp in self.c.committed(parts, timeout=60):
                self.c.seek(TopicPartition(SRC, tp.partition, tp.offset if tp.offset >= 0 else 0))

    def fail(self, e):
        err = e.args[0]
        if err.txn_requires_abort():
            self.aborts += 1
            self.p.abort_transaction(60)
        elif not err.retriable():
            self.fenced += 1
            self.p = self.producer()
        log("transaction %d failed (%s): %s" % (self.commits + 1, err.name(),
                                                "aborted" if err.txn_requires_abort() else "new producer"))
        self.rewind()

    def step(self, kill=None):
        """One transaction over the next batch; kill=(point, fn) calls fn at point ('acked': the records
        acknowledged, 'offsets sent': send_offsets_to_transaction returned).  False if there was no input."""
        msgs = [m for m in self.c.consume(num_messages=100, timeout=1) if not m.error()]
        if not msgs:
            return False
        try:
            self.p.begin_transaction()
            for m in msgs:
                self.p.produce(DST, value=b"o-" + m.value(), partition=m.partition())
            eq(self.p.flush(60), 0, "records left unsent")
            if kill and kill[0] == "acked":
                kill[1]()
            self.p.send_offsets_to_transaction(self.c.position(self.c.assignment()),
                                               self.c.consumer_group_metadata(), 60)
            if kill and kill[0] == "offsets sent":
                kill[1]()
            self.commit()
        except KafkaException as e:
            self.fail(e)
        return True

    def commit(self):
        for attempt in range(5):
            try:
                self.p.commit_transaction(60)
                self.commits += 1
                return
            except KafkaException as e:
                if not e.args[0].retriable() or e.args[0].txn_requires_abort() or attempt == 4:
                    raise


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
        tcoord = coordinator(brokers, TID, 1)
        group = next(g for g in ("g5242-%d" % i for i in range(50)) if coordinator(brokers, g, 0) != tcoord)
        gcoord = coordinator(brokers, group, 0)
        log("transaction coordinator %d; group '%s' at %d" % (tcoord, group, gcoord))
        isr_full(brokers, [SRC, DST, "__consumer_offsets", "__transaction_state"])
        app = App(bootstrap, group)
        plan = list(KILLS)
        killed = []  # (broker id, commits when killed)

        def kill_group_coordinator(point):
            plan.pop(0)
            victim = coordinator(brokers, group, 0)
            kill9(brokers[victim - 1])
            killed.append((victim, app.commits))
            log("transaction %d open, %s: broker %d (the group's coordinator%s) killed with -9"
                % (app.commits + 1, point, victim, ", the transaction's too" if victim == tcoord else ""))
        try:
            ends = end_offsets(bootstrap, SRC, NPARTS)
            deadline = time.monotonic() + 150
            while time.monotonic() < deadline:
                kill = None
                if plan and app.commits + 1 >= plan[0][0] and all(b.alive() for b in brokers):
                    isr_full(brokers, [SRC, DST, "__consumer_offsets", "__transaction_state"])
                    point = plan[0][1]
                    kill = (point, lambda: kill_group_coordinator(point))  # pops the plan once done
                app.step(kill)
                down = [(v, at) for v, at in killed if brokers[v - 1].proc is None]
                if down and app.commits > down[0][1]:
                    restart(zc, CHROOT, brokers[down[0][0] - 1], down[0][0])
                    log("broker %d started again" % down[0][0])
                done = {tp.partition: tp.offset for tp in app.c.position(app.c.assignment())}
                if not plan and all(b.alive() for b in brokers) and done == ends and \
                        committed(bootstrap, group, SRC, NPARTS) == ends:
                    break
            check(time.monotonic() < deadline, "the application reached the input's end in time")
        finally:
            app.c.close()
        new = coordinator(brokers, group, 0)
        log("%d transactions committed, %d aborted, %d new producers; the group moved from %d to %d"
            % (app.commits, app.aborts, app.fenced, gcoord, new))
        eq(len(killed), len(KILLS), "kills")
        check(app.commits > killed[-1][1], "transactions committed after the last kill")
        got = read_values(bootstrap, DST, NPARTS, N)
        want = ["o-v-%d" % i for i in range(N)]
        eq(len(got) - len(set(got)), 0, "outputs seen more than once")
        eq(sorted(got), sorted(want), "read_committed output: every input once")
        eq(committed(bootstrap, group, SRC, NPARTS), ends, "the group's committed offsets")


if __name__ == "__main__":
    main(test)

"""Cluster mode: gregor-consumer-groups and gregor-transactions reach the
coordinator that owns the answer, not only the broker they bootstrap from.

ZooKeeper and three brokers in the chroot /gregor/c243; __consumer_offsets
and __transaction_state of 5 partitions, replication factor 3.

  1. three groups coordinated by brokers 1, 2 and 3 commit offsets (5, 6,
     7 on each of 3 partitions); the one on broker 3 keeps a live member
  2. with broker 1 alone as --bootstrap-server, and again with the list of
     all three: --list and --list --state show all three groups;
     --describe shows each one's committed offsets, log end and lag (and
     the live member's partitions)
  3. --reset-offsets --execute of the group coordinated by broker 2 moves
     its committed offsets (seen by a consumer through broker 3)
  4. a transactional id coordinated by broker 2 or 3 with an open
     transaction: gregor-transactions list names its coordinator and state,
     describe its state and partition, through broker 1
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from eoscluster import SETTINGS, committed, coordinator, leaders, numbered  # noqa: E402
from gregor import build_bin, check, eq, log, main, run, wait_until  # noqa: E402
from zookeeper import running_cluster, wait_listed  # noqa: E402

CHROOT = "/gregor/c243"
TOPIC = "t5243"
NPARTS = 3
GROUPS_TOOL = build_bin("gregor-consumer-groups")
TXN_TOOL = build_bin("gregor-transactions")


def tool(exe, bootstrap, *args):
    p = run([exe, "--bootstrap-server", bootstrap] + list(args), timeout_s=60, check_rc=False)
    out, err = p.stdout.decode(), p.stderr.decode()
    eq(p.returncode, 0, "exit status of %s %s (%s)" % (os.path.basename(exe), " ".join(args), err.strip()))
    return out


def table(out):
    return [line.split() for line in out.splitlines() if line.strip()][1:]


def group_on(brokers, node, prefix, key_type=0):
    return next(g for g in ("%s-%d" % (prefix, i) for i in range(200)) if coordinator(brokers, g, key_type) == node)


def commit(bootstrap, group, offset, live=False):
    """Commits offset on every partition as a member of group; returns the consumer if live."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                  "client.id": "c-" + group, "auto.offset.reset": "earliest"})
    c.subscribe([TOPIC])
    wait_until(lambda: c.poll(0.2) is None and len(c.assignment()) == NPARTS, 30, group + "'s assignment")
    c.commit(offsets=[TopicPartition(TOPIC, p, offset) for p in range(NPARTS)], asynchronous=False)
    if live:
        return c
    c.close()
    return None


def check_groups(bootstrap, groups, live):
    eq(sorted(g for g in tool(GROUPS_TOOL, bootstrap, "--list").split() if g.startswith("g5243")),
       sorted(groups.values()), "--list through %s" % bootstrap)
    states = {r[0]: r[1] for r in table(tool(GROUPS_TOOL, bootstrap, "--list", "--state"))}
    eq([states.get(groups[n]) for n in (1, 2, 3)], ["Empty", "Empty", "Stable"], "--list --state")
    for node, g in sorted(groups.items()):
        rows = [r for r in table(tool(GROUPS_TOOL, bootstrap, "--describe", "--group", g)) if r[0] == g]
        eq([r[1:6] for r in rows], [[TOPIC, str(p), str(4 + node), "20", str(16 - node)] for p in range(NPARTS)],
           "--describe %s (coordinator %d) through %s" % (g, node, bootstrap))
        if g == live:
            check(all(r[-1] == "c-" + g for r in rows), "the live member owns every partition: %s" % rows)


def test():
    with running_cluster((1, 2, 3), CHROOT, **SETTINGS) as (zk, zc, brokers):
        wait_listed(brokers, controller=True)
        everyone = ",".join(b.bootstrap for b in brokers)
        first = brokers[0].bootstrap
        admin = AdminClient({"bootstrap.servers": everyone})
        admin.create_topics([NewTopic(TOPIC, NPARTS, 3)])[TOPIC].result(30)
        wait_until(lambda: len(leaders(brokers, TOPIC)) == NPARTS, 30, "leaders for every partition")
        numbered(everyone, TOPIC, NPARTS, 20 * NPARTS)
        groups = {n: group_on(brokers, n, "g5243") for n in (1, 2, 3)}
        log("groups by coordinator: %s" % groups)
        consumers = [commit(everyone, groups[n], 4 + n, live=(n == 3)) for n in (1, 2, 3)]
        live = groups[3]
        try:
            for bootstrap in (first, everyone):
                check_groups(bootstrap, groups, live)
            log("--list, --list --state, --describe of groups on every broker through %s" % first)
            out = tool(GROUPS_TOOL, first, "--reset-offsets", "--group", groups[2], "--topic", TOPIC,
                       "--to-offset", "3", "--execute")
            eq(table(out), [[groups[2], TOPIC, str(p), "3"] for p in range(NPARTS)], "--reset-offsets")
            eq(committed(brokers[2].bootstrap, groups[2], TOPIC, NPARTS), {p: 3 for p in range(NPARTS)},
               "the reset offsets of %s (coordinator 2) read through broker 3" % groups[2])
            log("--reset-offsets of a group coordinated by broker 2 through broker 1")
        finally:
            for c in consumers:
                if c is not None:
                    c.close()

        tid = group_on(brokers, 2, "tx5243", 1)
        p = Producer({"bootstrap.servers": everyone, "transactional.id": tid})
        p.init_transactions(30)
        p.begin_transaction()
        p.produce(TOPIC, value=b"open", partition=1)
        eq(p.flush(30), 0, "records left unsent")
        rows = [r for r in table(tool(TXN_TOOL, first, "list")) if r[0] == tid]
        eq([(r[1], r[3]) for r in rows], [("2", "Ongoing")], "gregor-transactions list: %s's coordinator" % tid)
        rows = table(tool(TXN_TOOL, first, "describe", "--transactional-id", tid))
        eq(len(rows), 1, "describe: one row")
        eq((rows[0][0], rows[0][1], rows[0][4], rows[0][-1]), ("2", tid, "Ongoing", TOPIC + "-1"),
           "gregor-transactions describe %s through broker 1" % tid)
        p.abort_transaction(30)
        log("gregor-transactions list / describe of %s (coordinator 2) through broker 1" % tid)


if __name__ == "__main__":
    main(test)

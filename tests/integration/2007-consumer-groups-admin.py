"""Group administration: gregor-consumer-groups (librdkafka Admin API:
ListConsumerGroups, DescribeConsumerGroups, ListConsumerGroupOffsets,
AlterConsumerGroupOffsets, DeleteGroups) and confluent-kafka's legacy
AdminClient.list_groups() (ListGroups v0 + DescribeGroups v0, what
rd_kafka_list_groups() and kcat-style tools use), against exact output:
list, list --state, describe with offsets / log end / lag / owner, reset
refused while the group is active, reset to earliest / an offset / latest
(dry run and --execute), delete (refused while active, then done),
describing a deleted group, usage errors (exit 2)."""

import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import REPO_ROOT, Broker, eq, check, log, main  # noqa: E402

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

TOPIC = "itest-cg"
GROUP = "itest-2007"
TOOL = os.path.join(REPO_ROOT, os.environ.get("BUILD", "build"), "bin", "gregor-consumer-groups")


def tool(b, *args, rc=0):
    p = subprocess.run([TOOL, "--bootstrap-server", b.bootstrap] + list(args), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=60)
    eq(p.returncode, rc, "exit status of gregor-consumer-groups %s (stderr %r)" % (" ".join(args), p.stderr[-500:]))
    return p.stdout, p.stderr


def table(out):
    """Rows of whitespace-separated words after the header line starting with GROUP."""
    lines = [ln.split() for ln in out.splitlines() if ln.strip()]
    start = [i for i, w in enumerate(lines) if w[0] == "GROUP"][0]
    return lines[start + 1:]


def committed(b, parts=(0, 1)):
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": GROUP})
    got = [tp.offset for tp in c.committed([TopicPartition(TOPIC, p) for p in parts], timeout=10)]
    c.close()
    return got


def test():
    check(os.access(TOOL, os.X_OK), "%s is built" % TOOL)
    with Broker(overrides={"group.initial.rebalance.delay.ms": "0"}) as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        admin.create_topics([NewTopic(TOPIC, 2, 1)])[TOPIC].result(15)
        p = Producer({"bootstrap.servers": b.bootstrap})
        for i in range(10):
            p.produce(TOPIC, value=b"x", partition=i % 2)
        p.flush(10)

        c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": GROUP, "client.id": "cg-client",
                      "enable.auto.commit": False, "session.timeout.ms": 6000})
        c.subscribe([TOPIC])
        deadline = time.monotonic() + 30
        while len(c.assignment()) != 2:
            check(time.monotonic() < deadline, "consumer assigned")
            c.poll(0.2)
        c.commit(offsets=[TopicPartition(TOPIC, 0, 2), TopicPartition(TOPIC, 1, 5)], asynchronous=False)

        eq(tool(b, "--list")[0].split(), [GROUP], "--list")
        eq(table(tool(b, "--list", "--state")[0]), [[GROUP, "Stable"]], "--list --state")
        legacy = {g.id: g for g in admin.list_groups(timeout=10)}
        eq((legacy[GROUP].state, legacy[GROUP].protocol_type, legacy[GROUP].protocol), ("Stable", "consumer", "range"),
           "legacy list_groups")
        eq([m.client_id for m in legacy[GROUP].members], ["cg-client"], "legacy list_groups members")
        rows = table(tool(b, "--describe", "--group", GROUP)[0])
        member = legacy[GROUP].members[0].id
        eq(rows, [[GROUP, TOPIC, "0", "2", "5", "3", member, "/127.0.0.1", "cg-client"],
                  [GROUP, TOPIC, "1", "5", "5", "0", member, "/127.0.0.1", "cg-client"]], "--describe")
        out, err = tool(b, "--reset-offsets", "--group", GROUP, "--all-topics", "--to-earliest", "--execute", rc=1)
        check("current state is Stable" in err, "reset refused while active: %r" % err)
        out, _ = tool(b, "--delete", "--group", GROUP, rc=1)
        check("NON_EMPTY_GROUP" in out, "delete refused while active: %r" % out)
        c.close()
        log("list / describe / refusals verified")

        eq(table(tool(b, "--reset-offsets", "--group", GROUP, "--topic", TOPIC, "--to-earliest", "--execute")[0]),
           [[GROUP, TOPIC, "0", "0"], [GROUP, TOPIC, "1", "0"]], "reset --to-earliest")
        eq(committed(b), [0, 0], "committed after --to-earliest")
        eq(table(tool(b, "--reset-offsets", "--group", GROUP, "--topic", TOPIC + ":1", "--to-offset", "3",
                      "--execute")[0]), [[GROUP, TOPIC, "1", "3"]], "reset --to-offset")
        eq(committed(b), [0, 3], "committed after --to-offset")
        out, _ = tool(b, "--reset-offsets", "--group", GROUP, "--all-topics", "--to-latest")
        eq(table(out)[:2], [[GROUP, TOPIC, "0", "5"], [GROUP, TOPIC, "1", "5"]], "reset --to-latest (dry run)")
        eq(committed(b), [0, 3], "committed after a dry run")
        out, _ = tool(b, "--describe", "--group", GROUP)
        check("has no active members" in out, "describe of an empty group: %r" % out)
        eq(table(out), [[GROUP, TOPIC, "0", "0", "5", "5", "-", "-", "-"],
                        [GROUP, TOPIC, "1", "3", "5", "2", "-", "-", "-"]], "--describe of the empty group")
        eq(tool(b, "--delete", "--group", GROUP)[0].strip(),
           "Deletion of requested consumer groups ('%s') was successful." % GROUP, "--delete")
        eq(tool(b, "--list")[0].split(), [], "--list after delete")
        _, err = tool(b, "--describe", "--group", GROUP, rc=1)
        eq(err.strip(), "Error: Consumer group '%s' does not exist." % GROUP, "describe a deleted group")
        eq(committed(b), [-1001, -1001], "committed offsets after delete")
        log("reset / delete verified")

        tool(b, "--list", "--describe", rc=2)
        tool(b, "--describe", rc=2)
        tool(b, "--reset-offsets", "--group", GROUP, "--all-topics", rc=2)
        tool(b, "--no-such-flag", rc=2)
        log("usage errors verified")


main(test)

"""Cluster mode: a partition moved to another broker (KIP-455), with data.

ZooKeeper and three brokers in the chroot /gregor/c143 (docs/cluster.md, "Partition reassignment"):

  1. topic 'mv' (1 partition, replication factor 1 on broker 1) gets 3000 records (acks=all)
  2. gregor-reassign-partitions --generate for broker 2 prints the current assignment and
     the proposal in Kafka's JSON; --execute of the move to [2] prints the current
     assignment for rollback and "Successfully started partition reassignments for mv-0"
  3. the move completes: /brokers/topics/mv is {"0":[2]} with no adding/removing, broker 2
     leads with a higher leader epoch, --verify says "Reassignment of partition mv-0 is
     completed.", broker 1's mv-0 directory is gone (StopReplica with delete) and every
     record is read back from broker 2
  4. Kafka's errors: an unknown topic or partition UNKNOWN_TOPIC_OR_PARTITION, an unknown
     or repeated broker INVALID_REPLICA_ASSIGNMENT, a cancel of nothing
     NO_REASSIGNMENT_IN_PROGRESS, a broker that is not the controller NOT_CONTROLLER (and
     ListPartitionReassignments there too)
"""

import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from gregor import build_bin, check, eq, log, main, run, wait_until  # noqa: E402
from reassign import alter_reassignments, controller, list_reassignments, topic_doc, wait_reassigned  # noqa: E402
from replicas import state  # noqa: E402
from zookeeper import running_cluster, wait_listed  # noqa: E402

CHROOT = "/gregor/c143"
N = 3000
UNKNOWN_TOPIC_OR_PARTITION, INVALID_REPLICA_ASSIGNMENT, NOT_CONTROLLER, NO_REASSIGNMENT = 3, 39, 41, 85


def produce(b, topic):
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all", "linger.ms": 5})
    errors = []
    for i in range(N):
        p.produce(topic, value=b"r%05d" % i, partition=0, on_delivery=lambda e, m: e and errors.append(e))
        if i % 500 == 0:
            p.poll(0)
    check(p.flush(30) == 0, "every record acknowledged")
    eq(errors, [], "delivery errors")


def read_all(b, topic):
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "g-" + topic, "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, 0)])
    got = []
    wait_until(lambda: got.extend(m.value() for m in c.consume(500, 1.0) if not m.error()) or len(got) >= N, 60,
               "every record read back")
    c.close()
    return got


def tool(b, *args):
    return run([build_bin("gregor-reassign-partitions"), "--bootstrap-server", b.bootstrap] + list(args),
               check_rc=False)


def test():
    with running_cluster(chroot=CHROOT, zookeeper_session_timeout_ms=6000) as (zk, zc, brokers):
        by_id = {1: brokers[0], 2: brokers[1], 3: brokers[2]}
        wait_listed(brokers)
        admin = AdminClient({"bootstrap.servers": brokers[0].bootstrap})
        admin.create_topics([NewTopic("mv", num_partitions=1, replica_assignment=[[1]])], operation_timeout=15)["mv"].result(30)
        wait_until(lambda: state(zc, CHROOT, "mv", 0)[0], 20, "mv-0 has a leader")
        produce(brokers[0], "mv")
        check(os.path.isdir(brokers[0].partition_dir("mv")), "broker 1 holds mv-0")

        tmp = tempfile.mkdtemp()
        with open(os.path.join(tmp, "topics.json"), "w") as f:
            json.dump({"version": 1, "topics": [{"topic": "mv"}]}, f)
        out = tool(brokers[2], "--topics-to-move-json-file", os.path.join(tmp, "topics.json"), "--broker-list", "2",
                   "--generate")
        eq(out.returncode, 0, "--generate exit status")
        lines = out.stdout.decode().splitlines()
        log("--generate:\n" + out.stdout.decode())
        eq(lines[0], "Current partition replica assignment", "--generate first line")
        eq(json.loads(lines[1]), {"version": 1, "partitions": [{"topic": "mv", "partition": 0, "replicas": [1],
                                                                "log_dirs": ["any"]}]}, "current assignment")
        eq(lines[3], "Proposed partition reassignment configuration", "--generate proposal line")
        proposal = json.loads(lines[4])
        eq(proposal["partitions"][0]["replicas"], [2], "proposed replicas")
        with open(os.path.join(tmp, "plan.json"), "w") as f:
            f.write(lines[4])

        out = tool(brokers[2], "--reassignment-json-file", os.path.join(tmp, "plan.json"), "--execute")
        text = out.stdout.decode()
        log("--execute:\n" + text)
        eq(out.returncode, 0, "--execute exit status")
        check(text.startswith("Current partition replica assignment\n\n"), "--execute prints the current assignment")
        check("Save this to use as the --reassignment-json-file option during rollback" in text, "rollback hint")
        check("Successfully started partition reassignments for mv-0" in text, "--execute success line")

        st = wait_reassigned(zc, CHROOT, by_id, "mv", 0, [2])
        eq(st["leader"], 2, "mv-0's leader after the move")
        check(st["leader_epoch"] >= 1, "the leader epoch moved on")
        doc = topic_doc(zc, CHROOT, "mv")
        eq((doc["adding_replicas"], doc["removing_replicas"]), ({}, {}), "adding/removing cleared")
        wait_until(lambda: not os.path.exists(brokers[0].partition_dir("mv")), 20, "broker 1's mv-0 deleted")
        wait_until(lambda: b"is completed" in tool(brokers[0], "--reassignment-json-file",
                                                   os.path.join(tmp, "plan.json"), "--verify").stdout, 20,
                   "--verify completed")
        out = tool(brokers[0], "--reassignment-json-file", os.path.join(tmp, "plan.json"), "--verify")
        eq(out.stdout.decode(), "Status of partition reassignment:\nReassignment of partition mv-0 is completed.\n",
           "--verify output")
        got = read_all(brokers[1], "mv")
        eq(got, [b"r%05d" % i for i in range(N)], "records read from broker 2")

        ctl = controller(zc, CHROOT)
        cport = by_id[ctl].port
        other = next(b for i, b in by_id.items() if i != ctl)
        top, res = alter_reassignments(cport, {("nope", 0): [1], ("mv", 5): [1], ("mv", 0): [9]})
        eq(top, 0, "top-level error")
        eq(res, {("nope", 0): UNKNOWN_TOPIC_OR_PARTITION, ("mv", 5): UNKNOWN_TOPIC_OR_PARTITION,
                 ("mv", 0): INVALID_REPLICA_ASSIGNMENT}, "per-partition errors")
        eq(alter_reassignments(cport, {("mv", 0): [2, 2]})[1], {("mv", 0): INVALID_REPLICA_ASSIGNMENT}, "repeated")
        eq(alter_reassignments(cport, {("mv", 0): None})[1], {("mv", 0): NO_REASSIGNMENT}, "cancel of none")
        eq(alter_reassignments(other.port, {("mv", 0): [1]})[0], NOT_CONTROLLER, "not the controller")
        eq(list_reassignments(other.port)[0], NOT_CONTROLLER, "list on another broker")
        eq(list_reassignments(cport), (0, {}), "nothing under way")
        eq(topic_doc(zc, CHROOT, "mv")["partitions"], {"0": [2]}, "refused requests changed nothing")


if __name__ == "__main__":
    main(test)

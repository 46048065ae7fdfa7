"""Cluster mode: reassignments under way, cancelled, resumed by a new controller, and
Kafka's older /admin/reassign_partitions input.

ZooKeeper and three brokers in the chroot /gregor/c144 (docs/cluster.md, "Partition reassignment"):

  1. topic 'fl' (2 partitions, replication factor 1, both on the broker B that is neither the
     controller nor T) holds records; T, the target, is SIGSTOPped so it cannot catch up
  2. AlterPartitionReassignments of fl-0 and fl-1 to [T]: ListPartitionReassignments on the
     controller shows both (replicas [T, B], adding [T], removing [B]), filtered by partition
     when asked; `gregor-reassign-partitions --list` prints them; the topic znode holds them
  3. fl-1 is cancelled (null replicas, and `--cancel`): its znode entry is [B] again, it is no
     longer listed, fl-0 still is
  4. the controller is killed (-9): the new controller lists fl-0 from the znodes; T is
     resumed and fl-0 moves to [T] under the new controller with every record; B, which
     still holds fl-1 (a topic is held as one range of partitions), empties its fl-0
  5. /admin/reassign_partitions (version 1 JSON) written with kazoo moves fl-1 to [T] too, and
     the znode is deleted once taken; written again (malformed) it is seen and deleted too
"""

import json
import os
import signal
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from gregor import build_bin, check, eq, log, main, run, wait_until  # noqa: E402
from reassign import alter_reassignments, controller, list_reassignments, log_bytes, topic_doc, wait_reassigned  # noqa: E402,E501
from replicas import state  # noqa: E402
from zookeeper import running_cluster, wait_listed  # noqa: E402

CHROOT = "/gregor/c144"
N = 500


def produce(b):
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all"})
    for i in range(N):
        p.produce("fl", value=b"v%04d" % i, partition=i % 2)
    check(p.flush(30) == 0, "every record acknowledged")


def read_all(b, p):
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "g%d" % p, "enable.auto.commit": False})
    c.assign([TopicPartition("fl", p, 0)])
    got = []
    wait_until(lambda: got.extend(m.value() for m in c.consume(500, 1.0) if not m.error()) or len(got) >= N // 2,
               60, "fl-%d read back" % p)
    c.close()
    return got


def tool(b, *args):
    return run([build_bin("gregor-reassign-partitions"), "--bootstrap-server", b.bootstrap] + list(args),
               check_rc=False)


def test():
    with running_cluster(chroot=CHROOT, zookeeper_session_timeout_ms=6000) as (zk, zc, brokers):
        by_id = {1: brokers[0], 2: brokers[1], 3: brokers[2]}
        wait_listed(brokers)
        ctl = controller(zc, CHROOT)
        src, tgt = [i for i in (1, 2, 3) if i != ctl]
        log("controller %d, source %d, target %d" % (ctl, src, tgt))
        admin = AdminClient({"bootstrap.servers": by_id[src].bootstrap})
        admin.create_topics([NewTopic("fl", num_partitions=2, replica_assignment=[[src], [src]])],
                            operation_timeout=15)["fl"].result(30)
        wait_until(lambda: all(state(zc, CHROOT, "fl", p)[0] for p in (0, 1)), 20, "fl has leaders")
        produce(by_id[src])

        os.kill(by_id[tgt].pid, signal.SIGSTOP)
        try:
            top, res = alter_reassignments(by_id[ctl].port, {("fl", 0): [tgt], ("fl", 1): [tgt]})
            eq((top, res), (0, {("fl", 0): 0, ("fl", 1): 0}), "reassignments started")
            moving = ([tgt, src], [tgt], [src])
            wait_until(lambda: list_reassignments(by_id[ctl].port) == (0, {("fl", 0): moving, ("fl", 1): moving}),
                       10, "both listed as under way")
            eq(list_reassignments(by_id[ctl].port, {"fl": [1]}), (0, {("fl", 1): moving}), "listed by partition")
            out = tool(by_id[src], "--list").stdout.decode()
            eq(out, "Current partition reassignments:\nfl-0: replicas: %d,%d. adding: %d. removing: %d.\n"
                    "fl-1: replicas: %d,%d. adding: %d. removing: %d.\n" % ((tgt, src, tgt, src) * 2), "--list")
            doc = topic_doc(zc, CHROOT, "fl")
            eq((doc["partitions"], doc["adding_replicas"], doc["removing_replicas"]),
               ({"0": [tgt, src], "1": [tgt, src]}, {"0": [tgt], "1": [tgt]}, {"0": [src], "1": [src]}),
               "the topic znode")

            tmp = tempfile.mkdtemp()
            plan = os.path.join(tmp, "fl1.json")
            with open(plan, "w") as f:
                json.dump({"version": 1, "partitions": [{"topic": "fl", "partition": 1, "replicas": [tgt]}]}, f)
            out = tool(by_id[src], "--reassignment-json-file", plan, "--cancel")
            eq((out.returncode, out.stdout.decode()), (0, "Successfully cancelled partition reassignments for: fl-1\n"),
               "--cancel")
            doc = topic_doc(zc, CHROOT, "fl")
            eq((doc["partitions"]["1"], doc["adding_replicas"].get("1")), ([src], None), "fl-1 reverted")
            wait_until(lambda: list_reassignments(by_id[ctl].port) == (0, {("fl", 0): moving}), 10,
                       "only fl-0 listed")
            out = tool(by_id[src], "--reassignment-json-file", plan, "--verify").stdout.decode()
            check("There is no active reassignment of partition fl-1, but replica set is %d rather than %d." %
                  (src, tgt) in out, "--verify of the cancelled one: " + out)

            log("kill -9 of controller %d" % ctl)
            by_id[ctl].kill9()
            wait_until(lambda: controller(zc, CHROOT) not in (None, ctl), 20,
                       "a new controller")
            nctl = controller(zc, CHROOT)
            wait_until(lambda: list_reassignments(by_id[nctl].port) == (0, {("fl", 0): moving}), 20,
                       "the new controller lists fl-0")
        finally:
            os.kill(by_id[tgt].pid, signal.SIGCONT)
        wait_reassigned(zc, CHROOT, by_id, "fl", 0, [tgt])
        check(os.path.exists(by_id[src].partition_dir("fl", 1)), "the source still holds fl-1")
        wait_until(lambda: log_bytes(by_id[src], "fl", 0) == 0, 20,
                   "fl-0's records deleted on the source (it holds fl-1, so the topic stays)")
        eq(read_all(by_id[tgt], 0), [b"v%04d" % i for i in range(0, N, 2)], "fl-0 read from the target")

        zc.create(CHROOT + "/admin/reassign_partitions",
                  json.dumps({"version": 1, "partitions": [{"topic": "fl", "partition": 1,
                                                            "replicas": [tgt]}]}).encode())
        wait_until(lambda: not zc.exists(CHROOT + "/admin/reassign_partitions"), 20,
                   "/admin/reassign_partitions taken and deleted")
        wait_reassigned(zc, CHROOT, by_id, "fl", 1, [tgt])
        wait_until(lambda: not os.path.exists(by_id[src].partition_dir("fl", 1)), 20,
                   "the source's copies of fl deleted")
        eq(read_all(by_id[tgt], 1), [b"v%04d" % i for i in range(1, N, 2)], "fl-1 read from the target")
        zc.create(CHROOT + "/admin/reassign_partitions", b'{"version":1,"partitions":[{"topic":"fl"}]}')
        wait_until(lambda: not zc.exists(CHROOT + "/admin/reassign_partitions"), 20,
                   "a second, malformed /admin/reassign_partitions seen and deleted")
        eq(topic_doc(zc, CHROOT, "fl")["partitions"], {"0": [tgt], "1": [tgt]}, "nothing changed by it")
        by_id[ctl].start()


if __name__ == "__main__":
    main(test)

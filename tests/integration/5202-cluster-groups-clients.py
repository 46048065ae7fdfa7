"""Cluster mode: kafka-python and kafkajs consumer groups work through a
bootstrap list of the three brokers, their coordinators being the leaders
of their __consumer_offsets partitions.

ZooKeeper and three brokers in the chroot /gregor/c202.

  1. a topic of 6 partitions (replication factor 3) holds 20 records each
  2. two kafka-python consumers of one group read every record once between
     them (twice only after a commit failed in a rebalance) and commit; OffsetFetch at the group's coordinator (the Metadata
     leader of its partition) answers 20 for every partition, another
     broker answers NOT_COORDINATOR
  3. a kafkajs consumer group does the same through the same bootstrap list
"""

import json
import os
import subprocess
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from kafka import KafkaConsumer, KafkaProducer  # noqa: E402
from kafka.admin import KafkaAdminClient, NewTopic  # noqa: E402
from kafka.errors import CommitFailedError  # noqa: E402

import gregor  # noqa: E402
import kwire  # noqa: E402
from gregor import eq, log, main, wait_until  # noqa: E402
from zookeeper import running_cluster  # noqa: E402

CHROOT = "/gregor/c202"
TOPIC = "groups6"
NPARTS = 6
PER_PART = 20

KAFKAJS = r"""
const { Kafka, logLevel } = require('kafkajs')
const [brokers, topic, total] = process.argv.slice(1)
const kafka = new Kafka({ clientId: 'itest-5202', brokers: brokers.split(','), logLevel: logLevel.NOTHING,
  retry: { retries: 10 } })
async function go () {
  const seen = []
  const consumer = kafka.consumer({ groupId: 'js5202', sessionTimeout: 10000 })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`only ${seen.length} records`)), 40000)
    consumer.run({ autoCommit: false, eachMessage: async ({ partition, message }) => {
      seen.push(`${partition}:${message.offset}`)
      await consumer.commitOffsets([{ topic, partition, offset: String(Number(message.offset) + 1) }])
      if (seen.length === Number(total)) { clearTimeout(timer); resolve() }
    } })
  })
  await consumer.disconnect()
  process.stdout.write(JSON.stringify(seen))
}
go().catch(e => { process.stderr.write(String(e.stack || e) + '\n'); process.exit(1) })
"""


def offset_fetch(port, group):
    """OffsetFetch v1 of the topic's partitions -> {partition: (offset, error)}."""
    body = kwire.string(group) + kwire.array([TOPIC], lambda t: kwire.string(t) +
                                             kwire.array(list(range(NPARTS)), kwire.i32))
    r = kwire.call(port, 9, 1, body)
    topics = r.array(lambda r: (r.string(), r.array(lambda r: (r.i32(), r.i64(), r.string(), r.i16()))))
    return {p: (off, err) for _, parts in topics for p, off, _m, err in parts}


def offset_fetch_error(port, group):
    """OffsetFetch v3 of every offset of group -> the top-level error code."""
    r = kwire.call(port, 9, 3, kwire.string(group) + kwire.i32(-1))
    r.i32()
    r.array(lambda r: (r.string(), r.array(lambda r: (r.i32(), r.i64(), r.string(), r.i16()))))
    return r.i16()


def check_offsets(brokers, group):
    wait_until(lambda: kwire.find_coordinator(brokers[0].port, group)[0] == 0, 15, "coordinator of " + group)
    coord = kwire.find_coordinator(brokers[0].port, group)[1]
    eq(offset_fetch(brokers[coord - 1].port, group), {p: (PER_PART, 0) for p in range(NPARTS)},
       "OffsetFetch of %s at its coordinator, broker %d" % (group, coord))
    other = brokers[coord % 3]
    eq(offset_fetch_error(other.port, group), 16, "OffsetFetch elsewhere")
    return coord


def python_group(bootstrap):
    """Two kafka-python consumers, each on its own thread (a member's join blocks until the group's does)."""
    seen, failed, lock, done = [], [], threading.Lock(), threading.Event()

    def member():
        c = KafkaConsumer(TOPIC, bootstrap_servers=bootstrap, group_id="py5202", enable_auto_commit=False,
                          auto_offset_reset="earliest", session_timeout_ms=10000, max_poll_interval_ms=20000)
        try:
            while not done.is_set():
                for recs in c.poll(timeout_ms=200, max_records=50).values():
                    with lock:
                        seen.extend((m.partition, m.offset) for m in recs)
                    try:
                        c.commit()
                    except CommitFailedError:  # a rebalance meanwhile: those records may come again
                        failed.append(1)
                with lock:
                    if len(set(seen)) >= NPARTS * PER_PART:
                        done.set()
        finally:
            c.close()
    threads = [threading.Thread(target=member) for _ in range(2)]
    for t in threads:
        t.start()
    done.wait(60)
    done.set()
    for t in threads:
        t.join(30)
    if failed:  # only then may a record have come twice
        seen = sorted(set(seen))
    return seen


def test():
    with running_cluster((1, 2, 3), CHROOT, offsets_topic_num_partitions=8) as (zk, zc, brokers):
        bootstrap = [b.bootstrap for b in brokers]
        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        admin.create_topics([NewTopic(TOPIC, NPARTS, 3)])
        admin.close()
        wait_until(lambda: kwire.metadata_topic_error(brokers[0].port, TOPIC) == 0, 15, "the topic")
        p = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
        for part in range(NPARTS):
            for i in range(PER_PART):
                p.send(TOPIC, value=b"%d" % i, partition=part)
        p.flush(30)
        p.close()

        seen = python_group(bootstrap)
        eq(sorted(seen), [(q, o) for q in range(NPARTS) for o in range(PER_PART)], "records read by kafka-python")
        coord = check_offsets(brokers, "py5202")
        log("kafka-python group: every record once, offsets at broker %d" % coord)

        env = dict(os.environ, NODE_PATH=os.path.join(gregor.REPO_ROOT, "tests", "js", "node_modules"))
        out = subprocess.run(["node", "-e", KAFKAJS, ",".join(bootstrap), TOPIC, str(NPARTS * PER_PART)],
                             env=env, capture_output=True, timeout=90)
        eq(out.returncode, 0, "kafkajs: " + out.stderr.decode(errors="replace")[-2000:])
        eq(sorted(json.loads(out.stdout)), sorted("%d:%d" % (q, o) for q in range(NPARTS) for o in range(PER_PART)),
           "records read by kafkajs")
        coord = check_offsets(brokers, "js5202")
        log("kafkajs group: every record once, offsets at broker %d" % coord)


if __name__ == "__main__":
    main(test)

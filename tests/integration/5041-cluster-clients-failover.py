"""Cluster mode: kafka-python and kafkajs produce to and consume from every
partition of a 12-partition topic (RF 1) through one bootstrap broker each,
and a broker killed with -9 takes its partitions offline until it is back.

ZooKeeper and three brokers in the chroot /gregor/c41, 3 s sessions.

  1. kafka-python bootstrapped on broker 2 writes 20 records to each of the
     12 partitions and reads them back (every partition assigned): each
     record exactly once, in order
  2. kafkajs bootstrapped on broker 3 does the same (its consumer is a group
     member: FindCoordinator through broker 3 names the group's coordinator)
  3. kill -9 of the controller: within its session timeout the Metadata of
     the other brokers (told by the new controller) shows its partitions with
     leader -1 and LEADER_NOT_AVAILABLE, the others led as before; restarted,
     it leads them again (leader epoch 2) in every broker's Metadata and a
     consumer (kafka-python through another broker) reads every record of
     all 12 partitions, each once
"""

import json
import os
import signal
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from kafka import KafkaConsumer, KafkaProducer, TopicPartition  # noqa: E402

import gregor  # noqa: E402
import kwire  # noqa: E402
from gregor import eq, log, main, wait_until  # noqa: E402
from zookeeper import running_cluster  # noqa: E402

CHROOT = "/gregor/c41"
TOPIC = "clients12"
PER_PART = 20
SESSION = {"zookeeper_session_timeout_ms": 3000, "zookeeper_connection_timeout_ms": 1000}

KAFKAJS = r"""
const { Kafka, logLevel } = require('kafkajs')
const [bootstrap, topic, perPart] = process.argv.slice(1)
const n = Number(perPart)
const kafka = new Kafka({ clientId: 'itest-5041', brokers: [bootstrap], logLevel: logLevel.NOTHING,
  retry: { retries: 10 } })
async function go () {
  const producer = kafka.producer()
  await producer.connect()
  for (let p = 0; p < 12; p++) {
    await producer.send({ topic, acks: -1,
      messages: Array.from({ length: n }, (_, i) => ({ partition: p, value: `js-${p}-${i}` })) })
  }
  await producer.disconnect()
  const got = {}
  let count = 0
  const consumer = kafka.consumer({ groupId: 'js5041', sessionTimeout: 10000 })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`only ${count} records`)), 30000)
    consumer.run({ eachMessage: async ({ partition, message }) => {
      const v = message.value.toString()
      if (!v.startsWith('js-')) return
      ;(got[partition] = got[partition] || []).push(v)
      if (++count === 12 * n) { clearTimeout(timer); resolve() }
    } })
  })
  await consumer.disconnect()
  process.stdout.write(JSON.stringify(got))
}
go().catch(e => { process.stderr.write(String(e.stack || e) + '\n'); process.exit(1) })
"""


def py_produce(b, prefix):
    p = KafkaProducer(bootstrap_servers=b.bootstrap, acks="all", linger_ms=5)
    futures = [p.send(TOPIC, value=b"%s-%d-%d" % (prefix, part, i), partition=part)
               for part in range(12) for i in range(PER_PART)]
    p.flush(30)
    for f in futures:
        f.get(timeout=10)
    p.close()


def py_read(b, n):
    """{partition: [values]} of every record of the topic (n of them)."""
    c = KafkaConsumer(bootstrap_servers=b.bootstrap, enable_auto_commit=False, consumer_timeout_ms=1000)
    c.assign([TopicPartition(TOPIC, p) for p in range(12)])
    c.seek_to_beginning()
    got, count = {}, 0

    def more():
        nonlocal count
        for m in c:
            got.setdefault(m.partition, []).append(m.value)
            count += 1
        return count >= n
    wait_until(more, 30, "%d records through %s" % (n, b.bootstrap), interval_s=0)
    c.close()
    return got


def want(prefixes):
    return {p: [b"%s-%d-%d" % (x, p, i) for x in prefixes for i in range(PER_PART)] for p in range(12)}


def metadata(b):
    """{partition: (error, leader, leader_epoch)} from b's Metadata v7."""
    r = kwire.call(b.port, 3, 7, kwire.array([TOPIC], kwire.string) + kwire.i8(0))
    r.i32()
    r.array(lambda r: (r.i32(), r.string(), r.i32(), r.string()))
    r.string()
    r.i32()

    def part(r):
        err, idx, leader, epoch = r.i16(), r.i32(), r.i32(), r.i32()
        r.array(lambda r: r.i32()), r.array(lambda r: r.i32()), r.array(lambda r: r.i32())
        return idx, (err, leader, epoch)
    topics = r.array(lambda r: (r.i16(), r.string(), r.i8(), dict(r.array(part))))
    return topics[0][3]


def kafkajs(b):
    env = dict(os.environ, NODE_PATH=os.path.join(gregor.REPO_ROOT, "tests", "js", "node_modules"))
    out = subprocess.run(["node", "-e", KAFKAJS, b.bootstrap, TOPIC, str(PER_PART)], env=env,
                         capture_output=True, timeout=60)
    eq(out.returncode, 0, "kafkajs through %s: %s" % (b.bootstrap, out.stderr.decode(errors="replace")[-2000:]))
    got = {int(p): v for p, v in json.loads(out.stdout).items()}
    eq(got, {p: ["js-%d-%d" % (p, i) for i in range(PER_PART)] for p in range(12)}, "records read by kafkajs")


def test():
    with running_cluster((1, 2, 3), CHROOT, **SESSION) as (zk, zc, brokers):
        eq(kwire.create_topic(brokers[1].port, TOPIC, 12)[0], 0, "CreateTopics")
        a = {int(p): r_[0] for p, r_ in
             json.loads(zc.get(CHROOT + "/brokers/topics/" + TOPIC)[0])["partitions"].items()}
        for b in brokers:
            wait_until(lambda: metadata(b) == {p: (0, a[p], 0) for p in range(12)}, 15,
                       "%s's Metadata" % b.bootstrap)

        py_produce(brokers[1], b"py")
        eq(py_read(brokers[1], 12 * PER_PART), want([b"py"]), "records read by kafka-python")
        log("kafka-python through broker 2: %d records" % (12 * PER_PART))
        kafkajs(brokers[2])
        log("kafkajs through broker 3: %d records" % (12 * PER_PART))

        vid = json.loads(zc.get(CHROOT + "/controller")[0])["brokerid"]  # the controller: a failover too
        victim = brokers[vid - 1]
        others = [b for b in brokers if b is not victim]
        victim.proc.send_signal(signal.SIGKILL)
        victim.proc.wait(timeout=10)
        victim.proc = None
        down = {p: ((5, -1, 1) if a[p] == vid else (0, a[p], 0)) for p in range(12)}
        for b in others:
            wait_until(lambda: metadata(b) == down, 15, "broker %d's partitions offline in %s" % (vid, b.bootstrap))
        log("controller %d killed: its partitions leaderless in the others' Metadata" % vid)
        victim.start()
        up = {p: ((0, vid, 2) if a[p] == vid else (0, a[p], 0)) for p in range(12)}
        for b in brokers:
            wait_until(lambda: metadata(b) == up, 20, "broker %d leads again in %s" % (vid, b.bootstrap))
        got = py_read(others[-1], 12 * PER_PART * 2)
        for p in range(12):
            eq(sorted(got[p]), sorted(want([b"py"])[p] + [b"js-%d-%d" % (p, i) for i in range(PER_PART)]),
               "records of partition %d after the restart" % p)
        log("broker %d back: every record of the 12 partitions read once" % vid)


if __name__ == "__main__":
    main(test)

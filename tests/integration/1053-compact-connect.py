#!/usr/bin/python3
"""1053: Kafka Connect's config-topic pattern, across clients.

kafkajs 2.2.4 (node, tests/js) creates a compacted topic with its admin
client (cleanup.policy=compact, segment.bytes=16384, segment.ms=1000,
min.cleanable.dirty.ratio=0.01, delete.retention.ms=4000) and writes it
as a Connect worker does, with an idempotent producer (acks=all, one
request in flight): for 20 connectors, 10 rounds of connector-<c>,
task-<c>-<0..2>, target-state-<c> and commit-<c> records (JSON values
naming their round), then tombstones for every key of connectors 0-4
(deleted connectors). Once segment.ms has passed a sentinel seals it.

kafka-python (python3-kafka, check_crcs=True, no group) reads the topic
back from the beginning after a pass over everything below the sentinel:
offsets increasing, every key once below the active segment, exactly the
last value kafkajs wrote for every live key at its offset, the deleted
connectors' keys only as tombstones (the same records when kafka-python
reads as a 0.10 client, the cleaned batches down-converted to magic 1);
after delete.retention.ms and a further pass, not at all. Runtime ~15 s.
"""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

import compaction as cp  # noqa: E402
from gregor import REPO_ROOT, Broker, eq, log, main  # noqa: E402

TOPIC = "connect-configs"
RETENTION_MS = 4000

WRITER = r"""
'use strict'
const { Kafka, logLevel } = require('kafkajs')
const [bootstrap, topic, retentionMs] = process.argv.slice(1)
process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1'

async function write () {
  const kafka = new Kafka({ clientId: 'itest-1053', brokers: [bootstrap], logLevel: logLevel.WARN,
    connectionTimeout: 5000, requestTimeout: 15000, retry: { retries: 3 } })
  const admin = kafka.admin()
  await admin.connect()
  const configEntries = Object.entries({ 'cleanup.policy': 'compact', 'segment.bytes': '16384',
    'segment.ms': '1000', 'min.cleanable.dirty.ratio': '0.01', 'delete.retention.ms': retentionMs })
    .map(([name, value]) => ({ name, value }))
  const created = await admin.createTopics({ topics: [{ topic, numPartitions: 1, configEntries }],
    waitForLeaders: true, timeout: 10000 })
  if (created !== true) throw new Error('createTopics returned ' + created)
  await admin.disconnect()

  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false })
  await producer.connect()
  const latest = {}
  const tomb = {}
  const send = async messages => {
    const res = await producer.send({ topic, acks: -1, timeout: 10000, messages })
    if (res.length !== 1 || res[0].errorCode !== 0) throw new Error('send: ' + JSON.stringify(res))
    messages.forEach((m, i) => {
      const offset = Number(res[0].baseOffset) + i
      if (m.value === null) tomb[m.key] = offset
      else latest[m.key] = [offset, m.value]
    })
  }
  const keys = c => [`connector-${c}`, `task-${c}-0`, `task-${c}-1`, `task-${c}-2`, `target-state-${c}`, `commit-${c}`]
  for (let round = 0; round < 10; round++) {
    for (let c = 0; c < 20; c++) {
      await send(keys(c).map(key => ({ key, partition: 0,
        value: JSON.stringify({ key, round, properties: { 'connector.class': 'FileStreamSource',
          'tasks.max': '3', file: `/data/input-${c}-${round}.txt`, topic: `out-${c}` } }) })))
    }
  }
  const t0 = Date.now()
  for (let c = 0; c < 5; c++) {
    await send(keys(c).map(key => ({ key, partition: 0, value: null })))
    for (const k of keys(c)) delete latest[k]
  }
  await producer.disconnect()
  process.stdout.write(JSON.stringify({ latest, tomb, t0 }) + '\n')
}
write().catch(e => { console.error(e); process.exit(1) })
"""


def kafkajs_write(b):
    env = dict(os.environ, NODE_PATH=os.path.join(REPO_ROOT, "tests", "js", "node_modules"))
    p = subprocess.run(["node", "-e", WRITER, b.bootstrap, TOPIC, str(RETENTION_MS)], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120, env=env, cwd=REPO_ROOT)
    if p.returncode != 0:
        raise AssertionError("kafkajs writer exited %d:\n%s" % (p.returncode, p.stderr.decode(errors="replace")))
    out = json.loads(p.stdout.decode().strip().splitlines()[-1])
    w = cp.Written()
    w.latest = {k.encode(): (o, v.encode()) for k, (o, v) in out["latest"].items()}
    w.tomb = {k.encode(): o for k, o in out["tomb"].items()}
    w.tomb_t0 = out["t0"] / 1000.0
    return w


def test():
    with Broker(overrides=cp.BROKER_OVERRIDES) as b:
        w = kafkajs_write(b)
        log("kafkajs wrote %d live keys and %d tombstones" % (len(w.latest), len(w.tomb)))
        sentinel = cp.seal(b, [TOPIC])[TOPIC]
        first, end, _ = cp.wait_pass(b, TOPIC, end_min=sentinel)
        recs = cp.kafka_python_read(b, TOPIC)
        if time.time() < w.tomb_t0 + RETENTION_MS / 1000.0:
            cp.check_latest(recs, w, sentinel, "kept", "kafka-python after the pass [%d, %d)" % (first, end))
            log("kafka-python read %d records: latest value per key, tombstones kept" % len(recs))
            eq(cp.kafka_python_read(b, TOPIC, api_version=(0, 10)), recs,
               "records read by kafka-python as a 0.10 client (Fetch v2, batches down-converted to magic 1)")
        else:
            log("the first full pass ended past the tombstone horizon: tombstones not checked before it")
        cp.wait_tombstones_gone(b, [TOPIC], {TOPIC: w}, RETENTION_MS, reader=cp.kafka_python_read)
        log("kafka-python past the horizon: the deleted connectors' keys are gone")


main(test)

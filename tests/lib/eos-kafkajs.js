'use strict'
/* A kafkajs consume-transform-produce application, as the cluster tests run
 * it (5241): every 20 records of a fetched batch of one input partition
 * become one transaction holding 'o-<value>' records on the same output
 * partition and the next input offset for the group (sendOffsets).  When a
 * transaction fails, the producer is thrown away and a new one made with
 * the same transactional id (its InitProducerId fences the old epoch and
 * finishes what it left), and only then does the partition rewind to the
 * group's committed offset: what a real application does on fencing or an
 * unknown outcome.
 *
 *   node eos-kafkajs.js '{"brokers":[...],"src":T,"dst":T,"group":G,"tid":ID,"ends":{"0":N,...}}'
 *
 * Prints one JSON line per event ({"commit":n}, {"failed":n,"error":...},
 * {"rewound":partition,"offset":o}); exits 0 once the group's committed
 * offsets reach ends, 1 on its deadline.
 */
const { Kafka, logLevel } = require('kafkajs')

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1'
const cfg = JSON.parse(process.argv[2])
const DEADLINE_MS = 120000
const TXN_RECORDS = 20
const retry = { retries: 10, initialRetryTime: 200, maxRetryTime: 2000 }
const kafka = new Kafka({ clientId: 'eos-kafkajs', brokers: cfg.brokers, logLevel: logLevel.NOTHING, retry })
const admin = kafka.admin()
const consumer = kafka.consumer({
  groupId: cfg.group,
  sessionTimeout: 20000,
  heartbeatInterval: 1000,
  maxWaitTimeInMs: 200,
  maxBytesPerPartition: 2000,
  retry
})
const done = {} /* partition -> offset committed in a transaction */
let producer = null
let begun = null /* a transaction recover() began, for the next batch */
let commits = 0
let failures = 0

function say (o) {
  process.stdout.write(JSON.stringify(o) + '\n')
}

async function newProducer () {
  if (producer) await producer.disconnect().catch(() => {})
  producer = null
  const p = kafka.producer({
    transactionalId: cfg.tid,
    idempotent: true,
    maxInFlightRequests: 1,
    transactionTimeout: 60000,
    retry
  })
  await p.connect()
  producer = p
}

async function committedOffset (partition) {
  const offs = await admin.fetchOffsets({ groupId: cfg.group, topics: [cfg.src] })
  const o = offs[0].partitions.find(p => p.partition === partition)
  return o && Number(o.offset) >= 0 ? o.offset : '0'
}

async function transform (partition, msgs) {
  const next = (BigInt(msgs[msgs.length - 1].offset) + 1n).toString()
  const txn = begun || await producer.transaction()
  begun = null
  await txn.send({ topic: cfg.dst, messages: msgs.map(m => ({ partition, value: 'o-' + m.value.toString() })) })
  await txn.sendOffsets({
    consumerGroupId: cfg.group,
    topics: [{ topic: cfg.src, partitions: [{ partition, offset: next }] }]
  })
  await txn.commit()
  return next
}

/* After a failed transaction (its outcome maybe unknown: a commit may have
 * gone through): a new producer first, and its first transaction begun,
 * since kafkajs sends InitProducerId there (not at connect), and the
 * coordinator answers it only once the old epoch's transaction is finished
 * (markers written, the group's offsets committed or dropped); only then is
 * the committed offset final, and the partition rewinds to it. */
async function recover (partition) {
  for (let attempt = 1; ; attempt++) {
    try {
      begun = null
      await newProducer()
      begun = await producer.transaction()
      break
    } catch (e) {
      if (attempt === 10) throw e
      await new Promise(resolve => setTimeout(resolve, 500))
    }
  }
  done[partition] = await committedOffset(partition)
  say({ rewound: partition, offset: done[partition] })
  consumer.seek({ topic: cfg.src, partition, offset: done[partition] })
}

/* One transaction per TXN_RECORDS records of the batch; a failure rewinds the partition. */
async function eachBatch ({ batch, resolveOffset, isStale, isRunning }) {
  const p = batch.partition
  for (let i = 0; i < batch.messages.length && isRunning() && !isStale(); i += TXN_RECORDS) {
    const msgs = batch.messages.slice(i, i + TXN_RECORDS)
    try {
      if (!producer) await newProducer()
      done[p] = await transform(p, msgs)
      resolveOffset(msgs[msgs.length - 1].offset)
      say({ commit: ++commits, partition: p, next: done[p] })
    } catch (e) {
      say({ failed: ++failures, partition: p, error: `${e.name}: ${e.message}` })
      await recover(p)
      return
    }
  }
}

function finished () {
  return Object.entries(cfg.ends).every(([p, end]) => done[p] !== undefined && BigInt(done[p]) >= BigInt(end))
}

async function run () {
  const deadline = Date.now() + DEADLINE_MS
  await admin.connect()
  await newProducer()
  await consumer.connect()
  await consumer.subscribe({ topic: cfg.src, fromBeginning: true })
  await consumer.run({ autoCommit: false, eachBatchAutoResolve: false, eachBatch })
  while (!finished() && Date.now() < deadline) await new Promise(resolve => setTimeout(resolve, 100))
  const ok = finished()
  say({ finished: ok, commits, failures, done })
  await consumer.disconnect().catch(() => {})
  await producer?.disconnect().catch(() => {})
  await admin.disconnect().catch(() => {})
  process.exit(ok ? 0 : 1)
}

run().catch(e => {
  say({ fatal: `${e.name}: ${e.message}` })
  process.exit(1)
})

'use strict'
/* kafkajs 2.2.4 idempotent producer (idempotent: true, acks -1): 600
 * numbered messages to 3 partitions in 30 sends, with a clean restart and a
 * kill -9 of the broker in between; kafkajs reconnects and its sequence
 * numbers continue against the producer state the broker rebuilt.  Read
 * back with kcat: every message exactly once, in order per partition. */
const { Kafka, logLevel } = require('kafkajs')
const { withBroker, main, eq, run, log } = require('../lib/gregor')

const N = 600
const PARTS = 3
const TOPIC = 'idem-kafkajs'

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1'

main(() => withBroker({ overrides: { 'num.partitions': String(PARTS) } }, async b => {
  const kafka = new Kafka({
    clientId: 'itest-3005',
    brokers: [b.bootstrap],
    logLevel: logLevel.NOTHING,
    connectionTimeout: 3000,
    requestTimeout: 10000,
    retry: { retries: 10, initialRetryTime: 100, maxRetryTime: 1000 }
  })
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: true })
  await producer.connect()
  const send = async (lo, hi) => {
    for (let i = lo; i < hi; i += 20) {
      const messages = []
      for (let j = i; j < i + 20; j++) messages.push({ partition: j % PARTS, value: String(j).padStart(6, '0') })
      const res = await producer.send({ topic: TOPIC, acks: -1, messages })
      eq(res.map(r => r.errorCode), res.map(() => 0), `send of ${i}..${i + 19}`)
    }
  }
  await send(0, N / 3)
  await b.restart()
  await send(N / 3, 2 * N / 3)
  await b.kill9()
  await b.start()
  await send(2 * N / 3, N)
  await producer.disconnect()
  for (let p = 0; p < PARTS; p++) {
    const out = run('kcat', ['-b', b.bootstrap, '-C', '-t', TOPIC, '-p', String(p), '-o', 'beginning', '-e', '-q',
      '-f', '%o %s\n', '-X', 'check.crcs=true'], { timeoutMs: 60000 }).stdout.toString()
    const got = out.split('\n').filter(l => l.length)
    const want = []
    for (let o = 0; o < N / PARTS; o++) want.push(`${o} ${String(p + PARTS * o).padStart(6, '0')}`)
    eq(got, want, `partition ${p} read back`)
  }
  log(`${N} messages exactly once across restart and kill -9`)
}))

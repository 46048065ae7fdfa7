'use strict'
/* kafkajs 2.2.4 re-authenticates (KIP-368) when SaslAuthenticate announces
 * a session lifetime: with connections.max.reauth.ms=2000 a producer and a
 * group consumer over SASL_PLAINTEXT with SCRAM-SHA-512 keep working for
 * several lifetimes, re-authenticating on their connections (the broker
 * logs each re-authentication) instead of being disconnected. */
const fs = require('fs')
const { Kafka, logLevel } = require('kafkajs')
const { Broker, main, eq, check, sleep, freePort } = require('../lib/gregor')

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1'

function client (port) {
  return new Kafka({
    clientId: 'itest-6082',
    brokers: [`127.0.0.1:${port}`],
    sasl: { mechanism: 'scram-sha-512', username: 'kim', password: 'kim-pw' },
    reauthenticationThreshold: 1000,
    logLevel: logLevel.NOTHING,
    connectionTimeout: 5000,
    requestTimeout: 10000
  })
}

async function test (b) {
  const kafka = client(b.port)
  const producer = kafka.producer()
  await producer.connect()
  const consumer = kafka.consumer({ groupId: 'g-reauth-js', sessionTimeout: 10000, heartbeatInterval: 500 })
  await consumer.connect()
  await consumer.subscribe({ topic: 'reauth-js', fromBeginning: true })
  const got = []
  consumer.run({ eachMessage: async ({ message }) => { got.push(message.value.toString()) } })
  const sent = []
  const until = Date.now() + 7000
  for (let i = 0; Date.now() < until; i++) {
    const v = `v${String(i).padStart(5, '0')}`
    await producer.send({ topic: 'reauth-js', acks: -1, messages: [{ value: v }] })
    sent.push(v)
    await sleep(100)
  }
  const deadline = Date.now() + 20000
  while (got.length < sent.length && Date.now() < deadline) await sleep(100)
  await consumer.disconnect()
  await producer.disconnect()
  eq(got, sent, 'records the consumer read across re-authentications')
  const log = fs.readFileSync(b.logPath, 'utf8')
  const reauths = (log.match(/re-authenticated as User:kim \(SASL\/SCRAM-SHA-512\)/g) || []).length
  check(reauths >= 3, `re-authentications logged: ${reauths}`)
  check(!/SASL session expired/.test(log), 'no connection cut at its session end')
}

main(async () => {
  const b = new Broker({})
  b.port = await freePort()
  b.bootstrap = `127.0.0.1:${b.port}`
  fs.writeFileSync(b.propsPath, `log.dirs=${b.dataDir}\n`)
  b.overrides = {
    listeners: `SASL_PLAINTEXT://127.0.0.1:${b.port}`,
    'sasl.enabled.mechanisms': 'SCRAM-SHA-512',
    'sasl.scram.users': 'kim:kim-pw',
    'connections.max.reauth.ms': '2000',
    'log.debug': 'net',
    'num.partitions': '1',
    'group.initial.rebalance.delay.ms': '0'
  }
  await b.start()
  try {
    await test(b)
  } finally {
    await b.close()
  }
})

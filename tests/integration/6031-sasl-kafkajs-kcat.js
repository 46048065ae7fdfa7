'use strict'
/* kafkajs 2.2.4 over SASL_SSL (PLAIN and SCRAM-SHA-512) and SASL_PLAINTEXT
 * (PLAIN): it produces
 * (acks=-1) and its group consumer reads every record back over TLS; a
 * wrong password is refused with an authentication error while the broker
 * goes on serving; kcat (librdkafka) reads the records over SASL_SSL. */
const fs = require('fs')
const path = require('path')
const { execFileSync } = require('child_process')
const { Kafka, logLevel } = require('kafkajs')
const { Broker, main, eq, check, run, freePort } = require('../lib/gregor')

const N = 1000
process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1'
const JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_carol="carol-pw";'

/* The certificates of tests/lib/tlscerts.py. */
function makeCerts (dir) {
  const lib = path.join(__dirname, '..', 'lib')
  const out = execFileSync('/usr/bin/python3', ['-c',
    `import sys, json; sys.path.insert(0, ${JSON.stringify(lib)}); import tlscerts; ` +
    `print(json.dumps(tlscerts.make(${JSON.stringify(dir)})))`], { timeout: 60000 })
  return JSON.parse(out.toString())
}

const value = i => `v${String(i).padStart(6, '0')}`

function client (port, certs, password, mechanism = 'plain') {
  return new Kafka({
    clientId: 'itest-6031',
    brokers: [`localhost:${port}`],
    ssl: certs ? { ca: [fs.readFileSync(certs.ca)] } : false,
    sasl: { mechanism, username: 'carol', password },
    logLevel: logLevel.NOTHING,
    connectionTimeout: 5000,
    requestTimeout: 10000,
    retry: { retries: 1 }
  })
}

async function roundtrip (kafka, topic) {
  const producer = kafka.producer()
  await producer.connect()
  const messages = []
  for (let i = 0; i < N; i++) messages.push({ value: value(i) })
  await producer.send({ topic, acks: -1, messages })
  await producer.disconnect()
  const consumer = kafka.consumer({ groupId: `g-${topic}`, sessionTimeout: 10000, heartbeatInterval: 1000 })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  const got = []
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`kafkajs consumer got ${got.length} of ${N} in time`)), 20000)
    consumer.run({
      eachMessage: async ({ message }) => {
        got.push(message.value.toString())
        if (got.length === N) { clearTimeout(timer); resolve() }
      }
    }).catch(reject)
  })
  await consumer.disconnect()
  eq(got, Array.from({ length: N }, (_, i) => value(i)), `records kafkajs read back from ${topic}`)
}

async function badPassword (port, certs, mechanism = 'plain') {
  const admin = client(port, certs, 'wrong', mechanism).admin()
  let err = null
  try {
    await admin.connect()
    await admin.listTopics()
  } catch (e) {
    err = e
  }
  await admin.disconnect().catch(() => {})
  check(err !== null, 'kafkajs with a wrong password was refused')
  check(/SASL|Authentication failed/i.test(String(err) + (err.type || '')), `kafkajs error: ${err}`)
}

async function test (b, certs, saslPort) {
  await roundtrip(client(saslPort, certs, 'carol-pw'), 'sasl-ssl-js')
  await badPassword(saslPort, certs)
  await roundtrip(client(saslPort, certs, 'carol-pw', 'scram-sha-512'), 'scram-ssl-js')
  await badPassword(saslPort, certs, 'scram-sha-512')
  await roundtrip(client(b.port, null, 'carol-pw'), 'sasl-plain-js')
  await badPassword(b.port, null)
  const out = run('kcat', ['-b', `localhost:${saslPort}`, '-X', 'security.protocol=sasl_ssl', '-X', `ssl.ca.location=${certs.ca}`,
    '-X', 'sasl.mechanisms=PLAIN', '-X', 'sasl.username=carol', '-X', 'sasl.password=carol-pw',
    '-C', '-t', 'sasl-ssl-js', '-o', 'beginning', '-e', '-q', '-f', '%s\n'])
  eq(out.stdout.toString().split('\n').filter(l => l.length), Array.from({ length: N }, (_, i) => value(i)),
    'records kcat read over SASL_SSL')
}

main(async () => {
  const b = new Broker({})
  const certs = makeCerts(b.tmp)
  const saslPort = await freePort()
  b.port = await freePort()
  b.bootstrap = `127.0.0.1:${b.port}`
  fs.writeFileSync(b.propsPath, `log.dirs=${b.dataDir}\n`) /* listeners come as an override */
  b.overrides = {
    listeners: `SASL_PLAINTEXT://127.0.0.1:${b.port},SASL_SSL://127.0.0.1:${saslPort}`,
    'advertised.listeners': `SASL_PLAINTEXT://localhost:${b.port},SASL_SSL://localhost:${saslPort}`,
    'ssl.keystore.location': certs.server,
    'sasl.jaas.config': JAAS,
    'sasl.enabled.mechanisms': 'PLAIN,SCRAM-SHA-512',
    'sasl.scram.users': 'carol:carol-pw',
    'num.partitions': '1',
    'group.initial.rebalance.delay.ms': '0'
  }
  await b.start()
  try {
    await test(b, certs, saslPort)
  } finally {
    await b.close()
  }
})

'use strict'
/* kafkajs 2.2.4 and kcat over an SSL listener with ssl.client.auth=requested:
 * kafkajs produces (acks=-1, GZIP and not) with a client certificate, its
 * group consumer (FindCoordinator answered with the SSL listener's
 * endpoint) reads every record back, and kcat without a certificate reads
 * them too; the plaintext listener of the same broker keeps serving kcat. */
const fs = require('fs')
const path = require('path')
const { execFileSync } = require('child_process')
const { Kafka, logLevel, CompressionTypes } = require('kafkajs')
const { Broker, main, eq, check, run, freePort } = require('../lib/gregor')

const N = 2000
process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1'

function makeCerts (dir) {
  const d = path.join(dir, 'certs')
  fs.mkdirSync(d)
  const ossl = args => execFileSync('openssl', args, { cwd: d, stdio: 'ignore', timeout: 60000 })
  ossl(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=gregor-test-ca',
    '-keyout', 'ca.key', '-out', 'ca.pem'])
  fs.writeFileSync(path.join(d, 'san.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n')
  for (const [who, ext] of [['server', ['-extfile', 'san.ext']], ['client', []]]) {
    ossl(['req', '-newkey', 'rsa:2048', '-nodes', '-subj', `/CN=${who}`, '-keyout', `${who}.key`, '-out', `${who}.csr`])
    ossl(['x509', '-req', '-in', `${who}.csr`, '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '2',
      '-out', `${who}.crt`, ...ext])
  }
  const p = n => path.join(d, n)
  fs.writeFileSync(p('server.pem'), fs.readFileSync(p('server.key')) + fs.readFileSync(p('server.crt')))
  return p
}

const value = i => `v${String(i).padStart(6, '0')}-` + 'y'.repeat(i % 200)

async function test (b, p, sslPort) {
  const kafka = new Kafka({
    clientId: 'itest-6012',
    brokers: [`localhost:${sslPort}`],
    ssl: { ca: [fs.readFileSync(p('ca.pem'))], cert: fs.readFileSync(p('client.crt')), key: fs.readFileSync(p('client.key')) },
    logLevel: logLevel.WARN,
    connectionTimeout: 5000,
    requestTimeout: 15000,
    retry: { retries: 3 }
  })
  const topic = 'tls-kafkajs'
  const admin = kafka.admin()
  await admin.connect()
  await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true, timeout: 10000 })
  await admin.disconnect()
  const producer = kafka.producer({ allowAutoTopicCreation: false })
  await producer.connect()
  for (let start = 0; start < N; start += 200) {
    const messages = []
    for (let i = start; i < start + 200; i++) messages.push({ value: value(i) })
    await producer.send({ topic, acks: -1, compression: (start / 200) % 2 ? CompressionTypes.GZIP : CompressionTypes.None, messages })
  }
  await producer.disconnect()

  const consumer = kafka.consumer({ groupId: 'g-tls-kafkajs', sessionTimeout: 10000, heartbeatInterval: 1000 })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  const got = []
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`kafkajs consumer got ${got.length} of ${N} in time`)), 25000)
    consumer.run({
      eachMessage: async ({ message }) => {
        got.push(message.value.toString())
        if (got.length === N) { clearTimeout(timer); resolve() }
      }
    }).catch(reject)
  })
  await consumer.disconnect()
  eq(got.length, N, 'records the kafkajs group consumer read over TLS')
  for (let i = 0; i < N; i++) if (got[i] !== value(i)) check(false, `kafkajs record ${i} differs`)

  const out = run('kcat', ['-b', `127.0.0.1:${sslPort}`, '-X', 'security.protocol=ssl', '-X', `ssl.ca.location=${p('ca.pem')}`,
    '-C', '-t', topic, '-o', 'beginning', '-e', '-q', '-f', '%s\n'])
  const lines = out.stdout.toString().split('\n').filter(l => l.length)
  eq(lines.length, N, 'records kcat read over TLS without a client certificate')
  for (let i = 0; i < N; i++) if (lines[i] !== value(i)) check(false, `kcat record ${i} differs`)
  const plain = run('kcat', ['-b', b.bootstrap, '-C', '-t', topic, '-o', '-5', '-e', '-q', '-f', '%s\n'])
  eq(plain.stdout.toString().split('\n').filter(l => l.length), [N - 5, N - 4, N - 3, N - 2, N - 1].map(value),
    'the last records over the plaintext listener')
}

main(async () => {
  const b = new Broker({})
  const p = makeCerts(b.tmp)
  const sslPort = await freePort()
  b.port = await freePort()
  b.bootstrap = `127.0.0.1:${b.port}`
  fs.writeFileSync(b.propsPath, `log.dirs=${b.dataDir}\n`) /* listeners come as an override */
  b.overrides = {
    listeners: `PLAINTEXT://127.0.0.1:${b.port},SSL://127.0.0.1:${sslPort}`,
    'advertised.listeners': `PLAINTEXT://127.0.0.1:${b.port},SSL://localhost:${sslPort}`,
    'ssl.keystore.location': p('server.pem'),
    'ssl.truststore.location': p('ca.pem'),
    'ssl.client.auth': 'requested',
    'num.partitions': '1',
    'group.initial.rebalance.delay.ms': '0'
  }
  await b.start()
  try {
    await test(b, p, sslPort)
  } finally {
    await b.close()
  }
})

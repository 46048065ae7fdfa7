'use strict'
/* kafkajs 2.2.4: admin createTopics (and duplicate -> false), producer send
 * (uncompressed and GZIP, keys, headers, timestamps), admin.fetchTopicOffsets
 * and fetchTopicOffsetsByTimestamp, then the data read back with kcat (raw
 * consumer, no group: kafkajs consumers always need the group coordinator,
 * which 2001-kafkajs-group.js covers). */
const { Kafka, logLevel, CompressionTypes } = require('kafkajs')
const { withBroker, main, eq, check, run, log } = require('../lib/gregor')

const N = 500
const T0 = 1700000000000

const value = i => `kafkajs-value-${i}-` + 'x'.repeat(i % 97)

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1'

main(() => withBroker({ overrides: { 'auto.create.topics.enable': 'false', 'num.partitions': '1' } }, async b => {
  {
    const kafka = new Kafka({
      clientId: 'itest-0006',
      brokers: [b.bootstrap],
      logLevel: logLevel.WARN,
      connectionTimeout: 5000,
      requestTimeout: 15000,
      retry: { retries: 3 }
    })
    const topic = `itest-kafkajs-${process.pid}`
    const admin = kafka.admin()
    await admin.connect()
    eq(await admin.createTopics({ topics: [{ topic, numPartitions: 2 }], waitForLeaders: true, timeout: 10000 }),
      true, 'createTopics of a new topic')
    eq(await admin.createTopics({ topics: [{ topic, numPartitions: 2 }], timeout: 10000 }),
      false, 'createTopics of an existing topic')
    const md = await admin.fetchTopicMetadata({ topics: [topic] })
    eq(md.topics.map(t => [t.name, t.partitions.map(p => [p.partitionId, p.partitionErrorCode]).sort()]),
      [[topic, [[0, 0], [1, 0]]]], 'fetchTopicMetadata (partition, error)')

    const producer = kafka.producer({ allowAutoTopicCreation: false, idempotent: false })
    await producer.connect()
    // Messages i..i+49 go to partition floor(i/50)%2 as one batch: partition 0
    // uncompressed, partition 1 GZIP.
    for (let start = 0; start < N; start += 50) {
      const msgs = []
      for (let i = start; i < start + 50; i++) {
        msgs.push({
          key: `k${i}`,
          value: value(i),
          partition: Math.floor(start / 50) % 2,
          timestamp: String(T0 + i),
          headers: { idx: String(i), kind: 'itest' }
        })
      }
      const part = msgs[0].partition
      const res = await producer.send({
        topic,
        acks: -1,
        timeout: 10000,
        compression: part === 1 ? CompressionTypes.GZIP : CompressionTypes.None,
        messages: msgs
      })
      eq(res.map(r => [r.topicName, r.partition, r.errorCode]), [[topic, part, 0]], `send result for ${start}..`)
      const wantBase = Math.floor(start / 100) * 50
      eq(res[0].baseOffset, String(wantBase), `baseOffset of batch ${start}..${start + 49}`)
    }
    await producer.disconnect()

    const offs = (await admin.fetchTopicOffsets(topic)).sort((x, y) => x.partition - y.partition)
    eq(offs.map(o => [o.partition, o.low, o.high, o.offset]),
      [[0, '0', String(N / 2), String(N / 2)], [1, '0', String(N / 2), String(N / 2)]],
      'fetchTopicOffsets [partition, low, high, offset]')
    // Message i sits in partition (i/50)%2 at offset (i/100)*50 + i%50, timestamp T0+i.
    const byTs = (await admin.fetchTopicOffsetsByTimestamp(topic, T0 + 160)).sort((x, y) => x.partition - y.partition)
    // First ts >= T0+160: partition 0 -> i=200 at offset 100; partition 1 -> i=160 at offset 60.
    eq(byTs.map(o => [o.partition, o.offset]), [[0, '100'], [1, '60']], 'fetchTopicOffsetsByTimestamp(T0+160)')
    const late = (await admin.fetchTopicOffsetsByTimestamp(topic, T0 + 10 * N)).sort((x, y) => x.partition - y.partition)
    eq(late.map(o => [o.partition, o.offset]), [[0, String(N / 2)], [1, String(N / 2)]],
      'fetchTopicOffsetsByTimestamp after the last message (= high watermark)')
    await admin.disconnect()

    // Read back with kcat (librdkafka, no group): JSON lines with key, payload, headers, ts.
    for (const p of [0, 1]) {
      const out = run('kcat', ['-b', b.bootstrap, '-C', '-t', topic, '-p', String(p), '-o', 'beginning', '-e', '-q', '-J',
        '-X', 'check.crcs=true'], { timeoutMs: 60000 }).stdout.toString()
      const recs = out.split('\n').filter(l => l.length).map(l => JSON.parse(l))
      eq(recs.length, N / 2, `messages read back from partition ${p}`)
      recs.forEach((r, o) => {
        const i = Math.floor(o / 50) * 100 + p * 50 + (o % 50)
        eq([r.partition, r.offset, r.key, r.payload, r.ts, r.headers],
          [p, o, `k${i}`, value(i), T0 + i, ['idx', String(i), 'kind', 'itest']], `partition ${p} offset ${o}`)
      })
      log(`partition ${p}: ${recs.length} messages verified`)
    }
    check(b.alive(), 'broker still running')
  }
}))

'use strict'
/* kafkajs 2.2.4 transactions: a committed and an aborted transaction with
 * sendOffsets; a read_committed consumer (kafkajs' default) sees only the
 * committed records, and admin.fetchOffsets shows only the committed offset. */
const { Kafka, logLevel } = require('kafkajs')
const { withBroker, main, eq, check, log, sleep } = require('../lib/gregor')

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1'

main(() => withBroker({ props: { 'transaction.state.log.num.partitions': '2', 'offsets.topic.num.partitions': '2' } }, async b => {
  const kafka = new Kafka({ clientId: 'itest-4005', brokers: [b.bootstrap], logLevel: logLevel.WARN, retry: { retries: 5 } })
  const topic = 'kjs-txn-out'
  const src = 'kjs-txn-src'
  const groupId = 'kjs-txn-group'
  const admin = kafka.admin()
  await admin.connect()
  await admin.createTopics({ topics: [{ topic, numPartitions: 1 }, { topic: src, numPartitions: 1 }], waitForLeaders: true })

  const producer = kafka.producer({ transactionalId: 'kjs-tid', maxInFlightRequests: 1, idempotent: true })
  await producer.connect()
  let txn = await producer.transaction()
  await txn.send({ topic, messages: [{ value: 'c1' }, { value: 'c2' }] })
  await txn.sendOffsets({ consumerGroupId: groupId, topics: [{ topic: src, partitions: [{ partition: 0, offset: '5' }] }] })
  await txn.commit()

  txn = await producer.transaction()
  await txn.send({ topic, messages: [{ value: 'a1' }] })
  await txn.sendOffsets({ consumerGroupId: groupId, topics: [{ topic: src, partitions: [{ partition: 0, offset: '9' }] }] })
  await txn.abort()

  txn = await producer.transaction()
  await txn.send({ topic, messages: [{ value: 'c3' }] })
  await txn.commit()
  await producer.disconnect()

  const offs = await admin.fetchOffsets({ groupId, topics: [src] })
  eq(offs[0].partitions[0].offset, '5', 'committed txn offset (the aborted 9 dropped)')

  const seen = []
  const consumer = kafka.consumer({ groupId: 'kjs-reader', maxWaitTimeInMs: 200 })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  await consumer.run({ eachMessage: async ({ message }) => { seen.push(message.value.toString()) } })
  for (let i = 0; i < 100 && seen.length < 3; i++) await sleep(100)
  await sleep(500)
  await consumer.disconnect()
  await admin.disconnect()
  log(`read_committed saw ${JSON.stringify(seen)}`)
  eq(JSON.stringify(seen), JSON.stringify(['c1', 'c2', 'c3']), 'read_committed records')
  check(true, 'done')
}))

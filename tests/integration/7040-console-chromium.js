'use strict'
/* 7040: the web console in a real browser (Debian's headless chromium under
 * playwright-core) against a broker serving it on metrics.listener.
 *
 *   1. A topic created by kafkajs admin with 3 partitions is listed on the
 *      topics page with 3 partitions.
 *   2. A kafkajs consumer group reads what was produced and commits; while it
 *      runs the group page lists its member (client id, assignment).  After
 *      it leaves and more records arrive, the lag per partition on the page
 *      equals what kafkajs admin reports (fetchTopicOffsets high minus
 *      fetchOffsets committed).
 *   3. The message browser shows a record produced here: key, value and
 *      header, as text and as hex.
 *   4. The bytes chart is redrawn with a non-zero rate while a producer runs.
 *   5. Restarted with console.write.enable=true, the page's forms create a
 *      topic (kafkajs admin sees its 2 partitions) and reset the group,
 *      now Empty, to the earliest offsets (admin.fetchOffsets sees 0).
 * Each page checked is saved as a screenshot (PNG) under the broker's temp
 * dir (kept when the test fails, or with GREGOR_KEEP=1).
 * The page raises no script error.  On a broker without the console, `/`
 * is 404 and step 1 fails.
 */
const fs = require('fs')
const path = require('path')
const { Kafka, logLevel } = require('kafkajs')
const { withBroker, main, eq, check, log, sleep, freePort } = require('../lib/gregor')
const { withChromium } = require('../lib/chromium')

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1'
const TOPIC = `console-7040-${process.pid}`
const GROUP = `console-7040-g-${process.pid}`

let shotDir = null /* <the broker's temp dir>/screenshots: one PNG per page checked */

/* Saves a screenshot of the page as it is now and checks it is a PNG. */
async function shot (page, name) {
  const file = path.join(shotDir, name + '.png')
  await page.screenshot({ path: file, fullPage: true })
  const head = fs.readFileSync(file).subarray(0, 8)
  eq(head.toString('hex'), '89504e470d0a1a0a', `screenshot ${file} is a PNG`)
}

async function textOf (page, sel) {
  return (await page.locator(sel).first().textContent()).trim()
}

async function waitFor (what, fn, timeoutMs = 20000) {
  const deadline = Date.now() + timeoutMs
  let last
  while (Date.now() < deadline) {
    try { last = await fn(); if (last) return last } catch (e) { last = e.message }
    await sleep(250)
  }
  throw new Error(`${what}: not within ${timeoutMs} ms (last: ${JSON.stringify(last)})`)
}

async function produce (kafka, messages) {
  const p = kafka.producer()
  await p.connect()
  await p.send({ topic: TOPIC, acks: -1, messages })
  await p.disconnect()
}

/* Runs a consumer group member until it has read n records, leaves it running; returns the consumer. */
async function consumeAll (kafka, n) {
  const consumer = kafka.consumer({ groupId: GROUP, sessionTimeout: 10000, heartbeatInterval: 500, maxWaitTimeInMs: 200 })
  let seen = 0
  await consumer.connect()
  await consumer.subscribe({ topic: TOPIC, fromBeginning: true })
  await consumer.run({ autoCommitInterval: 100, eachMessage: async () => { seen++ } })
  await waitFor(`consumer read ${n}`, async () => seen >= n, 30000)
  return consumer
}

async function checkTopics (page, base) {
  await page.goto(`${base}/#/topics`)
  const row = `#topics tr[data-topic="${TOPIC}"]`
  await page.waitForSelector(row)
  eq(await textOf(page, `${row} td.partitions`), '3', 'partition count on the topics page')
  eq(await page.locator('#create-topic').count(), 0, 'no create form while the console is read-only')
}

async function checkMembers (page, base) {
  await page.goto(`${base}/#/groups/${encodeURIComponent(GROUP)}`)
  await waitFor('member on the group page', async () =>
    (await page.locator('#group-state').textContent()) === 'Stable' &&
    (await page.locator('#members tbody tr').count()) === 1)
  const member = await page.locator('#members tbody tr').first().textContent()
  check(member.includes('itest-7040'), `member's client id on the page: ${member}`)
  check(member.includes(`${TOPIC} [0, 1, 2]`), `member's assignment on the page: ${member}`)
}

async function checkLag (page, base, admin) {
  const high = Object.fromEntries((await admin.fetchTopicOffsets(TOPIC)).map(p => [p.partition, Number(p.high)]))
  const committed = (await admin.fetchOffsets({ groupId: GROUP, topics: [TOPIC] }))[0].partitions
  const want = Object.fromEntries(committed.map(p => [p.partition, high[p.partition] - Number(p.offset)]))
  log(`admin: lag ${JSON.stringify(want)}`)
  check(Object.values(want).some(l => l > 0), 'some lag to show')
  await page.goto(`${base}/#/groups/${encodeURIComponent(GROUP)}`)
  await waitFor('lag on the group page equals the admin API\'s', async () => {
    for (const [p, lag] of Object.entries(want)) {
      const sel = `#group-offsets tr[data-tp="${TOPIC}/${p}"] td.lag`
      if ((await page.locator(sel).count()) !== 1 || (await textOf(page, sel)) !== String(lag)) return false
    }
    return (await page.locator('#group-state').textContent()) === 'Empty'
  })
}

async function checkBrowser (page, base) {
  await page.goto(`${base}/#/browser/${TOPIC}/1`)
  const row = '#records tr[data-offset]'
  await page.waitForSelector(row)
  const found = await waitFor('the produced record in the browser', async () => {
    const rows = await page.locator(row).allTextContents()
    return rows.find(r => r.includes('browse-me-7040'))
  })
  check(found.includes('key-7040') && found.includes('trace=abc'), `record row: ${found}`)
  await page.selectOption('#browse-format', 'hex')
  await page.click('#browse-load')
  const hex = Buffer.from('browse-me-7040').toString('hex')
  await waitFor('the record as hex', async () => (await page.locator(row).allTextContents()).some(r => r.includes(hex)))
}

async function checkChart (page, base, kafka) {
  await page.goto(`${base}/#/rates`)
  await page.waitForSelector('#rate-chart')
  const draws0 = Number(await page.locator('#rate-chart').getAttribute('data-draws'))
  const img0 = await page.evaluate(() => document.getElementById('rate-chart').toDataURL())
  const p = kafka.producer()
  await p.connect()
  let stop = false
  const running = (async () => {
    for (let i = 0; !stop && i < 200; i++) {
      await p.send({ topic: TOPIC, acks: 1, messages: [{ value: 'x'.repeat(2000) }] })
      await sleep(50)
    }
  })()
  try {
    await waitFor('the chart redrawn twice with a non-zero bytes-in rate', async () =>
      Number(await page.locator('#rate-chart').getAttribute('data-draws')) >= draws0 + 2 &&
      Number(await textOf(page, '#rate-in')) > 0)
  } finally {
    stop = true
    await running
    await p.disconnect()
  }
  const draws1 = Number(await page.locator('#rate-chart').getAttribute('data-draws'))
  const img1 = await page.evaluate(() => document.getElementById('rate-chart').toDataURL())
  check(draws1 > draws0, `chart redrawn (${draws0} -> ${draws1})`)
  check(img1 !== img0, 'chart pixels changed')
}

/* With console.write.enable: the page's forms create a topic and reset the (Empty) group's offsets. */
async function checkForms (page, base, admin) {
  const made = `${TOPIC}-made`
  await page.goto(`${base}/#/topics`)
  await page.fill('#create-name', made)
  await page.fill('#create-partitions', '2')
  await page.click('#create-topic button')
  await waitFor('the create form\'s answer', async () => (await page.locator('#create-result').textContent()) === 'created ' + made)
  const md = await admin.fetchTopicMetadata({ topics: [made] })
  eq(md.topics[0].partitions.length, 2, 'partitions of the topic made from the page')
  await page.goto(`${base}/#/groups/${encodeURIComponent(GROUP)}`)
  await page.waitForSelector('#reset-offsets')
  await page.selectOption('#reset-to', 'earliest')
  await page.click('#reset-offsets button')
  await waitFor('the reset form\'s answer', async () => (await page.locator('#reset-result').textContent()).startsWith('reset 3'))
  const committed = (await admin.fetchOffsets({ groupId: GROUP, topics: [TOPIC] }))[0].partitions
  eq(committed.map(p => p.offset).sort(), ['0', '0', '0'], 'offsets after the reset from the page')
}

main(async () => {
  const mport = await freePort()
  const base = `http://127.0.0.1:${mport}`
  await withBroker({
    props: { 'metrics.listener': base },
    overrides: { 'group.initial.rebalance.delay.ms': '0', 'auto.create.topics.enable': 'false' }
  }, async b => {
    const kafka = new Kafka({ clientId: 'itest-7040', brokers: [b.bootstrap], logLevel: logLevel.WARN, retry: { retries: 5 } })
    const admin = kafka.admin()
    await admin.connect()
    eq(await admin.createTopics({ topics: [{ topic: TOPIC, numPartitions: 3 }], waitForLeaders: true }), true, 'createTopics')
    const msgs = []
    for (let i = 0; i < 30; i++) msgs.push({ partition: i % 3, key: `k${i}`, value: `v${i}` })
    await produce(kafka, msgs)
    shotDir = path.join(b.tmp, 'screenshots')
    fs.mkdirSync(shotDir, { recursive: true })
    await withChromium(async page => {
      await checkTopics(page, base)
      await shot(page, 'topics')
      log('topics page: 3 partitions')
      const consumer = await consumeAll(kafka, 30)
      await checkMembers(page, base)
      await shot(page, 'group-members')
      log('group page: the member and its assignment')
      await consumer.disconnect()
      await produce(kafka, [{ partition: 0, value: 'a' }, { partition: 0, value: 'b' }, { partition: 2, value: 'c' },
        { partition: 1, key: 'key-7040', value: 'browse-me-7040', headers: { trace: 'abc' } }])
      await checkLag(page, base, admin)
      await shot(page, 'group-lag')
      log('group page: lag as the admin API reports it')
      await checkBrowser(page, base)
      await shot(page, 'browser')
      log('message browser: the record, as text and hex')
      await checkChart(page, base, kafka)
      await shot(page, 'rates')
      log('chart: redrawn with traffic; screenshots in ' + shotDir)
      eq(page.errors, [], 'script errors on the page')
    })
    await admin.disconnect()
    await b.stop()
    fs.appendFileSync(b.propsPath, 'console.write.enable=true\n')
    await b.start()
    const admin2 = new Kafka({ clientId: 'itest-7040', brokers: [b.bootstrap], logLevel: logLevel.WARN }).admin()
    await admin2.connect()
    await withChromium(page => checkForms(page, base, admin2))
    log('with console.write.enable: the forms create a topic and reset the group')
    await admin2.disconnect()
  })
})

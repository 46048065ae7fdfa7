'use strict'
/* Node side of the Gregor integration-test harness (same contract as gregor.py).
 *
 *   const { withBroker, main, eq } = require('../lib/gregor')
 *   main(() => withBroker({ overrides: { 'num.partitions': '1' } }, async b => {
 *     ... b.bootstrap ...; await b.restart(); await b.kill9(); await b.start()
 *   }))
 *
 * One free loopback port and one temp data dir per Broker; only the pid it
 * started is signalled; stderr goes to <tmp>/broker.log, printed when the
 * test fails; every wait is bounded.
 * Env: GREGOR_BIN (default $BUILD/bin/gregor under the repo root), BUILD, GREGOR_KEEP=1.
 */
const fs = require('fs')
const os = require('os')
const path = require('path')
const net = require('net')
const childProcess = require('child_process')

const REPO_ROOT = path.resolve(__dirname, '..', '..')
const START_TIMEOUT_MS = 10000
const STOP_TIMEOUT_MS = 10000
const live = new Set()
let failed = false

function brokerBin () {
  let p = process.env.GREGOR_BIN || path.join(process.env.BUILD || 'build', 'bin', 'gregor')
  if (!path.isAbsolute(p)) p = path.join(REPO_ROOT, p)
  return p
}

function freePort () {
  return new Promise((resolve, reject) => {
    const s = net.createServer()
    s.on('error', reject)
    s.listen(0, '127.0.0.1', () => {
      const port = s.address().port
      s.close(() => resolve(port))
    })
  })
}

function portAccepts (port) {
  return new Promise(resolve => {
    const c = net.connect({ host: '127.0.0.1', port })
    const done = ok => { c.destroy(); resolve(ok) }
    c.setTimeout(200, () => done(false))
    c.on('connect', () => done(true))
    c.on('error', () => done(false))
  })
}

const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

class Broker {
  constructor ({ props = {}, overrides = {}, name } = {}) {
    this.name = name || path.basename(process.argv[1] || 'test', '.js')
    this.tmp = fs.mkdtempSync(path.join(os.tmpdir(), `gregor-itest-${this.name}-`))
    this.dataDir = path.join(this.tmp, 'data')
    fs.mkdirSync(this.dataDir)
    this.logPath = path.join(this.tmp, 'broker.log')
    this.propsPath = path.join(this.tmp, 'server.properties')
    this.props = props
    this.overrides = overrides
    this.proc = null
    this.port = null
    this.bootstrap = null
    this.lastExit = null
  }

  async start () {
    if (this.port === null) {
      this.port = await freePort()
      this.bootstrap = `127.0.0.1:${this.port}`
      const lines = ['# written by tests/lib/gregor.js',
        `listeners=PLAINTEXT://${this.bootstrap}`, `log.dirs=${this.dataDir}`]
      for (const [k, v] of Object.entries(this.props)) lines.push(`${k}=${v}`)
      fs.writeFileSync(this.propsPath, lines.join('\n') + '\n')
    }
    const exe = brokerBin()
    try { fs.accessSync(exe, fs.constants.X_OK) } catch (e) {
      throw new Error(`broker binary ${exe} missing (run make build/bin/gregor or set GREGOR_BIN)`)
    }
    const args = [this.propsPath]
    for (const [k, v] of Object.entries(this.overrides)) args.push('--override', `${k}=${v}`)
    fs.appendFileSync(this.logPath, `=== gregor-itest: start: ${exe} ${args.join(' ')}\n`)
    const fd = fs.openSync(this.logPath, 'a')
    this.proc = childProcess.spawn(exe, args, { cwd: this.tmp, stdio: ['ignore', fd, fd] })
    fs.closeSync(fd)
    this.exited = new Promise(resolve => this.proc.on('exit', (code, sig) => {
      this.lastExit = code !== null ? code : `signal ${sig}`
      resolve(this.lastExit)
    }))
    live.add(this)
    const deadline = Date.now() + START_TIMEOUT_MS
    while (Date.now() < deadline) {
      if (this.proc.exitCode !== null || this.proc.signalCode !== null) {
        throw new Error(`broker exited (${this.proc.exitCode ?? this.proc.signalCode}) during start-up\n${this.logTail()}`)
      }
      if (await portAccepts(this.port)) return this
      await sleep(50)
    }
    throw new Error(`broker not accepting on ${this.bootstrap} after ${START_TIMEOUT_MS} ms\n${this.logTail()}`)
  }

  alive () { return this.proc !== null && this.proc.exitCode === null && this.proc.signalCode === null }

  async stop () {
    if (!this.proc) return this.lastExit
    if (this.alive()) {
      this.proc.kill('SIGTERM')
      const t = await Promise.race([this.exited, sleep(STOP_TIMEOUT_MS).then(() => 'timeout')])
      if (t === 'timeout') {
        this.proc.kill('SIGKILL')
        await this.exited
        this.proc = null
        throw new Error(`broker did not exit within ${STOP_TIMEOUT_MS} ms of SIGTERM`)
      }
    }
    await this.exited
    this.proc = null
    fs.appendFileSync(this.logPath, `=== gregor-itest: stopped, exit ${this.lastExit}\n`)
    return this.lastExit
  }

  async kill9 () {
    if (!this.proc) return
    if (this.alive()) this.proc.kill('SIGKILL')
    await this.exited
    this.proc = null
    fs.appendFileSync(this.logPath, '=== gregor-itest: killed with SIGKILL\n')
  }

  async restart () {
    const rc = await this.stop()
    if (rc !== 0 && rc !== null) throw new Error(`broker exit status ${rc} after SIGTERM\n${this.logTail()}`)
    return this.start()
  }

  logTail (n = 200) {
    let text = ''
    try { text = fs.readFileSync(this.logPath, 'utf8') } catch (e) {}
    const lines = text.split('\n')
    return [`--- broker log ${this.logPath} ---`, ...lines.slice(-n), '--- end of broker log ---'].join('\n')
  }

  /* Stop (SIGTERM, must exit 0 unless the test already failed) and remove the temp dir. */
  async close () {
    let err = null
    if (this.alive()) {
      try {
        const rc = await this.stop()
        if (rc !== 0 && !failed) err = new Error(`broker exit status ${rc} after SIGTERM (want 0)`)
      } catch (e) { err = e }
    }
    live.delete(this)
    if (failed || err) {
      process.stderr.write(this.logTail() + '\n')
      process.stderr.write(`gregor-itest: kept ${this.tmp}\n`)
    } else if (process.env.GREGOR_KEEP !== '1') {
      fs.rmSync(this.tmp, { recursive: true, force: true })
    }
    if (err) throw err
  }
}

/* Start a broker, run fn(broker), always close it. An error from fn wins over
 * an error from close (which then only adds the broker log). */
async function withBroker (opts, fn) {
  const b = new Broker(opts)
  await b.start()
  let result
  try {
    result = await fn(b)
  } catch (e) {
    failed = true
    try { await b.close() } catch (e2) { process.stderr.write(`also: ${e2.message}\n`) }
    throw e
  }
  await b.close()
  return result
}

function killLeftovers () {
  for (const b of live) {
    if (b.alive()) {
      try { b.proc.kill('SIGKILL') } catch (e) {}
    }
    process.stderr.write(b.logTail() + '\n')
  }
  live.clear()
}

function eq (got, want, what = 'value') {
  const g = JSON.stringify(got)
  const w = JSON.stringify(want)
  if (g !== w) throw new Error(`${what}: got ${g && g.slice(0, 400)}, want ${w && w.slice(0, 400)}`)
}

function check (cond, what) {
  if (!cond) throw new Error(what)
}

/* Run a client command synchronously (bounded); returns { stdout: Buffer, stderr: string }. */
function run (cmd, args, { input, timeoutMs = 60000 } = {}) {
  const r = childProcess.spawnSync(cmd, args, { input, timeout: timeoutMs, maxBuffer: 256 << 20 })
  if (r.error) throw new Error(`${cmd} ${args.join(' ')}: ${r.error.message}`)
  if (r.status !== 0) {
    throw new Error(`${cmd} ${args.join(' ')} exited ${r.status}\nstderr:\n${r.stderr.toString().slice(-4000)}`)
  }
  return { stdout: r.stdout, stderr: r.stderr.toString() }
}

function log (msg) {
  process.stdout.write(`[${new Date().toISOString().slice(11, 19)}] ${msg}\n`)
}

/* Run the whole test; exit 0 on success, 1 (printing the error and broker logs) on failure. */
function main (fn) {
  const t0 = Date.now()
  process.on('SIGTERM', () => {
    failed = true
    process.stderr.write('gregor-itest: got SIGTERM (timeout?)\n')
    killLeftovers()
    process.exit(1)
  })
  fn().then(() => {
    log(`ok (${((Date.now() - t0) / 1000).toFixed(1)}s)`)
    process.exit(0)
  }, async e => {
    failed = true
    process.stderr.write(`${e && e.stack ? e.stack : e}\nFAILED after ${((Date.now() - t0) / 1000).toFixed(1)}s\n`)
    for (const b of [...live]) {
      try { await b.close() } catch (e2) {}
    }
    killLeftovers()
    process.exit(1)
  })
}

module.exports = { Broker, withBroker, main, eq, check, run, log, sleep, freePort, brokerBin, REPO_ROOT, isFailed: () => failed }

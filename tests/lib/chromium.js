'use strict'
/* A headless Chromium (Debian's `chromium`) for the web console tests,
 * driven by playwright-core over the DevTools protocol.
 *
 *   const { withChromium } = require('../lib/chromium')
 *   await withChromium(async page => { await page.goto(url) ... })
 *
 * The browser is spawned here, not by Playwright, so that this test owns its
 * pid and profile: a fresh --user-data-dir under the system temp dir, removed
 * at the end, and the process killed by its pid (SIGKILL after a bounded
 * wait) whatever happens.  It runs in a process group of its own, whose id
 * is that pid, so its helper processes (renderer, zygote, utility), which
 * write the profile too, are stopped with it.  Every wait is bounded.
 */
const fs = require('fs')
const os = require('os')
const path = require('path')
const childProcess = require('child_process')
const { chromium } = require('playwright-core')

const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium'
const START_TIMEOUT_MS = 20000
const live = new Set()

function killAll () {
  for (const p of live) { try { process.kill(-p.pid, 'SIGKILL') } catch (e) {} }
  live.clear()
}
process.on('exit', killAll)

/* Spawns Chromium and resolves with { proc, wsUrl } once it prints its DevTools endpoint. */
function spawnChromium (profile) {
  const args = ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage',
    '--no-first-run', '--no-default-browser-check', '--disable-extensions', '--disable-background-networking',
    `--user-data-dir=${profile}`, '--remote-debugging-address=127.0.0.1', '--remote-debugging-port=0', 'about:blank']
  const proc = childProcess.spawn(CHROMIUM, args, { stdio: ['ignore', 'ignore', 'pipe'], detached: true })
  live.add(proc)
  return new Promise((resolve, reject) => {
    let err = ''
    const timer = setTimeout(() => reject(new Error(`chromium did not start in ${START_TIMEOUT_MS} ms:\n${err.slice(-2000)}`)), START_TIMEOUT_MS)
    proc.on('error', e => { clearTimeout(timer); reject(e) })
    proc.on('exit', code => { clearTimeout(timer); reject(new Error(`chromium exited ${code}:\n${err.slice(-2000)}`)) })
    proc.stderr.on('data', d => {
      err += d.toString()
      const m = err.match(/DevTools listening on (ws:\/\/\S+)/)
      if (m) { clearTimeout(timer); resolve({ proc, wsUrl: m[1] }) }
    })
  })
}

/* True while any process of the group whose id is pgid is left. */
function groupAlive (pgid) {
  try { process.kill(-pgid, 0); return true } catch (e) { return false }
}

async function stopChromium (proc) {
  if (proc.exitCode === null && proc.signalCode === null) {
    const exited = new Promise(resolve => proc.once('exit', resolve))
    try { process.kill(-proc.pid, 'SIGTERM') } catch (e) {}
    const t = await Promise.race([exited, new Promise(resolve => setTimeout(() => resolve('timeout'), 5000))])
    if (t === 'timeout') {
      try { process.kill(-proc.pid, 'SIGKILL') } catch (e) {}
      await exited
    }
  }
  for (let i = 0; i < 50 && groupAlive(proc.pid); i++) { // the helpers, bounded: 5 s, then SIGKILL
    if (i === 30) { try { process.kill(-proc.pid, 'SIGKILL') } catch (e) {} }
    await new Promise(resolve => setTimeout(resolve, 100))
  }
  live.delete(proc)
}

/* Runs fn(page) in a fresh headless Chromium; the page's console errors are collected in page.errors. */
async function withChromium (fn) {
  if (!fs.existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} missing (Debian package chromium; make deps)`)
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'gregor-chromium-'))
  let started = null
  let browser = null
  try {
    started = await spawnChromium(profile)
    browser = await chromium.connectOverCDP(started.wsUrl, { timeout: START_TIMEOUT_MS })
    const context = browser.contexts()[0] || await browser.newContext()
    const page = await context.newPage()
    page.setDefaultTimeout(15000)
    page.errors = []
    page.on('pageerror', e => page.errors.push(e.message))
    return await fn(page)
  } finally {
    if (browser) { try { await Promise.race([browser.close(), new Promise(resolve => setTimeout(resolve, 3000))]) } catch (e) {} }
    if (started) await stopChromium(started.proc)
    // Chromium's helper processes may still be writing the profile for a moment after the browser's pid
    // is gone: retry the removal (ENOTEMPTY) rather than fail the test over a temp dir
    fs.rmSync(profile, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 })
  }
}

module.exports = { withChromium }

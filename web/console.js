/*
 * Gregor's web console: reads the broker's JSON API (docs/console.md) on
 * the same listener and draws brokers, topics, consumer groups, a message
 * browser and a bytes-per-second chart.  No library, no build step: every
 * text from the broker goes into the page through textContent.
 */
'use strict'

const REFRESH_MS = 2000
const RATE_MS = 1000
let timer = null
let lastTopics = null // previous /api/topics poll: per-topic message rates
let writeEnabled = false // console.write.enable (/api/console): the create and reset forms are shown

function el (tag, attrs, ...kids) {
  const e = document.createElement(tag)
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'class') e.className = v
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v)
    else e.setAttribute(k, v)
  }
  for (const k of kids.flat()) {
    if (k === null || k === undefined) continue
    e.appendChild(typeof k === 'object' ? k : document.createTextNode(String(k)))
  }
  return e
}

function table (id, heads, rows) {
  return el('table', { id }, el('thead', {}, el('tr', {}, heads.map(h => el('th', {}, h)))), el('tbody', {}, rows))
}

function td (v, cls) { return el('td', cls ? { class: cls } : {}, v === null || v === undefined ? '–' : v) }

function status (msg) { document.getElementById('status').textContent = msg || '' }

async function api (path, opts) {
  const r = await fetch(path, opts)
  let body = null
  try { body = await r.json() } catch (e) { body = { error: 'not JSON (HTTP ' + r.status + ')' } }
  if (!r.ok) { const err = new Error(body.error || ('HTTP ' + r.status)); err.status = r.status; throw err }
  return body
}

function show (...nodes) {
  const v = document.getElementById('view')
  v.replaceChildren(...nodes.filter(Boolean))
}

function fmtBytes (n) {
  if (n === null || n === undefined) return '–'
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB']
  let i = 0
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++ }
  return (i ? n.toFixed(1) : n) + ' ' + u[i]
}

/* ---- brokers ---- */
async function viewBrokers () {
  const b = await api('/api/brokers')
  show(el('h2', {}, 'Brokers'),
    el('p', {}, 'Cluster ', el('code', { id: 'cluster-id' }, b.cluster_id), b.cluster_mode ? ' (ZooKeeper mode)' : ' (single node)'),
    table('brokers', ['node', 'host', 'port', 'rack', 'role'], b.brokers.map(x =>
      el('tr', { 'data-node': x.node_id }, td(x.node_id, 'num'), td(x.host), td(x.port, 'num'), td(x.rack),
        td([x.node_id === b.controller_id ? 'controller' : '', x.self ? ' (this broker)' : ''].join('').trim() || 'broker')))))
}

/* ---- topics ---- */
function topicRates (topics) {
  const now = Date.now()
  const prev = lastTopics
  lastTopics = { t: now, m: Object.fromEntries(topics.map(t => [t.name, t.messages_in])) }
  if (!prev || now <= prev.t) return {}
  const out = {}
  for (const t of topics) if (t.name in prev.m) out[t.name] = (t.messages_in - prev.m[t.name]) * 1000 / (now - prev.t)
  return out
}

function createForm () {
  const res = el('span', { id: 'create-result' })
  const name = el('input', { id: 'create-name', placeholder: 'topic name' })
  const parts = el('input', { id: 'create-partitions', type: 'number', min: '1', value: '1' })
  return el('form', {
    id: 'create-topic',
    onsubmit: async e => {
      e.preventDefault()
      try {
        await api('/api/topics', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ name: name.value, partitions: Number(parts.value) }) })
        res.className = 'ok'; res.textContent = 'created ' + name.value
      } catch (err) { res.className = 'error'; res.textContent = err.message }
    }
  }, 'New topic', name, 'partitions', parts, el('button', { type: 'submit' }, 'Create'), res)
}

async function viewTopics () {
  const d = await api('/api/topics')
  const rates = topicRates(d.topics)
  const form = writeEnabled ? (document.getElementById('create-topic') || createForm()) : null
  show(el('h2', {}, 'Topics'), table('topics', ['topic', 'partitions', 'size', 'messages in', 'messages/s', 'bytes in', 'bytes out'],
    d.topics.map(t => el('tr', { 'data-topic': t.name },
      el('td', {}, el('a', { href: '#/topics/' + encodeURIComponent(t.name) }, t.name), t.internal ? ' (internal)' : ''),
      td(t.partition_count, 'num partitions'), td(fmtBytes(t.size_bytes), 'num'), td(t.messages_in, 'num'),
      td(t.name in rates ? rates[t.name].toFixed(1) : '–', 'num rate'), td(fmtBytes(t.bytes_in), 'num'), td(fmtBytes(t.bytes_out), 'num')))),
  form)
}

async function viewTopic (name) {
  const t = await api('/api/topics/' + encodeURIComponent(name))
  show(el('h2', {}, 'Topic ', el('code', {}, t.name)),
    table('partitions', ['partition', 'leader', 'replicas', 'ISR', 'log start', 'log end', 'high watermark', 'size', ''],
      t.partitions.map(p => el('tr', { 'data-partition': p.partition }, td(p.partition, 'num'), td(p.leader, 'num'),
        td(p.replicas.join(', ')), td(p.isr.join(', ')), td(p.log_start_offset, 'num'), td(p.log_end_offset, 'num'),
        td(p.high_watermark, 'num'), td(fmtBytes(p.size_bytes), 'num'),
        el('td', {}, el('a', { href: '#/browser/' + encodeURIComponent(t.name) + '/' + p.partition }, 'messages'))))))
}

/* ---- groups ---- */
async function viewGroups () {
  const d = await api('/api/groups')
  show(el('h2', {}, 'Consumer groups'), table('groups', ['group', 'state', 'protocol', 'generation', 'members'],
    d.groups.map(g => el('tr', { 'data-group': g.group_id },
      el('td', {}, el('a', { href: '#/groups/' + encodeURIComponent(g.group_id) }, g.group_id)),
      td(g.state, 'state'), td([g.protocol_type, g.protocol].filter(Boolean).join(' / ')), td(g.generation, 'num'), td(g.members, 'num members')))))
}

function assignments (a) {
  if (!a) return '–'
  return a.map(x => x.topic + ' [' + x.partitions.join(', ') + ']').join('; ')
}

function resetForm (group) {
  const res = el('span', { id: 'reset-result' })
  const to = el('select', { id: 'reset-to' }, ['earliest', 'latest', 'offset'].map(x => el('option', { value: x }, x)))
  const off = el('input', { id: 'reset-offset', type: 'number', min: '0', placeholder: 'offset' })
  const topic = el('input', { id: 'reset-topic', placeholder: 'topic (all committed if empty)' })
  return el('form', {
    id: 'reset-offsets',
    'data-group': group,
    onsubmit: async e => {
      e.preventDefault()
      const body = { to: to.value }
      if (to.value === 'offset') body.offset = Number(off.value)
      if (topic.value) body.topic = topic.value
      try {
        const r = await api('/api/groups/' + encodeURIComponent(group) + '/offsets', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) })
        res.className = 'ok'; res.textContent = 'reset ' + r.offsets.length + ' partition(s)'
      } catch (err) { res.className = 'error'; res.textContent = err.message }
    }
  }, 'Reset offsets (group must be Empty) to', to, off, topic, el('button', { type: 'submit' }, 'Reset'), res)
}

async function viewGroup (id) {
  const g = await api('/api/groups/' + encodeURIComponent(id))
  const old = document.getElementById('reset-offsets')
  const form = !writeEnabled ? null : old && old.dataset.group === id ? old : resetForm(id)
  show(el('h2', {}, 'Group ', el('code', { id: 'group-id' }, g.group_id), ' ', el('span', { id: 'group-state' }, g.state)),
    el('h2', {}, 'Members'),
    table('members', ['member', 'client id', 'host', 'assigned'], g.member_list.map(m =>
      el('tr', {}, td(m.member_id), td(m.client_id), td(m.client_host), td(assignments(m.assignments))))),
    el('h2', {}, 'Committed offsets and lag'),
    table('group-offsets', ['topic', 'partition', 'committed', 'high watermark', 'lag'], g.offsets.map(o =>
      el('tr', { 'data-tp': o.topic + '/' + o.partition }, td(o.topic), td(o.partition, 'num'), td(o.committed_offset, 'num committed'),
        td(o.high_watermark, 'num hw'), td(o.lag, 'num lag')))),
    form)
}

/* ---- message browser ---- */
function shown (b, hex) {
  if (b === null) return el('i', {}, 'null')
  return (hex ? b.hex : b.text) + (b.truncated ? ' … (' + b.size + ' bytes)' : '')
}

async function loadRecords (topic, part, limit, hex) {
  const out = document.getElementById('records-out')
  try {
    const d = await api('/api/topics/' + encodeURIComponent(topic) + '/partitions/' + part + '/records?limit=' + limit)
    out.replaceChildren(el('p', {}, 'offsets ', d.log_start_offset, ' … ', d.high_watermark, ', showing ', d.records.length),
      table('records', ['offset', 'timestamp', 'key', 'value', 'headers'], d.records.slice().reverse().map(r =>
        el('tr', { 'data-offset': r.offset }, td(r.offset, 'num'), td(new Date(r.timestamp).toISOString(), 'timestamp'),
          td(shown(r.key, hex), 'bytes key'), td(shown(r.value, hex), 'bytes value'),
          td(r.headers.map(h => h.key + '=' + (h.value === null ? 'null' : hex ? h.value.hex : h.value.text)).join(', '), 'bytes headers')))))
  } catch (err) {
    out.replaceChildren(el('p', { class: 'error', id: 'records-error' }, err.message))
  }
}

async function viewBrowser (topic, part) {
  const d = await api('/api/topics')
  const sel = el('select', { id: 'browse-topic' }, d.topics.map(t => el('option', { value: t.name }, t.name)))
  const p = el('input', { id: 'browse-partition', type: 'number', min: '0', value: part || '0' })
  const lim = el('input', { id: 'browse-limit', type: 'number', min: '1', max: '500', value: '20' })
  const fmt = el('select', { id: 'browse-format' }, el('option', { value: 'text' }, 'text'), el('option', { value: 'hex' }, 'hex'))
  if (topic) sel.value = topic
  show(el('h2', {}, 'Messages'), el('form', {
    id: 'browse-form',
    onsubmit: e => { e.preventDefault(); loadRecords(sel.value, p.value, lim.value, fmt.value === 'hex') }
  }, 'topic', sel, 'partition', p, 'latest', lim, fmt, el('button', { type: 'submit', id: 'browse-load' }, 'Show')),
  el('div', { id: 'records-out' }))
  if (topic) loadRecords(topic, p.value, lim.value, false)
}

/* ---- throughput chart ---- */
function drawRates (samples) {
  const c = document.getElementById('rate-chart')
  const g = c.getContext('2d')
  const w = c.width; const h = c.height; const pad = 30
  g.clearRect(0, 0, w, h)
  const max = Math.max(1024, ...samples.map(s => Math.max(s.bytes_in_per_sec, s.bytes_out_per_sec)))
  g.strokeStyle = '#d9dee6'; g.fillStyle = '#666'; g.font = '11px sans-serif'
  for (let i = 0; i <= 4; i++) {
    const y = h - pad / 2 - (h - pad) * i / 4
    g.beginPath(); g.moveTo(pad * 2, y); g.lineTo(w, y); g.stroke()
    g.fillText(fmtBytes(Math.round(max * i / 4)), 0, y + 4)
  }
  const line = (key, color) => {
    g.strokeStyle = color; g.lineWidth = 2; g.beginPath()
    samples.forEach((s, i) => {
      const x = pad * 2 + (w - pad * 2) * (samples.length > 1 ? i / (samples.length - 1) : 1)
      const y = h - pad / 2 - (h - pad) * s[key] / max
      if (i) g.lineTo(x, y); else g.moveTo(x, y)
    })
    g.stroke(); g.lineWidth = 1
  }
  line('bytes_in_per_sec', '#2a7de1')
  line('bytes_out_per_sec', '#e1702a')
  c.dataset.draws = String(Number(c.dataset.draws) + 1)
  c.dataset.points = String(samples.length)
}

async function pollRates () {
  try {
    const d = await api('/api/rates')
    const last = d.samples[d.samples.length - 1]
    if (last) {
      document.getElementById('rate-in').textContent = last.bytes_in_per_sec.toFixed(0)
      document.getElementById('rate-out').textContent = last.bytes_out_per_sec.toFixed(0)
      document.getElementById('rate-msgs').textContent = last.messages_in_per_sec.toFixed(1)
    }
    drawRates(d.samples)
  } catch (err) { status(err.message) }
}

/* ---- routing ---- */
async function route () {
  const parts = location.hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent)
  const page = parts[0] || 'topics'
  for (const a of document.querySelectorAll('nav a')) a.classList.toggle('active', a.id === 'nav-' + page)
  document.getElementById('rates-panel').style.display = page === 'rates' || page === 'topics' ? '' : 'none'
  try {
    if (page === 'brokers') await viewBrokers()
    else if (page === 'topics' && parts[1]) await viewTopic(parts.slice(1).join('/'))
    else if (page === 'topics') await viewTopics()
    else if (page === 'groups' && parts[1]) await viewGroup(parts.slice(1).join('/'))
    else if (page === 'groups') await viewGroups()
    else if (page === 'browser') { if (!document.getElementById('browse-form')) await viewBrowser(parts[1], parts[2]); return }
    else if (page === 'rates') show()
    status('')
  } catch (err) {
    status(err.message)
  }
}

async function start () {
  try { writeEnabled = (await api('/api/console')).write_enabled } catch (err) { status(err.message) }
  window.addEventListener('hashchange', () => {
    if (document.getElementById('browse-form')) document.getElementById('browse-form').remove()
    route()
  })
  route()
  pollRates()
  setInterval(() => { if (!document.activeElement || !document.activeElement.closest('form')) route() }, REFRESH_MS)
  setInterval(pollRates, RATE_MS)
}

start()

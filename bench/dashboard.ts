/**
 * Dashboard pages at scale: seeds N reports (default 1,000,000) into a fresh data dir, starts the server
 * in-process, signs in as an admin and times each request the dashboard's pages make (inbox folders,
 * every filter, unread counts, a page deep in the cursor chain, a report's detail and history, Apps,
 * keys). Loopback round trips, so the figure is server time plus a local HTTP hop. Budget: 100 ms.
 *
 * Usage: bun bench/dashboard.ts [--rows N] [--runs N]
 */
import { parseArgs } from 'node:util'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { loadConfig } from '../src/config'
import { startServer } from '../src/runtime/server'
import { Logger } from '../src/core/logger'
import { createTenantsService } from '../src/modules/tenants/service'
import { createAdminsService } from '../src/modules/admins/service'
import { sqliteOf } from '../test/sqlite-of'

const { values } = parseArgs({ options: { rows: { type: 'string', default: '1000000' }, runs: { type: 'string', default: '20' } } })
const ROWS = Number(values.rows)
const RUNS = Math.min(200, Number(values.runs))
const BUDGET_MS = 100

const dataDir = mkdtempSync(join(tmpdir(), 'fixloop-bench-dash-'))
const config = loadConfig({ host: '127.0.0.1', port: '0', dataDir }, { FIXLOOP_LOG_LEVEL: 'silent', FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000' })
const server = await startServer(config, { log: new Logger('silent'), worker: { autoStart: false } })
const tenants = createTenantsService(server.ctx)
const org = await tenants.createOrg('Bench')
const apps = [await tenants.createApp(org.id, { name: 'Web' }), await tenants.createApp(org.id, { name: 'Mobile' })]
await createAdminsService(server.ctx.store.admins, server.ctx.box, server.ctx.clock).create('bench@example.com', 'bench password')

// Seed: ascending ids over the last 90 days, a realistic mix of statuses, severities and extras.
const STATUSES = ['awaiting_manual', 'awaiting_manual', 'awaiting_manual', 'archived', 'archived', 'failed', 'pr_opened', 'queued', 'sanitized', 'awaiting_manual']
const WORDS = 'checkout button login page blank screen search slow crash settings profile upload image cart payment error timeout mobile safari firefox'.split(' ')
const t0 = performance.now()
const start = Math.floor(Date.now() / 1000) - 90 * 86400
const rand = randomBytes(5).toString('hex')
const insert = sqliteOf(server.ctx).query(
  `INSERT INTO feedback (id, org_id, app_id, status, version, severity, text, url, console_logs, submitted_mode, redactions, created_at, updated_at)
   VALUES (?, ?, ?, ?, 3, ?, ?, ?, ?, 'public', '{}', ?, ?)`,
)
let seed = 0x2545f491
const next = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 4294967296)
for (let done = 0; done < ROWS; ) {
  sqliteOf(server.ctx).transaction(() => {
    for (let i = 0; i < 50_000 && done < ROWS; i++, done++) {
      const secs = start + Math.floor((done / ROWS) * 90 * 86400)
      const id = secs.toString(16).padStart(8, '0') + rand + (done & 0xffffff).toString(16).padStart(6, '0')
      const text = Array.from({ length: 8 }, () => WORDS[Math.floor(next() * WORDS.length)]).join(' ')
      const sev = next() < 0.3 ? ['low', 'medium', 'high'][Math.floor(next() * 3)] : null
      const logs = next() < 0.2 ? '[{"level":"error","message":"boom","ts":1}]' : null
      insert.run(id, org.id, apps[done % 2].id, STATUSES[Math.floor(next() * STATUSES.length)], sev, text, `https://shop.example/${WORDS[done % WORDS.length]}`, logs, secs * 1000, secs * 1000)
    }
  })()
}
sqliteOf(server.ctx).run('ANALYZE')
console.log(`seeded ${ROWS.toLocaleString()} reports in ${((performance.now() - t0) / 1000).toFixed(1)} s`)

const login = await fetch(`${server.url}/admin/api/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'bench@example.com', password: 'bench password' }) })
const cookie = login.headers.get('set-cookie')!.split(';')[0]
const headers = { cookie, 'x-fixloop-org': org.id }
const base = `/admin/api/orgs/${org.id}`

async function time(path: string): Promise<{ p50: number; p95: number }> {
  const ms: number[] = []
  for (let i = 0; i < RUNS; i++) {
    const t = performance.now()
    const r = await fetch(server.url + path, { headers })
    await r.arrayBuffer()
    if (r.status !== 200) throw new Error(`${path}: ${r.status}`)
    ms.push(performance.now() - t)
  }
  ms.sort((a, b) => a - b)
  return { p50: ms[Math.floor(ms.length / 2)], p95: ms[Math.floor(ms.length * 0.95)] }
}

// A cursor deep in the list: the oldest rows of the newest-first order.
const deep = (sqliteOf(server.ctx).query('SELECT id FROM feedback WHERE org_id = ? ORDER BY id LIMIT 1 OFFSET 1000').get(org.id) as { id: string }).id
const sample = (sqliteOf(server.ctx).query('SELECT id FROM feedback WHERE org_id = ? ORDER BY id DESC LIMIT 1 OFFSET 500000').get(org.id) as { id: string } | null)?.id ?? deep
const cases: [string, string][] = [
  ['inbox (undecided)', `${base}/inbox`],
  ['awaiting manual', `${base}/inbox?folder=awaiting_manual`],
  ['queued', `${base}/inbox?folder=queued`],
  ['pr opened', `${base}/inbox?folder=pr_opened`],
  ['archived', `${base}/inbox?folder=archived`],
  ['all', `${base}/inbox?folder=all`],
  ['deep cursor (row ~1M)', `${base}/inbox?folder=all&cursor=${deep}`],
  ['filter: App', `${base}/inbox?folder=all&appId=${apps[1].id}`],
  ['filter: severity high', `${base}/inbox?folder=all&severity=high`],
  ['filter: has console', `${base}/inbox?folder=all&hasConsole=true`],
  ['filter: URL contains', `${base}/inbox?folder=all&urlContains=payment`],
  ['filter: text contains', `${base}/inbox?folder=all&q=safari%20firefox`],
  ['filter: date range (1 day)', `${base}/inbox?folder=all&from=${new Date(Date.now() - 45 * 86400_000).toISOString().slice(0, 10)}&to=${new Date(Date.now() - 45 * 86400_000).toISOString().slice(0, 10)}`],
  ['filter: rare text (worst case)', `${base}/inbox?folder=all&q=zebra`],
  ['unread counts', `${base}/inbox/counts`],
  ['report detail (/v1)', `/v1/feedback/${sample}`],
  ['report history', `${base}/feedback/${sample}/history`],
  ['apps + 30-day cost', `${base}/costs`],
  ['keys', `${base}/keys`],
]
console.log(`\n${'request'.padEnd(32)} ${'p50 ms'.padStart(8)} ${'p95 ms'.padStart(8)}  vs ${BUDGET_MS} ms budget`)
for (const [name, path] of cases) {
  const { p50, p95 } = await time(path)
  console.log(`${name.padEnd(32)} ${p50.toFixed(1).padStart(8)} ${p95.toFixed(1).padStart(8)}  ${(p95 / BUDGET_MS).toFixed(2)}x${p95 > BUDGET_MS ? '  OVER' : ''}`)
}
await server.stop()
rmSync(dataDir, { recursive: true, force: true })

/**
 * /readyz tells the truth (a full disk on a real tmpfs makes it 503 with the reason) and /metrics is valid
 * Prometheus text (parsed by parse-prometheus-text-format), token-protected when FIXLOOP_METRICS_TOKEN is set.
 * Both against the compiled binary.
 */
import { afterAll, expect, test } from 'bun:test'
import parsePrometheus from 'parse-prometheus-text-format'
import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { BINARY, call, freePort, spawnServer, tempDir } from './harness'
import { cliTenant, ensureBinary } from './helpers-lifecycle'
import { mountTmpfs, unmountTmpfs } from './tmpfs'

type Family = { name: string; type: string; metrics: { labels?: Record<string, string>; value?: string; buckets?: Record<string, string>; count?: string }[] }

afterAll(() => unmountTmpfs())

test('/readyz is 503 with the reason on a full disk, and ready again once space is freed', async () => {
  ensureBinary()
  const dir = mountTmpfs('the full-disk check', 'size=24m')
  if (!dir) return
  const dataDir = join(dir, 'data')
  mkdirSync(dataDir)
  const server = await spawnServer(dataDir, { FIXLOOP_MIN_FREE_DISK_MB: '4' })
  try {
    const ready = await call(server.url, 'GET', '/readyz')
    expect(ready.status).toBe(200)
    expect(Object.keys(ready.body.checks).sort()).toEqual(['checkpointer', 'database', 'disk', 'masterKey', 'trackers', 'worker'])
    // Fill the filesystem: dd stops at ENOSPC.
    Bun.spawnSync(['dd', 'if=/dev/zero', `of=${join(dir, 'filler')}`, 'bs=1M', 'count=64'])
    const full = await call(server.url, 'GET', '/readyz')
    expect(full.status).toBe(503)
    expect(full.body.error.code).toBe('not_ready')
    expect(full.body.error.details.reason).toContain('disk')
    expect(full.body.error.details.checks.disk.ok).toBe(false)
    expect((await call(server.url, 'GET', '/healthz')).status).toBe(200)
    rmSync(join(dir, 'filler'))
    expect((await call(server.url, 'GET', '/readyz')).status).toBe(200)
  } finally {
    await server.stop()
  }
}, 30_000)

test('/metrics: Prometheus text with requests, latency, reports, jobs, agent runs and WAL size; bearer token enforced', async () => {
  ensureBinary()
  const dataDir = tempDir()
  const t = await cliTenant(dataDir)
  const server = await spawnServer(dataDir, { FIXLOOP_METRICS_TOKEN: 'scrape-secret' })
  try {
    for (let i = 0; i < 3; i++) expect((await call(server.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: `metrics case ${i}` } })).status).toBe(201)
    expect((await call(server.url, 'GET', '/v1/feedback/zz', { auth: t.key })).status).toBe(400)
    expect((await call(server.url, 'GET', '/metrics')).status).toBe(401)
    expect((await call(server.url, 'GET', '/metrics', { auth: 'wrong' })).status).toBe(401)
    const res = await fetch(server.url + '/metrics', { headers: { authorization: 'Bearer scrape-secret' } })
    expect(res.status).toBe(200)
    // The scheme is case-insensitive and one or more spaces follow it (RFC 6750, RFC 7235 1*SP), as the
    // /v1 routes read their keys: the token was refused after two spaces.
    for (const header of ['bearer scrape-secret', 'BEARER scrape-secret', 'Bearer  scrape-secret']) {
      expect([header, (await fetch(server.url + '/metrics', { headers: { authorization: header } })).status]).toEqual([header, 200])
    }
    for (const header of ['Bearer scrape-secretx', 'Bearer', 'Basic scrape-secret', 'scrape-secret']) {
      expect([header, (await fetch(server.url + '/metrics', { headers: { authorization: header } })).status]).toEqual([header, 401])
    }
    expect(res.headers.get('content-type')).toContain('text/plain')
    const text = await res.text()
    // The parser throws on any malformed line, so parsing at all validates the whole exposition.
    const families = parsePrometheus(text) as Family[]
    const byName = new Map(families.map((f) => [f.name, f]))
    const requests = byName.get('fixloop_http_requests_total')!
    expect(requests.type).toBe('COUNTER')
    const created = requests.metrics.find((m) => m.labels?.route === '/v1/feedback' && m.labels?.status === '201' && m.labels?.method === 'POST')
    expect(Number(created?.value)).toBe(3)
    expect(requests.metrics.some((m) => m.labels?.route === '/v1/feedback/:id' && m.labels?.status === '400')).toBe(true)
    expect(byName.get('fixloop_http_request_duration_seconds')!.type).toBe('HISTOGRAM')
    // parse-prometheus-text-format merges a labelled histogram's series into one object (a limitation of
    // that parser), so the per-route series are read from the validated text itself.
    const sample = (suffix: string, extra = '') => {
      const m = new RegExp(`^fixloop_http_request_duration_seconds${suffix}\\{method="POST",route="/v1/feedback"${extra}\\} (\\S+)$`, 'm').exec(text)
      return m ? Number(m[1]) : undefined
    }
    expect(sample('_count')).toBe(3)
    expect(sample('_bucket', ',le="\\+Inf"')).toBe(3)
    expect(sample('_sum')).toBeGreaterThan(0)
    // Buckets are cumulative: never decreasing with le.
    const buckets = [...text.matchAll(/^fixloop_http_request_duration_seconds_bucket\{method="POST",route="\/v1\/feedback",le="[^"]+"\} (\d+)$/gm)].map((m) => Number(m[1]))
    expect(buckets.length).toBe(13)
    expect(buckets).toEqual([...buckets].sort((a, b) => a - b))
    const reports = byName.get('fixloop_reports')!
    const total = reports.metrics.reduce((n, m) => n + Number(m.value), 0)
    expect(total).toBe(3)
    for (const name of ['fixloop_webhook_deliveries', 'fixloop_jobs_backlog', 'fixloop_jobs_oldest_age_seconds', 'fixloop_agent_runs', 'fixloop_agent_cost_usd', 'fixloop_wal_bytes']) {
      expect(byName.has(name)).toBe(true)
    }
    expect(Number(byName.get('fixloop_wal_bytes')!.metrics[0].value)).toBeGreaterThanOrEqual(0)
  } finally {
    await server.stop()
  }
}, 30_000)

test('the start-up line names the version, the storage mode and the docs URL', async () => {
  ensureBinary()
  const port = await freePort()
  const proc = Bun.spawn([BINARY, 'serve', '--port', String(port), '--data-dir', tempDir()], { env: { PATH: process.env.PATH ?? '' }, stdout: 'pipe', stderr: 'pipe' })
  try {
    const reader = proc.stdout.getReader()
    let text = ''
    const deadline = Date.now() + 10_000
    while (!text.includes('listening') && Date.now() < deadline) {
      const { value, done } = await reader.read()
      if (done) break
      text += new TextDecoder().decode(value)
    }
    const line = JSON.parse(text.split('\n').find((l) => l.includes('listening'))!)
    expect(line.msg).toMatch(/^fixloop \d+\.\d+\.\d+ listening on http:\/\/127\.0\.0\.1:\d+ \(database: SQLite in \S+; blobs: embedded; docs: http:\/\/127\.0\.0\.1:\d+\/docs\)$/)
    expect(line.storage).toBe('embedded')
  } finally {
    proc.kill('SIGTERM')
    await proc.exited
  }
}, 30_000)

/** The one unlabelled sample of fixloop_jobs_oldest_age_seconds, scraped from the running binary. */
async function oldestJobAge(url: string): Promise<number> {
  const text = await (await fetch(url + '/metrics')).text()
  const m = /^fixloop_jobs_oldest_age_seconds (\S+)$/m.exec(text)
  if (!m) throw new Error(`no fixloop_jobs_oldest_age_seconds in:\n${text}`)
  return Number(m[1])
}

test('fixloop_jobs_oldest_age_seconds counts only due work: an idle server with its hourly uploads_gc job scheduled stays ~0', async () => {
  ensureBinary()
  const dataDir = tempDir()
  // First start: the server schedules its recurring uploads_gc job (created now, due in a minute).
  let server = await spawnServer(dataDir)
  await server.stop()
  // As after the job's last hourly run: created 50 minutes ago, due in 10 minutes.
  const { Database } = await import('bun:sqlite')
  const db = new Database(join(dataDir, 'fixloop.db'))
  const now = Date.now()
  const scheduled = db.query("UPDATE jobs SET created_at = ?, run_after = ? WHERE kind = 'uploads_gc'").run(now - 50 * 60_000, now + 10 * 60_000).changes
  db.close()
  expect(scheduled).toBe(1)
  server = await spawnServer(dataDir)
  try {
    await Bun.sleep(1500)
    for (let i = 0; i < 3; i++) {
      expect(await oldestJobAge(server.url)).toBeLessThan(1)
      await Bun.sleep(300)
    }
  } finally {
    await server.stop()
  }
}, 60_000)

test('fixloop_jobs_oldest_age_seconds: a due job ages from its due time, a future one does not count', async () => {
  const { Database } = await import('bun:sqlite')
  const { applyMigrations } = await import('../src/db/sqlite/migrate')
  const { createMetrics } = await import('../src/modules/metrics/service')
  const dataDir = tempDir()
  const sqlite = new Database(join(dataDir, 'fixloop.db'))
  applyMigrations(sqlite)
  let now = 1_000_000_000_000
  const { sqliteStorage } = await import('../src/db/sqlite/storage')
  const { openSqliteStore } = await import('../src/db/sqlite/store')
  const clock = { now: () => now }
  const metrics = createMetrics(openSqliteStore(sqliteStorage(sqlite), clock).metrics, clock)
  const age = async () => Number(/^fixloop_jobs_oldest_age_seconds (\S+)$/m.exec(await metrics.registry.render())![1])
  const insert = sqlite.query('INSERT INTO jobs (kind, run_after, created_at) VALUES (?, ?, ?)')
  const cases: { name: string; kind: string; runAfter: number; createdAt: number; expected: number }[] = [
    { name: 'empty queue', kind: '', runAfter: 0, createdAt: 0, expected: 0 },
    { name: 'scheduled an hour ahead, created 59 min ago', kind: 'uploads_gc', runAfter: now + 60_000, createdAt: now - 59 * 60_000, expected: 0 },
    { name: 'due 30 s ago, created 30 s ago', kind: 'process', runAfter: now - 30_000, createdAt: now - 30_000, expected: 30 },
    { name: 'retried: created 10 min ago, due again 90 s ago', kind: 'agent', runAfter: now - 90_000, createdAt: now - 600_000, expected: 90 },
  ]
  for (const c of cases) {
    if (c.kind) insert.run(c.kind, c.runAfter, c.createdAt)
    expect({ name: c.name, age: await age() }).toEqual({ name: c.name, age: c.expected })
  }
  // Time passes: the scheduled job becomes due and ages from its due time, not from its creation.
  sqlite.query("DELETE FROM jobs WHERE kind != 'uploads_gc'").run()
  now += 2 * 60_000
  expect(await age()).toBe(60)
  sqlite.close()
})

/**
 * What removing reports costs next to an App's Idempotency-Key records (found by the governance attack,
 * attack-gov). The erasure (and the report retention) deletes the records whose replayable answer names
 * a removed report; it matched every record of the reports' Apps against every id of the batch (200
 * LIKEs per record), under the write lock: with a day's 100,000 keyed submissions a batch of 200 took
 * ~25 s, a 3,000-report erasure 4.5 minutes. A record is written with its report's created_at, so only
 * the records of those instants are read now. The records that name the reports still go, the others
 * stay. Runs on PostgreSQL too (scripts/test-pg.sh).
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { call, seedTenant, startTestServer, type Tenant, type TestServer } from './harness'
import { dbRows, dbRun } from './sqlite-of'

const OTHERS = 40_000
const SEEDED = 200
const EMAIL = 'heavy.reporter@example.com'

let server: TestServer
let t: Tenant
beforeAll(async () => {
  server = await startTestServer()
  t = await seedTenant(server.admin, {}, 'Busy')
})
afterAll(() => server?.close())

/** Multi-row INSERTs of `rows` (each `width` values), in chunks both drivers take. */
async function insertMany(head: string, width: number, rows: unknown[][]) {
  for (let i = 0; i < rows.length; i += 500) {
    const chunk = rows.slice(i, i + 500)
    const tuple = `(${Array(width).fill('?').join(', ')})`
    await dbRun(server.ctx, `${head} VALUES ${chunk.map(() => tuple).join(', ')}`, chunk.flat())
  }
}
const hexId = (n: number, prefix: string) => prefix + n.toString(16).padStart(24 - prefix.length, '0')

test("an erasure next to a day's keyed submissions: only the records of the reports' instants are read", async () => {
  // Submitted for real, each with an Idempotency-Key: their records name them.
  const real: string[] = []
  for (let i = 0; i < 3; i++) {
    const r = await call(server.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: `Heavy reporter's report ${i}`, identity: { email: EMAIL } }, headers: { 'idempotency-key': `heavy-${i}` } })
    expect(r.status).toBe(201)
    real.push(r.body.id)
  }
  // More of the reporter's reports, each with its record as a submission writes it (same instant).
  const base = Date.now() - 3600_000
  const seeded = Array.from({ length: SEEDED }, (_, i) => ({ id: hexId(i, '6a000001'), at: base + i * 10 }))
  await insertMany(
    'INSERT INTO feedback (id, org_id, app_id, status, text, submitted_mode, email, created_at, updated_at, processed_at, redactions)',
    11,
    seeded.map((r) => [r.id, t.orgId, t.appId, 'awaiting_manual', 'seeded report', 'public', EMAIL, r.at, r.at, r.at, '{}']),
  )
  const record = (id: string, at: number, key: string) => [t.appId, key, 'x', 201, JSON.stringify({ id, status: 'received' }), at]
  await insertMany('INSERT INTO idempotency_keys (app_id, key, request_hash, status_code, response_body, created_at)', 6, [
    ...seeded.map((r, i) => record(r.id, r.at, `seeded-${i}`)),
    // Other reporters' submissions of the day (their reports need not exist for the cost).
    ...Array.from({ length: OTHERS }, (_, i) => record(hexId(i, '6a000002'), base + i * 3 + 1, `other-${i}`)),
  ])

  const started = performance.now()
  const erased = await call(server.url, 'POST', '/v1/reporters/erase', { auth: t.key, body: { email: EMAIL } })
  const ms = performance.now() - started
  expect(erased.body).toEqual({ erased: SEEDED + real.length })
  // ~10 s before (8 M LIKEs), tens of milliseconds now.
  expect(ms).toBeLessThan(3000)

  const left = await dbRows<{ key: string }>(server.ctx, 'SELECT key FROM idempotency_keys WHERE app_id = ?', [t.appId])
  expect(left.length).toBe(OTHERS)
  expect(left.some((r) => r.key.includes('heavy-') || r.key.startsWith('seeded-'))).toBe(false)
  // The real submissions' keys are free again: the same key stores a new report, not the erased answer.
  const again = await call(server.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: "Heavy reporter's report 0", identity: { email: EMAIL } }, headers: { 'idempotency-key': 'heavy-0' } })
  expect(again.status).toBe(201)
  expect(real).not.toContain(again.body.id)
}, 120_000)

test("a large reporter's erasure leaves the thread to other requests between its batches", async () => {
  const who = 'prolific.reporter@example.com'
  const base = Date.now() - 7200_000
  const n = 10_000
  await insertMany(
    'INSERT INTO feedback (id, org_id, app_id, status, text, submitted_mode, email, created_at, updated_at, processed_at, redactions)',
    11,
    Array.from({ length: n }, (_, i) => [hexId(i, '6a000003'), t.orgId, t.appId, 'awaiting_manual', `prolific report ${i}`, 'public', who, base + i, base + i, base + i, '{}']),
  )
  // Health checks one after the other while the erasure runs: the longest gap between two answers is how
  // long the server (this process's thread: the test server runs here) kept everyone else waiting.
  let erasing = true
  let longest = 0
  const pinger = (async () => {
    let last = performance.now()
    while (erasing) {
      expect((await fetch(`${server.url}/healthz`)).status).toBe(200)
      const now = performance.now()
      longest = Math.max(longest, now - last)
      last = now
    }
  })()
  const started = performance.now()
  const erased = await call(server.url, 'POST', '/v1/reporters/erase', { auth: t.key, body: { email: who } })
  const took = performance.now() - started
  erasing = false
  await pinger
  expect(erased.body).toEqual({ erased: n })
  // Before: one gap as long as the whole erasure (~1 s here, 10 s for 20,000 on the binary); now about one batch.
  expect(longest).toBeLessThan(Math.max(100, took / 4))
  expect(Number((await dbRows<{ n: number | string }>(server.ctx, 'SELECT COUNT(*) AS n FROM feedback WHERE email = ?', [who]))[0].n)).toBe(0)
}, 120_000)

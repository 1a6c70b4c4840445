/**
 * Sanitize ahead (src/worker/sanitize-ahead.ts): during a backlog a second connection sanitizes reports
 * just ahead of the processing thread. Checked on real SQLite files:
 * - it leaves the processing thread's next HEAD_GAP reports alone, sanitizes the rest (secrets gone from
 *   the row), records the same two moves the `process` job would, and keeps every job queued;
 * - a report that changes between its read and the write (archived meanwhile) is left alone;
 * - after the drain, every report ends exactly as on a server that never sanitized ahead: status, text,
 *   clusters, summaries, redaction counts and each report's events;
 * - in a real server the thread runs by default and takes part in draining a burst.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { openSqliteStore } from '../src/db/sqlite/store'
import { storeOf } from './dialects'
import type { Database } from 'bun:sqlite'
import { join } from 'node:path'
import { openDatabase } from '../src/db/sqlite/client'
import { systemClock } from '../src/core/clock'
import { createSanitizeAhead, CHUNK, HEAD_GAP } from '../src/worker/sanitize-ahead'
import { call, seedTenant, startTestServer, type Tenant, type TestServer } from './harness'
import { body, drain, eventsOf, expectSameEnd, rowOf, submitAll } from './drain-compare'
import { sqliteStorage } from '../src/db/sqlite/storage'
import { sqliteOf } from './sqlite-of'

const ENV = { FIXLOOP_RATE_LIMIT_MULTIPLIER: '100000' }
const EXTRA = 300
const TOTAL = HEAD_GAP + EXTRA

const processedAt = (db: Database, id: string) => (db.query('SELECT processed_at AS t FROM feedback WHERE id = ?').get(id) as { t: number | null }).t

function sanitizer(srv: TestServer) {
  const { sqlite } = openDatabase(join(srv.dataDir, 'fixloop.db'), { autoCheckpoint: false })
  return { sqlite, ahead: createSanitizeAhead(openSqliteStore(sqliteStorage(sqlite), systemClock).sides.sanitizeAhead, systemClock) }
}

describe('sanitizing ahead of the processing thread', () => {
  let a: TestServer
  let b: TestServer
  let ta: Tenant
  let tb: Tenant
  let idsA: string[]
  let idsB: string[]
  let archivedMidway: string
  beforeAll(async () => {
    // Worker not started: nothing is processed until the test drains it.
    a = await startTestServer(ENV, { worker: { autoStart: false } })
    b = await startTestServer(ENV, { worker: { autoStart: false } })
    ta = await seedTenant(a.admin)
    tb = await seedTenant(b.admin)
    idsA = await submitAll(a, ta, TOTAL)
    idsB = await submitAll(b, tb, TOTAL)
  }, 120_000)
  afterAll(async () => {
    await a.close()
    await b.close()
  })

  test('sanitizes only beyond the processing thread\'s next HEAD_GAP reports, as the process job would, and leaves a report changed meanwhile alone', () => {
    const { sqlite, ahead } = sanitizer(a)
    archivedMidway = idsA[HEAD_GAP + 10]
    // A customer archives one report of the first chunk after it was read, before its write.
    const transaction = sqlite.transaction.bind(sqlite)
    let raced = false
    sqlite.transaction = ((fn: () => unknown) => {
      if (!raced) {
        raced = true
        sqliteOf(a.ctx).run("UPDATE feedback SET status = 'archived', version = version + 1 WHERE id = ?", [archivedMidway])
      }
      return transaction(fn)
    }) as Database['transaction']
    let sanitized = 0
    let chunks = 0
    for (let i = 0; i < 100; i++) {
      const done = ahead.chunk()
      if (done.examined === 0) break
      expect(done.examined).toBeLessThanOrEqual(CHUNK)
      sanitized += done.sanitized
      chunks++
    }
    sqlite.close()
    expect(chunks).toBe(Math.ceil(EXTRA / CHUNK))
    expect(sanitized).toBe(EXTRA - 1)
    const db = sqliteOf(a.ctx)
    // The processing thread's next reports: untouched, still raw.
    for (const id of idsA.slice(0, HEAD_GAP)) expect(rowOf(db, id).status).toBe('received')
    expect(String(rowOf(db, idsA[1]).text)).toContain('hunter1secret')
    // Beyond them: sanitized in place, still `received` at the same version, no event yet: the job stays,
    // and moves the report to `sanitized` (processedAt, both events) with its clustering verdict.
    for (const [n, id] of idsA.entries()) {
      if (n < HEAD_GAP || id === archivedMidway) continue
      const r = rowOf(db, id)
      expect(r.status).toBe('received')
      expect(r.version).toBe(rowOf(db, idsA[0]).version)
      expect(r.redactions).not.toBeNull()
      expect(`${r.text} ${r.url} ${r.console_logs} ${r.metadata}`).not.toMatch(/hunter\d+secret|user\d+@example\.com|sk_live_4eC39|eyJhbGci|secretvalue|abc\d/)
      expect(eventsOf(db, id)).toEqual(['feedback.received:>received'])
      expect(processedAt(db, id)).toBeNull()
    }
    const raced_ = rowOf(db, archivedMidway)
    expect(raced_.status).toBe('archived')
    expect(raced_.redactions).toBeNull()
    expect(eventsOf(db, archivedMidway)).toEqual(['feedback.received:>received'])
    expect((db.query("SELECT count(*) AS n FROM jobs WHERE kind = 'process'").get() as { n: number }).n).toBe(TOTAL)
  })

  test('over the API, a report sanitized ahead is `received` with no processedAt until it is clustered: a client that waits for either reads the verdict', async () => {
    const ahead = idsA[HEAD_GAP + 20]
    const before = await call(a.url, 'GET', `/v1/feedback/${ahead}`, { auth: ta.key })
    expect(before.status).toBe(200)
    expect(before.body).toMatchObject({ status: 'received', processedAt: null, duplicateOfId: null, suggestedDuplicateOf: null })
    // Its sanitized text is served, never the raw one.
    expect(JSON.stringify(before.body)).not.toMatch(/hunter\d+secret|sk_live_4eC39/)
  })

  test('after the drain every report ends exactly as on a server that never sanitized ahead', async () => {
    // The same change on B, without the sanitizer, so the two runs differ only in who sanitized.
    sqliteOf(b.ctx).run("UPDATE feedback SET status = 'archived', version = version + 1 WHERE id = ?", [idsB[HEAD_GAP + 10]])
    await drain(a)
    await drain(b)
    const duplicates = expectSameEnd(sqliteOf(a.ctx), idsA, sqliteOf(b.ctx), idsB)
    // The comparison covered real clustering, not only leads.
    expect(duplicates).toBeGreaterThan(TOTAL / 2)
    // Every clustered report carries processedAt (those sanitized ahead too, stamped when clustered).
    const unstamped = (db: Database, ids: string[]) => ids.filter((id) => id !== archivedMidway && id !== idsB[HEAD_GAP + 10] && processedAt(db, id) === null)
    expect(unstamped(sqliteOf(a.ctx), idsA)).toEqual([])
    expect(unstamped(sqliteOf(b.ctx), idsB)).toEqual([])
    const ahead = await call(a.url, 'GET', `/v1/feedback/${idsA[HEAD_GAP + 20]}`, { auth: ta.key })
    expect(typeof ahead.body.processedAt).toBe('string')
    // The report archived midway was scrubbed where it stands by its process job, as always.
    expect(rowOf(sqliteOf(a.ctx), archivedMidway).redactions).not.toBeNull()
  }, 120_000)
})

test('it works at most aheadMax reports past the gap: further ahead it would only take the lock from the reports needed now', async () => {
  const srv = await startTestServer(ENV, { worker: { autoStart: false } })
  try {
    const t = await seedTenant(srv.admin)
    const ids = await submitAll(srv, t, 120)
    const { sqlite } = openDatabase(join(srv.dataDir, 'fixloop.db'), { autoCheckpoint: false })
    const ahead = createSanitizeAhead(openSqliteStore(sqliteStorage(sqlite), systemClock).sides.sanitizeAhead, systemClock, { headGap: 16, aheadMax: 40 })
    let sanitized = 0
    let last = ahead.chunk()
    for (let i = 0; i < 20 && last.examined > 0; i++, last = ahead.chunk()) sanitized += last.sanitized
    expect(last.farAhead).toBe(true)
    expect(sanitized).toBe(40)
    // Scrubbed in place (redaction counts stored), still `received`: the job moves it on with its verdict.
    const scrubbed = ids.map((id) => rowOf(sqliteOf(srv.ctx), id).redactions !== null)
    expect(scrubbed.slice(0, 16).every((x) => !x)).toBe(true)
    expect(scrubbed.slice(16, 56).every((x) => x)).toBe(true)
    expect(scrubbed.slice(56).every((x) => !x)).toBe(true)
    // The processing thread moves on: so does the window.
    await srv.worker.tick(30)
    for (let i = 0; i < 20 && ahead.chunk().examined > 0; i++);
    expect(ids.slice(56, 86).every((id) => rowOf(sqliteOf(srv.ctx), id).redactions !== null)).toBe(true)
    expect(rowOf(sqliteOf(srv.ctx), ids[86]).redactions).toBeNull()
    sqlite.close()
  } finally {
    await srv.close()
  }
}, 60_000)

test('in a real server the sanitize-ahead thread runs by default and helps drain a burst', async () => {
  const srv = await startTestServer(ENV)
  try {
    const t = await seedTenant(srv.admin)
    expect(srv.services.sanitizerThread).toBeDefined()
    const n = HEAD_GAP + 1200
    let next = 0
    // A burst: 32 submissions in flight; the processing thread paces itself meanwhile, so a backlog forms.
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        while (next < n) {
          const i = next++
          const r = await call(srv.url, 'POST', '/v1/feedback', { auth: t.pub, body: body(i) })
          expect(r.status).toBe(201)
        }
      }),
    )
    const db = sqliteOf(srv.ctx)
    const left = () => (db.query("SELECT count(*) AS n FROM jobs WHERE kind = 'process'").get() as { n: number }).n
    for (let i = 0; i < 600 && left() > 0; i++) await Bun.sleep(100)
    expect(left()).toBe(0)
    // Its count arrives with its next health beat (every second).
    for (const deadline = Date.now() + 15_000; srv.services.sanitizerThread!.sanitizedAhead === 0 && Date.now() < deadline; ) await Bun.sleep(100)
    expect(srv.services.sanitizerThread!.sanitizedAhead).toBeGreaterThan(0)
    const raw = db.query("SELECT count(*) AS n FROM feedback WHERE redactions IS NULL OR status IN ('received', 'sanitizing', 'failed')").get() as { n: number }
    expect(raw.n).toBe(0)
    const ready = await call(srv.url, 'GET', '/readyz')
    expect(ready.status).toBe(200)
  } finally {
    await srv.close()
  }
}, 120_000)

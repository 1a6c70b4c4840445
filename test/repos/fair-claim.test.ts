/**
 * Issue 38 on both dialects: one App's flood must not starve the others. A claim takes the Apps' due jobs
 * round-robin (src/db/fair-claim.ts), each App's own jobs in (run_after, id) order, jobs without an App as
 * a group of their own; the App of a `process` job is set at intake and by the migration for old rows.
 */
import { describe, expect, test } from 'bun:test'
import { describeEachDialect, freshStore, storeOf, type FreshStore } from '../dialects'
import { FAIR_CLAIM } from '../../src/db/pg/jobs'
import type { JobsRepo, JobRow } from '../../src/lifecycle/jobs-repo'
import { openPool } from '../../src/db/pg/client-options'
import { pgStorage } from '../../src/db/pg/storage'
import { openDatabase } from '../../src/db/sqlite/client'
import { sqliteStorage } from '../../src/db/sqlite/storage'
import type { Storage } from '../../src/db/storage'
import { insertReport, seedOrgApp, sql, claimAllConcurrently } from './store-fixtures'
import sqliteMigration from '../../migrations/0031_fair_claim.sql' with { type: 'text' }
import pgMigration from '../../migrations-pg/0017_fair_claim.sql' with { type: 'text' }

const LEASE = 60_000

/** `n` process jobs of `appId` (feedback ids `<appId>-0`…), all due at `runAfter`, queued in one statement. */
async function flood(s: FreshStore, appId: string, n: number, runAfter = s.clock.now() - 1000): Promise<void> {
  const values = Array.from({ length: n }, (_, i) => `('process', '${appId}-${i}', '${appId}', ${runAfter}, ${runAfter})`).join(', ')
  await sql(s, `INSERT INTO jobs (kind, feedback_id, app_id, run_after, created_at) VALUES ${values}`)
}

const names = (rows: (JobRow | null)[]) => rows.map((r) => r?.feedback_id ?? null)

async function secondStore(s: FreshStore): Promise<{ storage: Storage; close: () => Promise<void> }> {
  if (s.dialect === 'pg') {
    const pool = openPool(s.location, 8)
    return { storage: pgStorage(pool, { callerClock: true }), close: () => pool.end() }
  }
  const { sqlite, db } = openDatabase(s.location)
  return { storage: sqliteStorage(sqlite, db), close: async () => sqlite.close() }
}

describeEachDialect('fair claiming across Apps', (fresh) => {
  test("a flood of App A does not hold up App B's one job: it is in the very first batch, and the next single claim", async () => {
    const s = await fresh()
    await flood(s, 'appA', 5000)
    // B's job is the newest of all, and due last.
    await s.store.lifecycle.enqueue('process', { feedbackId: 'appB-0', appId: 'appB' }, s.clock.now())
    const t = s.clock.now()
    const batch = await s.store.jobs(['process', 'batch_release']).claimBatch('process', 8, t, LEASE, 'me')
    expect(batch).toHaveLength(8)
    expect(names(batch)).toContain('appB-0')
    // The same from single claims: A's oldest, then B's (the App after A), then A's again.
    const s2 = await fresh()
    await flood(s2, 'appA', 5000)
    await s2.store.lifecycle.enqueue('process', { feedbackId: 'appB-0', appId: 'appB' }, s2.clock.now())
    const jobs = s2.store.jobs(['process', 'batch_release'])
    const t2 = s2.clock.now()
    expect(names([await jobs.claim(t2, LEASE, 'me'), await jobs.claim(t2, LEASE, 'me'), await jobs.claim(t2, LEASE, 'me')])).toEqual(['appA-0', 'appB-0', 'appA-1'])
  })

  test('round-robin shares: one of each App per round, each App in (run_after, id) order, a short App leaves its turns to the others', async () => {
    const s = await fresh()
    const t = s.clock.now()
    const lc = s.store.lifecycle
    // Queued out of order on purpose: within an App the due time decides, then the id.
    await lc.enqueue('process', { feedbackId: 'b2', appId: 'b' }, t - 10)
    await lc.enqueue('process', { feedbackId: 'a2', appId: 'a' }, t - 20)
    await lc.enqueue('process', { feedbackId: 'a1', appId: 'a' }, t - 30)
    await lc.enqueue('process', { feedbackId: 'c1', appId: 'c' }, t - 5)
    await lc.enqueue('process', { feedbackId: 'a3', appId: 'a' }, t - 20)
    await lc.enqueue('process', { feedbackId: 'b1', appId: 'b' }, t - 40)
    await lc.enqueue('process', { feedbackId: 'a4', appId: 'a' }, t - 1)
    await lc.enqueue('process', { feedbackId: 'b3', appId: 'b' }, t - 1)
    await lc.enqueue('process', { feedbackId: 'later', appId: 'c' }, t + 1000)
    const jobs = s.store.jobs(['process', 'batch_release'])
    expect(names(await jobs.claimBatch('process', 7, t, LEASE, 'me'))).toEqual(['a1', 'b1', 'c1', 'a2', 'b2', 'a3', 'b3'])
    // The next claim goes on after the last App served (b): c has nothing due, so a.
    expect(names(await jobs.claimBatch('process', 5, t, LEASE, 'me'))).toEqual(['a4'])
    expect(await jobs.claim(t, LEASE, 'me')).toBeNull()
  })

  test('jobs without an App are a group of their own, in their order; a repo of all kinds claims them in turn with the Apps', async () => {
    const s = await fresh()
    const t = s.clock.now()
    await flood(s, 'appA', 50)
    const lc = s.store.lifecycle
    await lc.enqueue('agent', { feedbackId: 'r2' }, t - 10)
    await lc.enqueue('uploads_gc', {}, t - 20)
    // A `process` job queued by a version before issue 38 whose report is gone: no App, still claimed.
    await sql(s, "INSERT INTO jobs (kind, feedback_id, app_id, run_after, created_at) VALUES ('process', 'orphan', NULL, ?, ?)", [t - 5, t - 5])
    const jobs = s.store.jobs()
    const got: (string | null)[] = []
    for (let i = 0; i < 6; i++) {
      const job = await jobs.claim(t, LEASE, 'me')
      got.push(job?.feedback_id ?? job?.kind ?? null)
    }
    expect(got).toEqual(['appA-0', 'uploads_gc', 'appA-1', 'r2', 'appA-2', 'orphan'])
  })

  test("an App whose jobs are all leased or not due yet is passed over; a batch release (at most one per App) is in the group without an App", async () => {
    const s = await fresh()
    const t = s.clock.now()
    const lc = s.store.lifecycle
    await lc.enqueue('process', { feedbackId: 'a1', appId: 'a' }, t - 10)
    await lc.enqueue('batch_release', { appId: 'a' }, t - 20)
    await lc.enqueue('process', { feedbackId: 'b1', appId: 'b' }, t + 5000)
    await lc.enqueue('process', { feedbackId: 'c1', appId: 'c' }, t - 1)
    await lc.enqueue('process', { feedbackId: 'c2', appId: 'c' }, t - 1)
    // Windows that close later: not due, and no App of theirs is looked at by a claim.
    for (const app of ['w1', 'w2', 'w3']) await lc.enqueue('batch_release', { appId: app }, t + 60_000)
    const jobs = s.store.jobs(['process', 'batch_release'])
    const next = async () => {
      const job = await jobs.claim(t, LEASE, 'me')
      return job ? job.feedback_id ?? `${job.kind}:${job.app_id}` : null
    }
    expect([await next(), await next(), await next(), await next(), await next()]).toEqual(['a1', 'c1', 'batch_release:a', 'c2', null])
  })

  test('intake and a bulk of submissions write the App on the process job (an unmerge: test/repos/processing.test.ts)', async () => {
    const s = await fresh()
    await seedOrgApp(s, 'o1', 'a1')
    await seedOrgApp(s, 'o1', 'a2')
    const draft = (text: string, appId: string) => ({
      orgId: 'o1', appId, severity: 'high' as const, text, url: 'https://shop.example/x', userAgent: 'ua', viewport: null, consoleLogs: null,
      attachments: null, componentTarget: null, metadata: null, submittedMode: 'public' as const, externalUserId: null, email: null,
      submitterName: null, userContext: null,
    })
    await Promise.all(Array.from({ length: 12 }, (_, i) => s.store.feedback.submit(draft(`report ${i}`, i % 2 ? 'a1' : 'a2'), [], null)))
    const rows = await sql<{ n: number; wrong: number }>(
      s,
      'SELECT COUNT(*) AS n, SUM(CASE WHEN j.app_id IS NULL OR j.app_id <> f.app_id THEN 1 ELSE 0 END) AS wrong FROM jobs j JOIN feedback f ON f.id = j.feedback_id',
    )
    expect(rows.map((r) => [Number(r.n), Number(r.wrong)])).toEqual([[12, 0]])
  })

  test("the migration gives queued process jobs their report's App, and leaves the other jobs alone", async () => {
    const s = await fresh()
    await seedOrgApp(s, 'o1', 'a1')
    await seedOrgApp(s, 'o1', 'a2')
    await insertReport(s, 'r1', 'received', 'o1', 'a1')
    await insertReport(s, 'r2', 'received', 'o1', 'a2')
    const t = s.clock.now()
    // As a version before issue 38 queued them.
    for (const [kind, feedbackId] of [['process', 'r1'], ['process', 'r2'], ['agent', 'r1'], ['process', 'gone']]) {
      await sql(s, 'INSERT INTO jobs (kind, feedback_id, app_id, run_after, created_at) VALUES (?, ?, NULL, ?, ?)', [kind, feedbackId, t, t])
    }
    const backfill = (s.dialect === 'pg' ? pgMigration : sqliteMigration).split('--> statement-breakpoint')[0]
    await sql(s, backfill)
    const rows = await sql<{ kind: string; feedback_id: string; app_id: string | null }>(s, 'SELECT kind, feedback_id, app_id FROM jobs ORDER BY id')
    expect(rows).toEqual([
      { kind: 'process', feedback_id: 'r1', app_id: 'a1' },
      { kind: 'process', feedback_id: 'r2', app_id: 'a2' },
      { kind: 'agent', feedback_id: 'r1', app_id: null },
      { kind: 'process', feedback_id: 'gone', app_id: null },
    ])
  })

  test('two nodes claiming at once across three Apps never take the same job, and every job is claimed exactly once', async () => {
    const s = await fresh()
    await flood(s, 'appA', 200)
    await flood(s, 'appB', 60)
    await flood(s, 'appC', 5)
    const N = 265
    const other = await secondStore(s)
    try {
      const repos: JobsRepo[] = [s.store.jobs(['process', 'batch_release']), storeOf(other.storage, s.clock).jobs(['process', 'batch_release'])]
      // Four claimers per node, one job or a few at a time, until the queue is empty.
      const claimed = await claimAllConcurrently(repos, s.clock.now(), LEASE, 4)
      expect(claimed).toHaveLength(N)
      expect(new Set(claimed).size).toBe(N)
      const rows = await sql<{ attempts: number; n: number }>(s, 'SELECT attempts, COUNT(*) AS n FROM jobs GROUP BY attempts')
      expect(rows.map((r) => [r.attempts, Number(r.n)])).toEqual([[1, N]])
    } finally {
      await other.close()
    }
  })
})

/**
 * The planner, steered (src/db/pg/jobs.ts `fairClaimSql`): with a due time that is an InitPlan parameter it
 * took jobs_due_idx or a sequential scan through the whole backlog for one App's first job, or for one
 * batch release. With 20k due jobs of one App, every scan of the claim is an index probe or a short range.
 */
describe('fair claim [pg]: no walk through the backlog', () => {
  test('claim and batch of the processing worker: index scans only, none reading past a few rows', async () => {
    const s = await freshStore('pg')
    await flood(s, 'appA', 20_000)
    for (const app of ['s1', 's2', 's3']) await flood(s, app, 3)
    await s.store.lifecycle.enqueue('batch_release', { appId: 'w1' }, s.clock.now() + 60_000)
    await sql(s, 'ANALYZE jobs')
    const t = s.clock.now()
    if (s.storage.dialect !== 'pg') throw new Error('a PostgreSQL store was expected')
    const pool = s.storage.pool
    // As the processing worker sends them: its claim (n = 1, batch releases in the group without an App,
    // after App A and from the ring's start) and a batch of `process` jobs.
    for (const [others, n, cursor] of [[['batch_release'], 1, 'appA'], [[], 511, ''], [['batch_release'], 1, '']] as const) {
      const plan = await pool.query(`EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) ${FAIR_CLAIM}`, [t, LEASE, 'explain', others, n, cursor, n + 32, null])
      const text = plan.rows.map((r: Record<string, string>) => r['QUERY PLAN']).join('\n')
      expect(text).not.toContain('Seq Scan on jobs')
      expect(text).not.toContain('jobs_due_idx')
      const removed = [...text.matchAll(/Rows Removed by Filter: (\d+)/g)].map((m) => Number(m[1]))
      // Leased jobs are passed over by a filter (the 512 the batch above leased, at App A's head): never the backlog.
      expect(Math.max(0, ...removed)).toBeLessThan(1000)
    }
  })
})

/**
 * The worker drains its `process` backlog in batches: one transaction for many reports, a savepoint per
 * report, each touched lead's summary rebuilt once per batch. A real server and SQLite file, an injected
 * clock and `tick()`; the kill -9 test uses the compiled binary with its processing thread.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { openSqliteStore } from '../src/db/sqlite/store'
import { storeOf } from './dialects'
import type { Database } from 'bun:sqlite'
import { ManualClock } from '../src/core/clock'
import { consolidate, themeOf } from '../src/dedup/consolidate'
import { createProcessFeedbackStep } from '../src/worker/steps/process-feedback'
import { createClusterService } from '../src/dedup/service'
import { createBatchWindows } from '../src/worker/steps/release-batch'
import { DeferJob } from '../src/worker/loop'
import { currentLeaseOwner } from '../src/worker/lease-owner'
import { seedTenant, spawnServer, startTestServer, type Tenant, type TestServer } from './harness'
import { cliTenant, crashTestDataDir, feedbackRow, jobsFor, openDataDb, submit } from './helpers-lifecycle'
import { sqliteStorage } from '../src/db/sqlite/storage'
import { sqliteOf } from './sqlite-of'

const clock = new ManualClock(Date.UTC(2025, 3, 1, 9, 0, 0))
let srv: TestServer
let t: Tenant

beforeAll(async () => {
  // Intake never counts as busy here: the worker batches as it does once a burst is over.
  // A long batch budget: a loaded machine's speed must not decide how many reports share a batch (the summary
  // test counts one summary write per batch; under CI load the default budget split its batch in two).
  srv = await startTestServer({ FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000' }, { clock, worker: { autoStart: false, maxAttempts: 4, busy: () => false, saturated: () => false, batchBudgetMs: 60_000 } })
  t = await seedTenant(srv.admin)
})
afterAll(() => srv.close())
beforeEach(async () => {
  clock.advance(24 * 3600_000)
  await srv.worker.tick()
  sqliteOf(srv.ctx).run("DELETE FROM jobs WHERE kind <> 'process'")
})

let n = 0
async function submitText(text: string): Promise<string> {
  const r = await submit(srv.url, t.pub, { text })
  expect(r.status).toBe(201)
  return r.body.id
}
/** Distinct reports that never cluster (each names its own number and subject). */
const distinct = (): Promise<string> => submitText(`Report ${++n}: the ${['export', 'import', 'print', 'search', 'upload'][n % 5]} page ${n} shows error E${1000 + n}`)

function events(sqlite: Database, feedbackId: string): { type: string; data: Record<string, unknown> }[] {
  return (sqlite.query("SELECT type, data FROM events WHERE data ->> '$.feedbackId' = ? ORDER BY seq").all(feedbackId) as { type: string; data: string }[]).map((e) => ({
    type: e.type,
    data: JSON.parse(e.data),
  }))
}

const FULL_CHAIN = [
  { type: 'feedback.received', from: undefined, to: undefined },
  { type: 'feedback.status_changed', from: 'received', to: 'sanitizing' },
  { type: 'feedback.status_changed', from: 'sanitizing', to: 'sanitized' },
  { type: 'feedback.status_changed', from: 'sanitized', to: 'awaiting_manual' },
]
const chainOf = (sqlite: Database, id: string) =>
  events(sqlite, id)
    .filter((e) => e.type !== 'feedback.duplicate_attached')
    .map((e) => ({ type: e.type, from: e.data.from as string | undefined, to: e.data.to as string | undefined }))

describe('a batch', () => {
  test('one report that fails rolls back alone and is retried; the others of the batch commit', async () => {
    const ids = [await distinct(), await distinct(), await distinct(), await distinct(), await distinct()]
    const poisoned = ids[2]
    // Not JSON: sanitizing this report throws, every time.
    sqliteOf(srv.ctx).query("UPDATE feedback SET console_logs = '{not json' WHERE id = ?").run(poisoned)
    expect(await srv.worker.tick()).toBe(5)
    for (const id of ids.filter((id) => id !== poisoned)) {
      expect(feedbackRow(sqliteOf(srv.ctx), id).status).toBe('awaiting_manual')
      expect(jobsFor(sqliteOf(srv.ctx), id)).toEqual([])
      expect(chainOf(sqliteOf(srv.ctx), id)).toEqual(FULL_CHAIN)
    }
    // Rolled back to before its step: still received, raw, no move recorded, its job kept for a retry.
    const row = feedbackRow(sqliteOf(srv.ctx), poisoned)
    expect(row.status).toBe('received')
    expect(row.redactions).toBeNull()
    expect(chainOf(sqliteOf(srv.ctx), poisoned)).toEqual(FULL_CHAIN.slice(0, 1))
    const [job] = jobsFor(sqliteOf(srv.ctx), poisoned)
    expect(job.attempts).toBe(1)
    expect(job.lease_until).toBeNull()
    expect(job.last_error).toContain('does not parse')
    expect(job.run_after).toBe(clock.now() + 1000)
    // Repaired, it goes through on the retry.
    sqliteOf(srv.ctx).query('UPDATE feedback SET console_logs = NULL WHERE id = ?').run(poisoned)
    clock.advance(1000)
    expect(await srv.worker.tick()).toBe(1)
    expect(feedbackRow(sqliteOf(srv.ctx), poisoned).status).toBe('awaiting_manual')
    expect(chainOf(sqliteOf(srv.ctx), poisoned)).toEqual(FULL_CHAIN)
  })

  test('runBatch answers per job, in order; past the time budget or when intake waits, the rest is handed back in its place', async () => {
    const ids = [await distinct(), await distinct(), await distinct()]
    sqliteOf(srv.ctx).query("UPDATE feedback SET metadata = '[' WHERE id = ?").run(ids[1])
    const sqlite = sqliteOf(srv.ctx)
    const store = openSqliteStore(sqliteStorage(sqlite), clock)
    const jobs = store.jobs()
    const deps = { cluster: createClusterService(store.sides, clock), batches: createBatchWindows(store.processing, clock, store.lifecycle), finishJob: store.sides.jobs().finish }
    const claimed = await jobs.claimBatch('process', 10, clock.now(), 60_000, currentLeaseOwner())
    expect(claimed.map((j) => j.feedback_id)).toEqual(ids)
    const outcomes = await createProcessFeedbackStep(store.sides.processing, clock, deps).runBatch!(claimed)
    expect(outcomes[0]).toBeUndefined()
    expect(String(outcomes[1])).toContain('does not parse')
    expect(outcomes[2]).toBeUndefined()
    expect(jobsFor(sqlite, ids[0])).toEqual([])
    expect(jobsFor(sqlite, ids[1])).toHaveLength(1)
    // A zero budget: the first report runs (a batch always makes progress), the rest are handed back.
    const more = [await distinct(), await distinct()]
    const batch = (await jobs.claimBatch('process', 10, clock.now(), 60_000, currentLeaseOwner())).filter((j) => more.includes(j.feedback_id!))
    const tight = await createProcessFeedbackStep(store.sides.processing, clock, { ...deps, batchBudgetMs: 0 }).runBatch!(batch)
    expect(tight[0]).toBeUndefined()
    expect(tight[1]).toBeInstanceOf(DeferJob)
    expect((tight[1] as DeferJob).runAfter).toBe(batch[1].run_after)
    expect(feedbackRow(sqlite, more[1]).status).toBe('received')
    // As the loop does with a handed-back job: its lease goes, its place in the queue stays.
    await jobs.defer(batch[1].id, (tight[1] as DeferJob).runAfter!)
    // Another writer waiting for the lock (intake): the batch commits after the report in hand.
    const waiting = (await jobs.claimBatch('process', 10, clock.now(), 60_000, currentLeaseOwner())).filter((j) => more.includes(j.feedback_id!))
    expect(waiting.map((j) => j.feedback_id)).toEqual([more[1]])
    const third = await distinct()
    const both = [...waiting, ...(await jobs.claimBatch('process', 10, clock.now(), 60_000, currentLeaseOwner())).filter((j) => j.feedback_id === third)]
    const yielded = await createProcessFeedbackStep(store.sides.processing, clock, { ...deps, yieldWhen: () => true }).runBatch!(both)
    expect(yielded[0]).toBeUndefined()
    expect(yielded[1]).toBeInstanceOf(DeferJob)
    expect(feedbackRow(sqlite, more[1]).status).toBe('awaiting_manual')
    expect(feedbackRow(sqlite, third).status).toBe('received')
    sqlite.run("DELETE FROM jobs WHERE kind = 'process'")
  })

  test('a lead attracting duplicates within one batch: its summary is rebuilt and every event carries the count of its moment', async () => {
    const base = 'The checkout button does nothing when I click it after adding two items to the cart'
    const texts = [
      `${base}. The spinner keeps turning.`,
      `${base}. I tried twice on Firefox.`,
      `${base}. Same on my phone, the order never goes through.`,
      `${base}. Happens since this morning.`,
      `${base}. The spinner keeps turning.`,
    ]
    const ids: string[] = []
    for (const text of texts) ids.push(await submitText(text))
    const versionBefore = feedbackRow(sqliteOf(srv.ctx), ids[0]).version
    // Warm the App's calibration past its learning phase, so near-identical reports merge.
    expect(await srv.worker.tick()).toBeGreaterThanOrEqual(5)
    const lead = feedbackRow(sqliteOf(srv.ctx), ids[0])
    const dupIds = ids.slice(1).filter((id) => feedbackRow(sqliteOf(srv.ctx), id).duplicate_of_id === ids[0])
    expect(dupIds.length).toBeGreaterThanOrEqual(3)
    // Each attachment's event: the lead's count right after it, 1, 2, 3… in order.
    const counts = dupIds.map((id) => events(sqliteOf(srv.ctx), id).find((e) => e.type === 'feedback.duplicate_attached')!.data)
    expect(counts.map((d) => d.duplicateCount)).toEqual(dupIds.map((_, i) => i + 1))
    expect(counts.every((d) => d.leadFeedbackId === ids[0] && d.manual === false)).toBe(true)
    // The summary is what a full rebuild from the stored duplicates gives.
    const dups = sqliteOf(srv.ctx).query('SELECT text, created_at FROM feedback WHERE duplicate_of_id = ? ORDER BY id DESC').all(ids[0]) as { text: string; created_at: number }[]
    expect(lead.duplicate_count).toBe(dupIds.length)
    expect(lead.duplicate_count).toBe(dups.length)
    expect(lead.last_duplicate_at).toBe(Math.max(...dups.map((d) => d.created_at)))
    expect(lead.theme).toBe(themeOf(lead.text))
    expect(lead.consolidated_text).toBe(consolidate(lead.text, dups.map((d) => d.text)))
    expect(String(lead.consolidated_text)).toContain(`--- ${dups.length} similar reports add: ---`)
    // Three moves and ONE summary write: not one per attachment.
    expect(lead.version).toBe(versionBefore + 4)
  })
})

describe('kill -9 during a drain', () => {
  const { dir, stops } = crashTestDataDir('fixloop-drain-crash-')
  const BACKLOG = 1500

  test('every report is either fully before or fully after its step, with its job exactly when before', async () => {
    const dataDir = dir()
    const tenant = await cliTenant(dataDir)
    const server = await spawnServer(dataDir, { FIXLOOP_RATE_LIMIT_MULTIPLIER: '10000' })
    stops.push(server.stop)
    const templates = 12
    let sent = 0
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (sent < BACKLOG) {
          const i = sent++
          const res = await fetch(`${server.url}/v1/feedback`, {
            method: 'POST',
            headers: { authorization: `Bearer ${tenant.pub}`, 'content-type': 'application/json' },
            body: JSON.stringify({ text: `The export of report ${i % templates}0 fails with a timeout; contact jo${i}@example.com`, consoleLogs: [{ level: 'error', message: 'Timeout', ts: i }] }),
          })
          expect(res.status).toBe(201)
        }
      }),
    )
    const db = openDataDb(dataDir)
    const pending = () => (db.query("SELECT count(*) AS n FROM jobs WHERE kind = 'process'").get() as { n: number }).n
    // Killed mid-drain: some reports done, some not (bounded wait).
    for (const deadline = Date.now() + 30_000; pending() > BACKLOG * 0.6 && Date.now() < deadline; ) await Bun.sleep(5)
    server.proc.kill('SIGKILL')
    await server.proc.exited
    const left = pending()
    expect(left).toBeGreaterThan(0)
    expect(left).toBeLessThan(BACKLOG)

    const rows = db.query("SELECT id, status, redactions, text, duplicate_of_id, duplicate_count FROM feedback WHERE org_id = ?").all(tenant.orgId) as {
      id: string
      status: string
      redactions: string | null
      text: string
      duplicate_of_id: string | null
      duplicate_count: number
    }[]
    expect(rows).toHaveLength(BACKLOG)
    const withJob = new Set((db.query("SELECT feedback_id FROM jobs WHERE kind = 'process'").all() as { feedback_id: string }[]).map((j) => j.feedback_id))
    const moves = new Map<string, number>()
    for (const e of db.query("SELECT data ->> '$.feedbackId' AS id FROM events WHERE type = 'feedback.status_changed'").all() as { id: string }[]) moves.set(e.id, (moves.get(e.id) ?? 0) + 1)
    const problems: string[] = []
    for (const r of rows) {
      if (withJob.has(r.id)) {
        // Before its step: raw and untouched, or scrubbed ahead (worker/sanitize-ahead.ts) in one commit of
        // its own: every column scrubbed, still `received` with no move recorded, not clustered yet.
        const untouched = r.status === 'received' && r.redactions === null && !moves.has(r.id)
        const sanitizedAhead = r.status === 'received' && r.redactions !== null && !moves.has(r.id) && !r.text.includes('@example.com')
        if (!(untouched || sanitizedAhead) || r.duplicate_of_id) problems.push(`${r.id}: job kept but ${r.status}, ${moves.get(r.id) ?? 0} moves`)
      } else if (
        r.redactions === null ||
        r.text.includes('@example.com') ||
        // A lead goes on to a human; a duplicate stays where clustering found it (sanitized).
        (r.duplicate_of_id ? r.status !== 'sanitized' || moves.get(r.id) !== 2 : r.status !== 'awaiting_manual' || moves.get(r.id) !== 3)
      ) {
        problems.push(`${r.id}: job gone but ${r.status}, ${moves.get(r.id) ?? 0} moves`)
      }
    }
    // Every lead's stored count is its duplicates' count: summaries commit with the batch that changed them.
    for (const r of rows.filter((r) => !r.duplicate_of_id && r.redactions !== null)) {
      const dups = rows.filter((d) => d.duplicate_of_id === r.id).length
      if (r.duplicate_count !== dups) problems.push(`${r.id}: count ${r.duplicate_count}, ${dups} duplicates`)
    }
    expect(problems).toEqual([])
    db.close()

    // The restart finishes the rest.
    const again = await spawnServer(dataDir, { FIXLOOP_RATE_LIMIT_MULTIPLIER: '10000' })
    stops.push(again.stop)
    const check = openDataDb(dataDir)
    const waitEmpty = async () => {
      for (let i = 0; i < 300; i++) {
        if ((check.query("SELECT count(*) AS n FROM jobs WHERE kind = 'process'").get() as { n: number }).n === 0) return true
        await Bun.sleep(50)
      }
      return false
    }
    expect(await waitEmpty()).toBe(true)
    expect((check.query("SELECT count(*) AS n FROM feedback WHERE status NOT IN ('awaiting_manual', 'sanitized') OR redactions IS NULL").get() as { n: number }).n).toBe(0)
    check.close()
    await again.stop()
  }, 60_000)
})

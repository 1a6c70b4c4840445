/**
 * Sanitizing never runs inside a write transaction (issue 28.3): a heavy report costs milliseconds of
 * sanitizing, and intake waits for the write lock the whole time. The `process` step sanitizes before it
 * takes the lock, as one job or in a batch, for a report on its way and for one archived first; a row
 * that changes between the two is sanitized again, outside the lock. A real server and SQLite file:
 * the probe is the first rule's precheck, which every sanitized string passes through, recording whether
 * the connection is inside a transaction at that moment.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { openSqliteStore } from '../src/db/sqlite/store'
import { storeOf } from './dialects'
import { ManualClock } from '../src/core/clock'
import { RULES, type Rule } from '../src/sanitize/sanitize'
import { createProcessFeedbackStep } from '../src/worker/steps/process-feedback'
import { createClusterService } from '../src/dedup/service'
import { createBatchWindows } from '../src/worker/steps/release-batch'
import { currentLeaseOwner } from '../src/worker/lease-owner'
import { seedTenant, startTestServer, type Tenant, type TestServer } from './harness'
import { feedbackRow, jobsFor, patchStatus, submit } from './helpers-lifecycle'
import { sqliteStorage } from '../src/db/sqlite/storage'
import { sqliteOf } from './sqlite-of'

const clock = new ManualClock(Date.UTC(2025, 3, 1, 9, 0, 0))
let srv: TestServer
let t: Tenant

/** Whether the connection was inside a transaction each time a string was sanitized. */
const sanitizedInTx: boolean[] = []
/** Runs once, in the middle of the next sanitizing (outside the lock): a change made meanwhile. */
let duringSanitize: (() => void) | undefined
const probe = RULES[0] as Rule
const precheck = probe.mayMatch!

beforeAll(async () => {
  srv = await startTestServer({ FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000' }, { clock, worker: { autoStart: false } })
  t = await seedTenant(srv.admin)
  probe.mayMatch = (text) => {
    sanitizedInTx.push(sqliteOf(srv.ctx).inTransaction)
    const change = duringSanitize
    duringSanitize = undefined
    change?.()
    return precheck(text)
  }
})
afterAll(async () => {
  probe.mayMatch = precheck
  await srv.close()
})

let n = 0
async function report(): Promise<string> {
  const r = await submit(srv.url, t.pub, { text: `Report ${++n}: call me at +44 20 7946 0958, mail jane${n}@example.com`, consoleLogs: [{ level: 'error', message: `token=Zq8${n}xW2pL9`, ts: 1 }] })
  expect(r.status).toBe(201)
  return r.body.id
}

function step() {
  const sqlite = sqliteOf(srv.ctx)
  const store = openSqliteStore(sqliteStorage(sqlite), clock)
  const jobs = store.jobs()
  const deps = { cluster: createClusterService(store.sides, clock), batches: createBatchWindows(store.processing, clock, store.lifecycle), finishJob: store.sides.jobs().finish }
  return { jobs, step: createProcessFeedbackStep(store.sides.processing, clock, deps) }
}

/** Runs the `process` jobs of `ids`, one at a time or as one batch. */
async function process(ids: string[], how: 'single' | 'batch'): Promise<unknown[]> {
  const { jobs, step: s } = step()
  const claimed = (await jobs.claimBatch('process', 100, clock.now(), 60_000, currentLeaseOwner())).filter((j) => ids.includes(j.feedback_id!))
  expect(claimed).toHaveLength(ids.length)
  if (how === 'batch') return s.runBatch!(claimed)
  const outcomes: unknown[] = []
  for (const job of claimed) outcomes.push(await s.run(job))
  return outcomes
}

const SCENARIOS: { name: string; how: 'single' | 'batch'; archive?: 'before' | 'while sanitizing' | 'text changed'; status: string }[] = [
  { name: 'one job, a report on its way', how: 'single', status: 'awaiting_manual' },
  { name: 'a batch, reports on their way', how: 'batch', status: 'awaiting_manual' },
  { name: 'one job, a report archived before the worker ran', how: 'single', archive: 'before', status: 'archived' },
  { name: 'a batch, a report archived before the worker ran', how: 'batch', archive: 'before', status: 'archived' },
  { name: 'one job, a report archived while it was being sanitized', how: 'single', archive: 'while sanitizing', status: 'archived' },
  { name: 'one job, a report whose text changed while it was being sanitized', how: 'single', archive: 'text changed', status: 'awaiting_manual' },
  { name: 'a batch, a report whose text changed while it was being sanitized', how: 'batch', archive: 'text changed', status: 'awaiting_manual' },
]

describe('the process step sanitizes outside the write lock', () => {
  for (const s of SCENARIOS) {
    test(s.name, async () => {
      const ids = [await report(), await report()]
      if (s.archive === 'before') for (const id of ids) expect((await patchStatus(srv.url, t.key, id, 'archived')).status).toBe(200)
      if (s.archive === 'while sanitizing') {
        duringSanitize = () => {
          for (const id of ids) sqliteOf(srv.ctx).query("UPDATE feedback SET status = 'archived', version = version + 1 WHERE id = ?").run(id)
        }
      }
      if (s.archive === 'text changed') {
        // Nothing in fixloop rewrites raw text; if something did, the sanitized copy of the old text must not be written.
        duringSanitize = () => {
          for (const id of ids) sqliteOf(srv.ctx).query("UPDATE feedback SET text = text || ' and late@example.com' WHERE id = ?").run(id)
        }
      }
      sanitizedInTx.length = 0
      let outcomes = await process(ids, s.how)
      // A batch hands such a report back (DeferJob, its place kept) to the next one.
      if (s.how === 'batch' && s.archive === 'text changed') {
        sqliteOf(srv.ctx).run("UPDATE jobs SET lease_until = NULL WHERE kind = 'process'")
        outcomes = await process(ids.filter((id) => jobsFor(sqliteOf(srv.ctx), id).length > 0), 'batch')
      }
      expect(outcomes.filter((o) => o !== undefined)).toEqual([])
      expect(sanitizedInTx.length).toBeGreaterThan(0)
      expect(sanitizedInTx.filter((inTx) => inTx)).toEqual([])
      for (const id of ids) {
        const row = feedbackRow(sqliteOf(srv.ctx), id)
        expect(row.status).toBe(s.status)
        expect(String(row.text)).not.toContain('@example.com')
        expect(String(row.console_logs)).not.toContain('Zq8')
        expect(JSON.parse(String(row.redactions))).toEqual({ email: s.archive === 'text changed' ? 2 : 1, phone: 1, secret: 1 })
        expect(jobsFor(sqliteOf(srv.ctx), id)).toEqual([])
      }
    })
  }
})

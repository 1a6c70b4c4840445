/**
 * The lifecycle on a real SQLite file: every (from, to) pair of statuses, for the system and for a
 * customer. A legal move changes the status, bumps the version, records exactly one
 * feedback.status_changed event and queues the follow-up job, together; an illegal one throws
 * invalid_transition and changes nothing at all (row, events, jobs). The expected edges are written out
 * here, independently of core/fsm.ts, so a change to the FSM has to be made in both places on purpose.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { loadConfig } from '../src/config'
import type { EmbeddedRuntime } from '../src/runtime/open'
import type { SqliteLifecycle } from '../src/db/sqlite/lifecycle'
import { createContext } from '../src/runtime/open'
import { ApiError } from '../src/core/errors'
import { FEEDBACK_STATUSES, type FeedbackStatus } from '../src/core/fsm'
import { newId } from '../src/core/ids'
import { statusAfterSanitize, type Lifecycle } from '../src/lifecycle/lifecycle'
import { createTenantsService } from '../src/modules/tenants/service'
import { tempDir } from './harness'
import { sqliteOf } from './sqlite-of'

const SYSTEM_EDGES = [
  'received→sanitizing', 'received→failed',
  'sanitizing→sanitized', 'sanitizing→failed',
  'sanitized→awaiting_manual', 'sanitized→queued', 'sanitized→failed',
  'queued→agent_running', 'queued→failed',
  'agent_running→pr_opened', 'agent_running→failed', 'agent_running→queued',
  // Closing the loop (CONTRACT.md): merged, or closed unmerged (back to a person), or reopened.
  'pr_opened→resolved', 'pr_opened→awaiting_manual', 'awaiting_manual→pr_opened',
  // Review iteration: a change request runs the agent again on the same branch.
  'pr_opened→agent_running',
  // Issue-tracker sync (docs/trackers.md): the lead's tracker issue closed, or reopened after that.
  'sanitized→resolved', 'awaiting_manual→resolved', 'failed→resolved', 'resolved→awaiting_manual',
]
const CUSTOMER_EDGES = [
  'sanitized→queued', 'awaiting_manual→queued', 'failed→queued',
  ...['received', 'sanitizing', 'sanitized', 'awaiting_manual', 'queued', 'agent_running', 'failed'].map((s) => `${s}→archived`),
]

let dir: string
let ctx: EmbeddedRuntime
let lifecycle: Lifecycle
/** The writer's synchronous side, as the store's repositories join it inside their transactions. */
let side: SqliteLifecycle
let wakes = 0
let org: string
let app: string

beforeAll(async () => {
  dir = tempDir('fixloop-lifecycle-')
  ctx = createContext(loadConfig({ dataDir: dir }, { FIXLOOP_LOG_LEVEL: 'silent' }))
  ctx.store.wake.on(() => wakes++)
  lifecycle = ctx.store.lifecycle
  side = ctx.store.sides.lifecycle
  const admin = createTenantsService(ctx)
  org = (await admin.createOrg('Lifecycle')).id
  app = (await admin.createApp(org, { name: 'L' })).id
})
afterAll(() => {
  sqliteOf(ctx).close()
  rmSync(dir, { recursive: true, force: true })
})

/** A report stored directly in `status` (a fixture: the state another writer or a crash left). */
function reportIn(status: FeedbackStatus, failureReason: string | null = null): string {
  const id = newId(ctx.clock)
  sqliteOf(ctx)
    .query(
      `INSERT INTO feedback (id, org_id, app_id, status, text, submitted_mode, failure_reason, created_at, updated_at)
       VALUES (?, ?, ?, ?, 'fixture', 'public', ?, 0, 0)`,
    )
    .run(id, org, app, status, failureReason)
  return id
}

const row = (id: string) => sqliteOf(ctx).query('SELECT status, version, failure_reason, merge_request_url FROM feedback WHERE id = ?').get(id) as {
  status: string
  version: number
  failure_reason: string | null
  merge_request_url: string | null
}
const eventsOf = (id: string) =>
  (sqliteOf(ctx).query("SELECT type, data, org_id, app_id FROM events WHERE json_extract(data, '$.feedbackId') = ? ORDER BY seq").all(id) as {
    type: string
    data: string
    org_id: string
    app_id: string
  }[]).map((e) => ({ type: e.type, data: JSON.parse(e.data), orgId: e.org_id, appId: e.app_id }))
const jobsOf = (id: string) => (sqliteOf(ctx).query('SELECT kind FROM jobs WHERE feedback_id = ? ORDER BY id').all(id) as { kind: string }[]).map((j) => j.kind)

function expectInvalidTransition(fn: () => unknown, from: string, to: string): void {
  let caught: unknown
  try {
    fn()
  } catch (e) {
    caught = e
  }
  expect(caught).toBeInstanceOf(ApiError)
  expect((caught as ApiError).code).toBe('invalid_transition')
  expect((caught as ApiError).details).toEqual({ from, to })
}

for (const by of ['system', 'customer'] as const) {
  const edges = new Set(by === 'system' ? SYSTEM_EDGES : CUSTOMER_EDGES)
  describe(`${by} moves: every pair of statuses`, () => {
    for (const from of FEEDBACK_STATUSES) {
      for (const to of FEEDBACK_STATUSES) {
        const legal = edges.has(`${from}→${to}`)
        test(`${from} → ${to}: ${legal ? 'moves, with its event and follow-up job' : 'throws and changes nothing'}`, () => {
          const id = reportIn(from, from === 'failed' ? 'an earlier failure' : null)
          const before = row(id)
          const wakesBefore = wakes
          if (legal) {
            expect(side.move(sqliteOf(ctx), id, to, { by, reason: 'why it failed', prUrl: 'https://git.example/pr/1' })).toBe(true)
            const after = row(id)
            expect(after.status).toBe(to)
            expect(after.version).toBe(before.version + 1)
            expect(eventsOf(id)).toEqual([{ type: 'feedback.status_changed', data: { feedbackId: id, from, to }, orgId: org, appId: app }])
            expect(jobsOf(id)).toEqual(to === 'queued' ? ['agent'] : [])
            expect(wakes - wakesBefore).toBe(to === 'queued' ? 1 : 0)
            // A failure keeps its reason until the report moves on; archiving leaves it as it was.
            expect(after.failure_reason).toBe(to === 'failed' ? 'why it failed' : to === 'archived' ? before.failure_reason : null)
            expect(after.merge_request_url).toBe(to === 'pr_opened' ? 'https://git.example/pr/1' : null)
          } else {
            expectInvalidTransition(() => side.move(sqliteOf(ctx), id, to, { by }), from, to)
            expect(row(id)).toEqual(before)
            expect(eventsOf(id)).toEqual([])
            expect(jobsOf(id)).toEqual([])
          }
        })
      }
    }
  })
}

describe('compare-and-set', () => {
  test('a stale version or an unexpected status: false, nothing written', () => {
    const id = reportIn('received')
    const { version } = row(id)
    expect(side.move(sqliteOf(ctx), id, 'sanitizing', { by: 'system', version: version + 1 })).toBe(false)
    expect(side.move(sqliteOf(ctx), id, 'sanitizing', { by: 'system', from: 'sanitizing' })).toBe(false)
    expect(side.move(sqliteOf(ctx), newId(ctx.clock), 'sanitizing', { by: 'system' })).toBe(false)
    expect(row(id)).toEqual({ status: 'received', version, failure_reason: null, merge_request_url: null })
    expect(eventsOf(id)).toEqual([])
    expect(side.move(sqliteOf(ctx), id, 'sanitizing', { by: 'system', from: 'received', version })).toBe(true)
  })

  test('a move whose event cannot be written is undone: status, event and job together or not at all', () => {
    const id = reportIn('sanitized')
    const before = row(id)
    sqliteOf(ctx).run("CREATE TEMP TRIGGER refuse_events BEFORE INSERT ON main.events BEGIN SELECT RAISE(ABORT, 'outbox refused'); END")
    try {
      expect(() => side.move(sqliteOf(ctx), id, 'queued', { by: 'system' })).toThrow('outbox refused')
    } finally {
      sqliteOf(ctx).run('DROP TRIGGER refuse_events')
    }
    expect(row(id)).toEqual(before)
    expect(jobsOf(id)).toEqual([])
  })

  test('inside a caller transaction that rolls back, the move is rolled back too', () => {
    const id = reportIn('sanitized')
    expect(() =>
      sqliteOf(ctx).transaction(() => {
        side.move(sqliteOf(ctx), id, 'queued', { by: 'system' })
        throw new Error('the rest of the change failed')
      })(),
    ).toThrow('the rest of the change failed')
    expect(row(id).status).toBe('sanitized')
    expect(eventsOf(id)).toEqual([])
    expect(jobsOf(id)).toEqual([])
  })
})

describe('the rest of the lifecycle', () => {
  test('statusAfterSanitize: auto_pr goes to the agent queue, anything else to a human', () => {
    expect(statusAfterSanitize({ processingMode: 'auto_pr' })).toBe('queued')
    expect(statusAfterSanitize({ processingMode: 'manual' })).toBe('awaiting_manual')
    expect(lifecycle.statusAfterSanitize).toBe(statusAfterSanitize)
  })

  test('received: refuses to run outside the transaction that stores the report; inside, records the event and queues processing', () => {
    const id = reportIn('received')
    expect(() => side.received(sqliteOf(ctx), { orgId: org, appId: app, feedbackId: id })).toThrow(/transaction/)
    expect(eventsOf(id)).toEqual([])
    sqliteOf(ctx).transaction(() => side.received(sqliteOf(ctx), { orgId: org, appId: app, feedbackId: id }))()
    expect(eventsOf(id)).toEqual([{ type: 'feedback.received', data: { feedbackId: id, status: 'received' }, orgId: org, appId: app }])
    expect(jobsOf(id)).toEqual(['process'])
  })

  test('enqueueWaitingRuns: one agent job per queued lead without one, never a second', () => {
    const waiting = reportIn('queued')
    const hasJob = reportIn('sanitized')
    side.move(sqliteOf(ctx), hasJob, 'queued', { by: 'system' })
    const dup = reportIn('queued')
    sqliteOf(ctx).query('UPDATE feedback SET duplicate_of_id = ? WHERE id = ?').run(waiting, dup)
    side.enqueueWaitingRuns(app)
    side.enqueueWaitingRuns(app)
    expect(jobsOf(waiting)).toEqual(['agent'])
    expect(jobsOf(hasJob)).toEqual(['agent'])
    expect(jobsOf(dup)).toEqual([])
  })
})

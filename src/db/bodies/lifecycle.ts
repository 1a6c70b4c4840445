/**
 * The lifecycle writer's transactions, written once for both dialects (src/db/tx-body.ts): a status move
 * (the row read, lifecycle/rules.ts asked, the compare-and-set write and its `feedback.status_changed`
 * event, the follow-up job), the move to `sanitized`, job queueing, change events. Each dialect's side
 * (src/db/sqlite/lifecycle.ts, src/db/pg/lifecycle.ts) runs these bodies with its driver and supplies
 * the steps it takes its own way (`LifecycleSteps`): how an event gets its seq (SQLite reads the Org's
 * newest, PostgreSQL bumps a counter row) and the status write with its event (on PostgreSQL one
 * statement, a CTE: one round trip fewer on the processing engine's hottest path).
 *
 * The report's row is read with `lockingRead`: on PostgreSQL `FOR UPDATE`, so a concurrent move of the
 * same report waits and then re-decides on the new row; SQLite has one writer at a time, and the
 * SQLite side begins its own transactions IMMEDIATE. The UPDATE still compares the version on both.
 */
import type { Clock } from '../../core/clock'
import type { FeedbackStatus } from '../../core/fsm'
import type { EventPayloads, OutboxEvent } from '../../lifecycle/event-types'
import type { JobKind, JobTargets } from '../../lifecycle/jobs'
import type { ChangeEventType } from '../../lifecycle/lifecycle'
import { decideMove, sanitizedPath, type FeedbackState, type MoveCause, type ScrubbedColumns, type StatusWrite } from '../../lifecycle/rules'
import type { WakeSignal } from '../../lifecycle/wake'
import { afterCommit, get, lockingRead, run, sql, type Body } from '../tx-body'

/** What each dialect's side does its own way. */
export interface LifecycleSteps {
  /** The status write (compare-and-set on `write.version`) and, only when it wrote, `event`; false when it lost. */
  statusMoved(write: StatusWrite, event: OutboxEvent<'feedback.status_changed'>): Body<boolean>
  /** Appends one event in the transaction; its seq. */
  appendEvent(event: OutboxEvent): Body<number>
  /** Appends several events of one Org, in order. */
  appendEvents(events: OutboxEvent[]): Body<void>
}

const STATE = lockingRead('SELECT id, org_id AS "orgId", app_id AS "appId", status, version FROM feedback WHERE id = ?')
// received|sanitizing → sanitized with the scrubbed columns in one write: two moves (a version each) and
// the overwrite that sanitizing is (no version of its own).
const SET_SANITIZED = sql(
  `UPDATE feedback SET status = 'sanitized', version = version + ?3, updated_at = ?4, processed_at = ?4, failure_reason = NULL,
     text = ?5, url = ?6, user_agent = ?7, console_logs = ?8, metadata = ?9, component_target = ?10, redactions = ?11
   WHERE id = ?1 AND version = ?2`,
)
const INSERT_JOB = sql('INSERT INTO jobs (kind, feedback_id, app_id, run_after, created_at) VALUES (?, ?, ?, ?, ?)')
// A report's `process` job, its App read from the report (callers that know only the report's id).
const INSERT_PROCESS_JOB = sql("INSERT INTO jobs (kind, feedback_id, app_id, run_after, created_at) SELECT 'process', id, app_id, ?2, ?2 FROM feedback WHERE id = ?1")
// Reports that waited in `queued` for a repository (no agent job of their own left).
const INSERT_WAITING_RUNS = sql(
  `INSERT INTO jobs (kind, feedback_id, run_after, created_at)
   SELECT 'agent', f.id, ?1, ?1 FROM feedback f
   WHERE f.app_id = ?2 AND f.status = 'queued' AND f.duplicate_of_id IS NULL
     AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.kind = 'agent' AND j.feedback_id = f.id)`,
)

type Scope = { orgId: string; appId: string | null }
type NewReport = { orgId: string; appId: string; feedbackId: string }

export function lifecycleBodies(clock: Clock, steps: LifecycleSteps, wake?: WakeSignal) {
  const raise = (kind: JobKind) => () => wake?.raise(kind)

  /** Queues a job (its worker is woken once the job is committed). */
  function* enqueue<K extends JobKind>(kind: K, target: JobTargets[K], runAfter = clock.now()): Body<void> {
    const t = target as { feedbackId?: string; appId?: string }
    yield* run(INSERT_JOB, kind, t.feedbackId ?? null, t.appId ?? null, runAfter, clock.now())
    yield* afterCommit(raise(kind))
  }

  /**
   * Queues the report's `process` job with the report's App (read in the same statement); nothing when
   * the report is gone. For callers that know only the id (an unmerged report moves on as a lead).
   */
  function* enqueueProcessOf(feedbackId: string): Body<void> {
    if ((yield* run(INSERT_PROCESS_JOB, feedbackId, clock.now())) > 0) yield* afterCommit(raise('process'))
  }

  /**
   * Moves a report to `to`. Throws ApiError invalid_transition (and changes nothing) when the FSM does
   * not allow the move from the current status; false when the row is gone or another writer got there
   * first (`cause.from`/`cause.version` no longer hold, or the compare-and-set lost).
   */
  function* move(feedbackId: string, to: FeedbackStatus, cause: MoveCause): Body<boolean> {
    const row = yield* get<FeedbackState>(STATE, feedbackId)
    const write = decideMove(row, to, cause, clock.now())
    if (!row || !write) return false
    const event = { orgId: row.orgId, appId: row.appId, type: 'feedback.status_changed' as const, data: { feedbackId, from: row.status, to } }
    if (!(yield* steps.statusMoved(write, event))) return false
    if (to === 'queued') yield* enqueue('agent', { feedbackId })
    return true
  }

  /**
   * `received` (or `sanitizing`, after a crash in between) → `sanitizing` → `sanitized`, storing the
   * sanitized columns: the same row and the same `feedback.status_changed` events as two `move`s and the
   * overwrite between them, in one write of the row. False (nothing changed) when the row is gone, moved
   * on, or no longer at `version`. Only the `process` job calls it, in the transaction that writes the
   * report's clustering verdict: a reader that sees `sanitized` or `processed_at` sees the verdict too.
   */
  function* moveToSanitized(feedbackId: string, version: number, columns: ScrubbedColumns, redactions: string): Body<boolean> {
    const row = yield* get<FeedbackState>(STATE, feedbackId)
    const path = sanitizedPath(row, version)
    if (!row || !path) return false
    const c = columns
    const written = yield* run(SET_SANITIZED, feedbackId, version, path.length - 1, clock.now(), c.text, c.url, c.userAgent, c.consoleLogs, c.metadata, c.componentTarget, redactions)
    if (written !== 1) return false
    yield* steps.appendEvents(path.slice(1).map((to, i) => ({ orgId: row.orgId, appId: row.appId, type: 'feedback.status_changed' as const, data: { feedbackId, from: path[i], to } })))
    return true
  }

  /**
   * Records a change that is not a status move (a duplicate attached, an unmerge, an agent-run phase);
   * its seq. Payloads carry ids, states and URLs, never report text.
   */
  function record<T extends ChangeEventType>(scope: Scope, type: T, data: EventPayloads[T]): Body<number> {
    return steps.appendEvent({ orgId: scope.orgId, appId: scope.appId, type, data })
  }

  const receivedEvent = (r: NewReport): OutboxEvent => ({ orgId: r.orgId, appId: r.appId, type: 'feedback.received', data: { feedbackId: r.feedbackId, status: 'received' } })

  /**
   * A report stored as spam in this transaction (issue 27): no `process` job (never sanitized, clustered
   * or run while it is spam), and `feedback.received` only when the App's `spamEvents` asks for it.
   */
  function* receivedAsSpam(r: NewReport, emitEvent: boolean): Body<void> {
    if (emitEvent) yield* steps.appendEvent(receivedEvent(r))
  }

  /**
   * "Not spam" on a report stored as spam and never processed (issue 27): it joins the normal lifecycle
   * as if it had just arrived: `feedback.received` (unless it was emitted at intake) and its `process` job.
   */
  function* restoredFromSpam(r: NewReport, emitEvent: boolean): Body<void> {
    if (emitEvent) yield* steps.appendEvent(receivedEvent(r))
    yield* enqueue('process', { feedbackId: r.feedbackId, appId: r.appId })
  }

  /** Queues an agent run for each report of the App that waited in `queued` for a repository; how many. */
  function* enqueueWaitingRuns(appId: string): Body<number> {
    const n = yield* run(INSERT_WAITING_RUNS, clock.now(), appId)
    if (n > 0) yield* afterCommit(raise('agent'))
    return n
  }

  return { enqueue, enqueueProcessOf, move, moveToSanitized, record, receivedAsSpam, restoredFromSpam, enqueueWaitingRuns }
}
export type LifecycleBodies = ReturnType<typeof lifecycleBodies>

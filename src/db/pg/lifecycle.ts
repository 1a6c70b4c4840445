/**
 * The lifecycle's PostgreSQL side: the same moves as src/db/sqlite/lifecycle.ts, joined to the caller's
 * transaction (a `PgTx`: its client, and where to register after-commit work). The row is read
 * `FOR UPDATE`, so a concurrent move of the same report waits and then re-decides on the new row; the
 * UPDATE still compares the version. Rules come from lifecycle/rules.ts; only SQL is here. No other
 * PostgreSQL code writes `feedback.status` or inserts a job (test/architecture.test.ts).
 */
import type { Clock } from '../../core/clock'
import type { FeedbackStatus } from '../../core/fsm'
import type { EventPayloads } from '../../lifecycle/event-types'
import type { JobKind, JobTargets } from '../../lifecycle/jobs'
import type { ChangeEventType } from '../../lifecycle/lifecycle'
import { decideMove, sanitizedPath, type FeedbackState, type MoveCause, type ScrubbedColumns, type StatusWrite } from '../../lifecycle/rules'
import type { WakeSignal } from '../../lifecycle/wake'
import { appendEventParams, appendEventParts, appendEventPg, appendEventsPg } from './outbox'
import { prepared } from './storage'
import type { PgTx } from './transaction'
import { noteEventsAppended } from './event-signal'

/** A transaction a lifecycle write joins. */
export type { PgTx }

const STATE = 'SELECT id, org_id AS "orgId", app_id AS "appId", status, version FROM feedback WHERE id = $1 FOR UPDATE'
// The status write (compare-and-set on the version) and, only when it wrote, the Org's counter bump and
// the event ($9-$15: appendEventParams's order): one round trip. Answers how many rows moved (0 or 1).
const MOVE_EVENT = appendEventParts(9, 'moved')
const MOVE_WITH_EVENT = `WITH moved AS (UPDATE feedback SET status = $3, version = version + 1, updated_at = $4,
      failure_reason = CASE WHEN $5::boolean THEN failure_reason ELSE $6::text END,
      merge_request_url = CASE WHEN $7::boolean THEN merge_request_url ELSE $8::text END
    WHERE id = $1 AND version = $2 RETURNING id),
  ${MOVE_EVENT.counter},
  event AS (${MOVE_EVENT.insert})
  SELECT count(*)::int AS n FROM moved`
const SET_SANITIZED = `UPDATE feedback SET status = 'sanitized', version = version + $3, updated_at = $4, processed_at = $4, failure_reason = NULL,
    text = $5, url = $6, user_agent = $7, console_logs = $8, metadata = $9, component_target = $10, redactions = $11
  WHERE id = $1 AND version = $2`
const INSERT_JOB = 'INSERT INTO jobs (kind, feedback_id, app_id, run_after, created_at) VALUES ($1, $2, $3, $4, $5)'
// Reports that waited in `queued` for a repository (no agent job of their own left).
const INSERT_WAITING_RUNS = `INSERT INTO jobs (kind, feedback_id, run_after, created_at)
  SELECT 'agent', f.id, $1, $1 FROM feedback f
  WHERE f.app_id = $2 AND f.status = 'queued' AND f.duplicate_of_id IS NULL
    AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.kind = 'agent' AND j.feedback_id = f.id)`

export function createPgLifecycle(clock: Clock, wake?: WakeSignal) {
  const state = async (tx: PgTx, id: string): Promise<FeedbackState | undefined> => (await tx.client.query<FeedbackState>(STATE, [id])).rows[0]
  /** The status write and its `feedback.status_changed` event in one statement; false when the row's version moved. */
  const setStatusWithEvent = async (tx: PgTx, w: StatusWrite, event: unknown[]): Promise<boolean> => {
    const moved =
      (
        await tx.client.query<{ n: number }>(
          prepared(MOVE_WITH_EVENT, [
            w.id, w.version, w.to, w.now,
            w.failureReason === undefined, w.failureReason ?? null,
            w.mergeRequestUrl === undefined, w.mergeRequestUrl ?? null,
            ...event,
          ]),
        )
      ).rows[0].n === 1
    if (moved) noteEventsAppended(tx.client)
    return moved
  }

  async function enqueue<K extends JobKind>(tx: PgTx, kind: K, target: JobTargets[K], runAfter = clock.now()): Promise<void> {
    const t = target as { feedbackId?: string; appId?: string }
    await tx.client.query(INSERT_JOB, [kind, t.feedbackId ?? null, t.appId ?? null, runAfter, clock.now()])
    tx.onCommit(() => wake?.raise(kind))
  }

  const record = <T extends ChangeEventType>(tx: PgTx, scope: { orgId: string; appId: string | null }, type: T, data: EventPayloads[T]): Promise<number> =>
    appendEventPg(tx.client, clock, { orgId: scope.orgId, appId: scope.appId, type, data })

  return {
    enqueue,
    record,

    /** As src/db/sqlite/lifecycle.ts `move`: false when the row is gone or the caller's expectations lost. */
    async move(tx: PgTx, feedbackId: string, to: FeedbackStatus, cause: MoveCause): Promise<boolean> {
      const row = await state(tx, feedbackId)
      const write = decideMove(row, to, cause, clock.now())
      if (!row || !write) return false
      const event = appendEventParams(clock, { orgId: row.orgId, appId: row.appId, type: 'feedback.status_changed', data: { feedbackId, from: row.status, to } })
      if (!(await setStatusWithEvent(tx, write, event))) return false
      if (to === 'queued') await enqueue(tx, 'agent', { feedbackId })
      return true
    },

    /** As src/db/sqlite/lifecycle.ts `moveToSanitized`. */
    async moveToSanitized(tx: PgTx, feedbackId: string, version: number, columns: ScrubbedColumns, redactions: string): Promise<boolean> {
      const row = await state(tx, feedbackId)
      const path = sanitizedPath(row, version)
      if (!row || !path) return false
      const c = columns
      const { rowCount } = await tx.client.query(SET_SANITIZED, [
        feedbackId, version, path.length - 1, clock.now(), c.text, c.url, c.userAgent, c.consoleLogs, c.metadata, c.componentTarget, redactions,
      ])
      if (rowCount !== 1) return false
      // The path's events in one statement (received → sanitizing → sanitized is two).
      const steps = path.slice(1).map((to, i) => ({ orgId: row.orgId, appId: row.appId, type: 'feedback.status_changed' as const, data: { feedbackId, from: path[i], to } }))
      await appendEventsPg(tx.client, clock, steps)
      return true
    },

    /**
     * A report is stored in this transaction: records `feedback.received` and queues its processing.
     * `report` (the INSERT of the report's row, its parameters numbered from $1) runs in the same
     * statement: row, counter bump, event and job are ONE round trip. On intake's group commit, where a
     * batch's writes run one after another on one connection, four round trips per report were what
     * bounded PostgreSQL intake (bench/pg-intake.ts). The CTE's rows are checked against the foreign keys
     * at the end of the statement, when the report's row exists.
     */
    async received(tx: PgTx, r: { orgId: string; appId: string; feedbackId: string }, report?: { sql: string; params: unknown[] }): Promise<void> {
      const before = report?.params ?? []
      const event = appendEventParams(clock, { orgId: r.orgId, appId: r.appId, type: 'feedback.received', data: { feedbackId: r.feedbackId, status: 'received' } })
      const ev = appendEventParts(before.length + 1)
      const job = before.length + event.length + 1
      const text = `WITH ${report ? `report AS (${report.sql}), ` : ''}${ev.counter}, event AS (${ev.insert})
  INSERT INTO jobs (kind, feedback_id, app_id, run_after, created_at) VALUES ('process', $${job}::text, NULL, $${job + 1}::bigint, $${job + 1}::bigint)`
      await tx.client.query(prepared(text, [...before, ...event, r.feedbackId, clock.now()]))
      noteEventsAppended(tx.client)
      tx.onCommit(() => wake?.raise('process'))
    },

    /** As src/db/sqlite/lifecycle.ts `receivedAsSpam`: the report's INSERT, and the event only when asked. */
    async receivedAsSpam(tx: PgTx, r: { orgId: string; appId: string; feedbackId: string }, report: { sql: string; params: unknown[] }, emitEvent: boolean): Promise<void> {
      await tx.client.query(prepared(report.sql, report.params))
      if (emitEvent) await appendEventPg(tx.client, clock, { orgId: r.orgId, appId: r.appId, type: 'feedback.received', data: { feedbackId: r.feedbackId, status: 'received' } })
    },

    /** As src/db/sqlite/lifecycle.ts `restoredFromSpam`. */
    async restoredFromSpam(tx: PgTx, r: { orgId: string; appId: string; feedbackId: string }, emitEvent: boolean): Promise<void> {
      if (emitEvent) await appendEventPg(tx.client, clock, { orgId: r.orgId, appId: r.appId, type: 'feedback.received', data: { feedbackId: r.feedbackId, status: 'received' } })
      await enqueue(tx, 'process', { feedbackId: r.feedbackId })
    },

    /**
     * Many reports stored in this transaction at once (intake's bulk step, src/db/pg/feedback.ts): their
     * `feedback.received` events and `process` jobs in ONE statement with `reports` (the INSERT of their
     * rows, its parameters numbered from $1). Each Org's counter is bumped once by its count, and its
     * events take the seqs below the new value in the given order (which is the reports' id order).
     */
    async receivedMany(tx: PgTx, reports: { orgId: string; appId: string; feedbackId: string }[], insertReports: { sql: string; params: unknown[] }): Promise<void> {
      const n = insertReports.params.length
      const p = (k: number) => `$${n + k}`
      const now = clock.now()
      const text = `WITH report AS (${insertReports.sql}),
  input AS (SELECT * FROM unnest(${p(1)}::text[], ${p(2)}::text[], ${p(3)}::text[], ${p(4)}::text[], ${p(5)}::text[]) WITH ORDINALITY AS t(feedback_id, org_id, app_id, event_id, data, ord)),
  counter AS (INSERT INTO event_counters (org_id, last_seq) SELECT org_id, count(*) FROM input GROUP BY org_id
    ON CONFLICT (org_id) DO UPDATE SET last_seq = event_counters.last_seq + excluded.last_seq RETURNING org_id, last_seq),
  event AS (INSERT INTO events (id, org_id, app_id, seq, type, data, created_at, feedback_id)
    SELECT i.event_id, i.org_id, i.app_id,
      c.last_seq - count(*) OVER (PARTITION BY i.org_id) + row_number() OVER (PARTITION BY i.org_id ORDER BY i.ord),
      'feedback.received', i.data, ${p(6)}::bigint, i.feedback_id
    FROM input i JOIN counter c ON c.org_id = i.org_id)
  INSERT INTO jobs (kind, feedback_id, app_id, run_after, created_at) SELECT 'process', feedback_id, NULL, ${p(6)}::bigint, ${p(6)}::bigint FROM input ORDER BY ord`
      const events = reports.map((r) => appendEventParams(clock, { orgId: r.orgId, appId: r.appId, type: 'feedback.received', data: { feedbackId: r.feedbackId, status: 'received' } }))
      await tx.client.query(
        prepared(text, [
          ...insertReports.params,
          reports.map((r) => r.feedbackId), reports.map((r) => r.orgId), reports.map((r) => r.appId),
          events.map((e) => e[1]), events.map((e) => e[4]), now,
        ]),
      )
      noteEventsAppended(tx.client)
      tx.onCommit(() => wake?.raise('process'))
    },

    /** Queues an agent run for each report of the App that waited in `queued` for a repository. */
    async enqueueWaitingRuns(tx: PgTx, appId: string): Promise<number> {
      const n = (await tx.client.query(INSERT_WAITING_RUNS, [clock.now(), appId])).rowCount ?? 0
      if (n > 0) tx.onCommit(() => wake?.raise('agent'))
      return n
    },
  }
}
export type PgLifecycle = ReturnType<typeof createPgLifecycle>

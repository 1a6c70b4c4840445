/**
 * The lifecycle's PostgreSQL side: the moves, jobs and events of src/db/bodies/lifecycle.ts (written
 * once for both dialects) awaited on the caller's transaction (a `PgTx`: its client, and where to
 * register after-commit work) by the PostgreSQL driver (src/db/pg/tx-body.ts). This side supplies the
 * PostgreSQL steps: an event's seq from the Org's counter row (outbox.ts), and the status write with its
 * event in ONE statement. Intake's `received`/`receivedMany` stay here: on PostgreSQL they fuse the
 * report's INSERT, its event and its job into one statement (one round trip per report, or per batch).
 * No other PostgreSQL code writes `feedback.status` or inserts a job (test/architecture.test.ts).
 */
import type { Clock } from '../../core/clock'
import type { FeedbackStatus } from '../../core/fsm'
import type { EventPayloads } from '../../lifecycle/event-types'
import type { JobKind, JobTargets } from '../../lifecycle/jobs'
import type { ChangeEventType } from '../../lifecycle/lifecycle'
import type { MoveCause, ScrubbedColumns, StatusWrite } from '../../lifecycle/rules'
import type { WakeSignal } from '../../lifecycle/wake'
import { lifecycleBodies, type LifecycleSteps } from '../bodies/lifecycle'
import { native } from '../tx-body'
import { appendEventParams, appendEventParts, appendEventPg, appendEventsPg } from './outbox'
import { prepared } from './storage'
import type { PgTx } from './transaction'
import { runPg } from './tx-body'
import { noteEventsAppended } from './event-signal'

/** A transaction a lifecycle write joins. */
export type { PgTx }

// The status write (compare-and-set on the version) and, only when it wrote, the Org's counter bump and
// the event ($9-$15: appendEventParams's order): one round trip. Answers how many rows moved (0 or 1),
// and the Org's new last seq when one did (the live fan-out's news, event-signal.ts).
const MOVE_EVENT = appendEventParts(9, 'moved')
const MOVE_WITH_EVENT = `WITH moved AS (UPDATE feedback SET status = $3, version = version + 1, updated_at = $4,
      failure_reason = CASE WHEN $5::boolean THEN failure_reason ELSE $6::text END,
      merge_request_url = CASE WHEN $7::boolean THEN merge_request_url ELSE $8::text END
    WHERE id = $1 AND version = $2 RETURNING id),
  ${MOVE_EVENT.counter},
  event AS (${MOVE_EVENT.insert})
  SELECT count(*)::int AS n, (SELECT last_seq FROM counter) AS seq FROM moved`
type NewReport = { orgId: string; appId: string; feedbackId: string }

export function createPgLifecycle(clock: Clock, wake?: WakeSignal) {
  /** The status write and its `feedback.status_changed` event in one statement; false when the row's version moved. */
  const setStatusWithEvent = async (tx: PgTx, w: StatusWrite, event: unknown[]): Promise<boolean> => {
    const { n, seq } =
      (
        await tx.client.query<{ n: number; seq: number | null }>(
          prepared(MOVE_WITH_EVENT, [
            w.id, w.version, w.to, w.now,
            w.failureReason === undefined, w.failureReason ?? null,
            w.mergeRequestUrl === undefined, w.mergeRequestUrl ?? null,
            ...event,
          ]),
        )
      ).rows[0]
    if (n !== 1) return false
    noteEventsAppended(tx.client, [[event[0] as string, seq!]])
    return true
  }
  const steps: LifecycleSteps = {
    statusMoved: (write, event) => native((t: PgTx) => setStatusWithEvent(t, write, appendEventParams(clock, event))),
    appendEvent: (event) => native((t: PgTx) => appendEventPg(t.client, clock, event)),
    appendEvents: (events) => native((t: PgTx) => appendEventsPg(t.client, clock, events)),
  }
  const bodies = lifecycleBodies(clock, steps, wake)

  return {
    /** The transaction bodies (src/db/bodies/lifecycle.ts), for a PostgreSQL repository's own bodies to `yield*`. */
    bodies,
    enqueue: <K extends JobKind>(tx: PgTx, kind: K, target: JobTargets[K], runAfter?: number): Promise<void> =>
      runPg(tx, bodies.enqueue(kind, target, runAfter)),
    /** Queues a report's `process` job with its App read from the report (src/db/bodies/lifecycle.ts `enqueueProcessOf`). */
    enqueueProcessOf: (tx: PgTx, feedbackId: string): Promise<void> => runPg(tx, bodies.enqueueProcessOf(feedbackId)),
    record: <T extends ChangeEventType>(tx: PgTx, scope: { orgId: string; appId: string | null }, type: T, data: EventPayloads[T]): Promise<number> =>
      runPg(tx, bodies.record(scope, type, data)),

    /** src/db/bodies/lifecycle.ts `move`: false when the row is gone or the caller's expectations lost. */
    move: (tx: PgTx, feedbackId: string, to: FeedbackStatus, cause: MoveCause): Promise<boolean> => runPg(tx, bodies.move(feedbackId, to, cause)),

    /** src/db/bodies/lifecycle.ts `moveToSanitized`. */
    moveToSanitized: (tx: PgTx, feedbackId: string, version: number, columns: ScrubbedColumns, redactions: string): Promise<boolean> =>
      runPg(tx, bodies.moveToSanitized(feedbackId, version, columns, redactions)),

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
  INSERT INTO jobs (kind, feedback_id, app_id, run_after, created_at) VALUES ('process', $${job}::text, $${job + 2}::text, $${job + 1}::bigint, $${job + 1}::bigint)
  RETURNING (SELECT last_seq FROM counter) AS seq`
      const { rows } = await tx.client.query<{ seq: number }>(prepared(text, [...before, ...event, r.feedbackId, clock.now(), r.appId]))
      noteEventsAppended(tx.client, [[r.orgId, rows[0].seq]])
      tx.onCommit(() => wake?.raise('process'))
    },

    /** The report's INSERT (its own statement here), then src/db/bodies/lifecycle.ts `receivedAsSpam`. */
    async receivedAsSpam(tx: PgTx, r: NewReport, report: { sql: string; params: unknown[] }, emitEvent: boolean): Promise<void> {
      await tx.client.query(prepared(report.sql, report.params))
      await runPg(tx, bodies.receivedAsSpam(r, emitEvent))
    },

    /** src/db/bodies/lifecycle.ts `restoredFromSpam`. */
    restoredFromSpam: (tx: PgTx, r: NewReport, emitEvent: boolean): Promise<void> => runPg(tx, bodies.restoredFromSpam(r, emitEvent)),

    /**
     * Many reports stored in this transaction at once (intake's bulk step, src/db/pg/feedback.ts): their
     * `feedback.received` events and `process` jobs in ONE statement with `reports` (the INSERT of their
     * rows, its parameters numbered from $1). Each Org's counter is bumped once by its count, in Org id order
     * (the order every transaction takes counters in: db/pg/group-commit.ts), and its events take the seqs
     * below the new value in the given order (which is the reports' id order).
     */
    async receivedMany(tx: PgTx, reports: { orgId: string; appId: string; feedbackId: string }[], insertReports: { sql: string; params: unknown[] }): Promise<void> {
      const n = insertReports.params.length
      const p = (k: number) => `$${n + k}`
      const now = clock.now()
      const text = `WITH report AS (${insertReports.sql}),
  input AS (SELECT * FROM unnest(${p(1)}::text[], ${p(2)}::text[], ${p(3)}::text[], ${p(4)}::text[], ${p(5)}::text[]) WITH ORDINALITY AS t(feedback_id, org_id, app_id, event_id, data, ord)),
  counter AS (INSERT INTO event_counters (org_id, last_seq) SELECT org_id, count(*) FROM input GROUP BY org_id ORDER BY org_id
    ON CONFLICT (org_id) DO UPDATE SET last_seq = event_counters.last_seq + excluded.last_seq RETURNING org_id, last_seq),
  event AS (INSERT INTO events (id, org_id, app_id, seq, type, data, created_at, feedback_id)
    SELECT i.event_id, i.org_id, i.app_id,
      c.last_seq - count(*) OVER (PARTITION BY i.org_id) + row_number() OVER (PARTITION BY i.org_id ORDER BY i.ord),
      'feedback.received', i.data, ${p(6)}::bigint, i.feedback_id
    FROM input i JOIN counter c ON c.org_id = i.org_id),
  job AS (INSERT INTO jobs (kind, feedback_id, app_id, run_after, created_at) SELECT 'process', feedback_id, app_id, ${p(6)}::bigint, ${p(6)}::bigint FROM input ORDER BY ord)
  SELECT org_id, last_seq FROM counter`
      const events = reports.map((r) => appendEventParams(clock, { orgId: r.orgId, appId: r.appId, type: 'feedback.received', data: { feedbackId: r.feedbackId, status: 'received' } }))
      const { rows } = await tx.client.query<{ org_id: string; last_seq: number }>(
        prepared(text, [
          ...insertReports.params,
          reports.map((r) => r.feedbackId), reports.map((r) => r.orgId), reports.map((r) => r.appId),
          events.map((e) => e[1]), events.map((e) => e[4]), now,
        ]),
      )
      noteEventsAppended(tx.client, rows.map((c) => [c.org_id, c.last_seq] as const))
      tx.onCommit(() => wake?.raise('process'))
    },

    /** Queues an agent run for each report of the App that waited in `queued` for a repository. */
    enqueueWaitingRuns: (tx: PgTx, appId: string): Promise<number> => runPg(tx, bodies.enqueueWaitingRuns(appId)),
  }
}
export type PgLifecycle = ReturnType<typeof createPgLifecycle>

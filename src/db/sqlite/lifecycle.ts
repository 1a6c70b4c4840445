/**
 * The lifecycle's SQLite side: every status move goes through `move`, which asks the rules
 * (lifecycle/rules.ts: the FSM for customer and system moves alike), applies the move with
 * compare-and-set on the row's version, records `feedback.status_changed` in the outbox and queues the
 * follow-up job, all in one transaction — nested in the caller's when there is one, so SQLite-side
 * repositories join it synchronously. Every job is queued through `enqueue`. No other module writes
 * `feedback.status` or inserts a job (test/architecture.test.ts holds that). The rest of fixloop uses
 * the dialect-neutral port, lifecycle/lifecycle.ts.
 *
 * The transactions themselves are written once for both dialects (src/db/bodies/lifecycle.ts) and run
 * here by the synchronous driver (src/db/sqlite/tx-body.ts); this side supplies the SQLite steps: an
 * event's seq read from the Org's newest (outbox.ts) and the status write before its event.
 */
import type { Database } from 'bun:sqlite'
import type { Clock } from '../../core/clock'
import type { FeedbackStatus } from '../../core/fsm'
import type { EventPayloads, OutboxEvent } from '../../lifecycle/event-types'
import type { JobKind, JobTargets } from '../../lifecycle/jobs'
import { statusAfterSanitize, type MoveCause, type ScrubbedColumns } from '../../lifecycle/rules'
import type { ChangeEventType } from '../../lifecycle/lifecycle'
import { lifecycleBodies, type LifecycleSteps } from '../bodies/lifecycle'
import { native, run, sql, type Body } from '../tx-body'
import { createOutbox } from './outbox'
import { sqliteBodies } from './tx-body'
import type { WakeSignal } from '../../lifecycle/wake'

// The status write, compare-and-set on the row's version (PostgreSQL's carries its event in the same statement).
const SET_STATUS = sql(
  `UPDATE feedback SET status = ?3, version = version + 1, updated_at = ?4,
     failure_reason = CASE WHEN ?5 THEN failure_reason ELSE ?6 END,
     merge_request_url = CASE WHEN ?7 THEN merge_request_url ELSE ?8 END
   WHERE id = ?1 AND version = ?2`,
)

export function createSqliteLifecycle(sqlite: Database, clock: Clock, wake?: WakeSignal) {
  const outbox = createOutbox(sqlite, clock)
  const driver = sqliteBodies(sqlite)
  const appendEvent = (event: OutboxEvent) => native(() => outbox.append(event))
  const steps: LifecycleSteps = {
    *statusMoved(w, event): Body<boolean> {
      const keepReason = w.failureReason === undefined ? 1 : 0
      const keepUrl = w.mergeRequestUrl === undefined ? 1 : 0
      if ((yield* run(SET_STATUS, w.id, w.version, w.to, w.now, keepReason, w.failureReason ?? null, keepUrl, w.mergeRequestUrl ?? null)) !== 1) return false
      yield* appendEvent(event)
      return true
    },
    appendEvent,
    appendEvents: (events) => native(() => events.forEach((e) => outbox.append(e))),
  }
  const bodies = lifecycleBodies(clock, steps, wake)

  /** The statements are prepared on the lifecycle's connection: a transaction on another one would not hold them. */
  const joinable = (tx: Database, what: string) => {
    if (tx !== sqlite) throw new Error(`lifecycle.${what} must join a transaction on the lifecycle's own connection`)
  }
  const inTransaction = (tx: Database, what: string) => {
    if (tx !== sqlite || !tx.inTransaction) throw new Error(`lifecycle.${what} must run in the transaction that stores the report`)
  }

  function enqueue<K extends JobKind>(kind: K, target: JobTargets[K], runAfter = clock.now()): void {
    driver.run(bodies.enqueue(kind, target, runAfter))
  }

  return {
    /** The transaction bodies (src/db/bodies/lifecycle.ts), for a SQLite repository's own bodies to `yield*`. */
    bodies,
    /** The driver over this connection (src/db/sqlite/tx-body.ts): runs a body in the caller's transaction. */
    driver,
    enqueue,
    /** Queues a report's `process` job with its App read from the report (src/db/bodies/lifecycle.ts `enqueueProcessOf`). */
    enqueueProcessOf: (feedbackId: string): void => driver.run(bodies.enqueueProcessOf(feedbackId)),
    statusAfterSanitize,

    /**
     * Moves a report to `to` (src/db/bodies/lifecycle.ts `move`). `tx` is the connection whose
     * transaction the move joins: nested in the caller's transaction (a savepoint), or a transaction of
     * its own that takes the write lock before it reads: a read-then-write transaction would fail at once
     * (SQLITE_BUSY_SNAPSHOT) when another process wrote in between, instead of waiting its turn.
     */
    move(tx: Database, feedbackId: string, to: FeedbackStatus, cause: MoveCause): boolean {
      joinable(tx, 'move')
      return driver.transaction(bodies.move(feedbackId, to, cause))
    },

    /** received|sanitizing → sanitized (src/db/bodies/lifecycle.ts `moveToSanitized`); joins the caller's transaction like `move`. */
    moveToSanitized(tx: Database, feedbackId: string, version: number, columns: ScrubbedColumns, redactions: string): boolean {
      joinable(tx, 'moveToSanitized')
      return driver.transaction(bodies.moveToSanitized(feedbackId, version, columns, redactions))
    },

    /**
     * A report was just stored (status `received`): records `feedback.received` and queues its
     * processing. Call it in the write that inserts the row, so the three commit together.
     */
    received(tx: Database, r: { orgId: string; appId: string; feedbackId: string }): void {
      inTransaction(tx, 'received')
      outbox.append({ orgId: r.orgId, appId: r.appId, type: 'feedback.received', data: { feedbackId: r.feedbackId, status: 'received' } })
      enqueue('process', { feedbackId: r.feedbackId, appId: r.appId })
    },

    /** A report was just stored as spam (src/db/bodies/lifecycle.ts `receivedAsSpam`). */
    receivedAsSpam(tx: Database, r: { orgId: string; appId: string; feedbackId: string }, emitEvent: boolean): void {
      inTransaction(tx, 'receivedAsSpam')
      driver.run(bodies.receivedAsSpam(r, emitEvent))
    },

    /** "Not spam" on a report never processed (src/db/bodies/lifecycle.ts `restoredFromSpam`). */
    restoredFromSpam(tx: Database, r: { orgId: string; appId: string; feedbackId: string }, emitEvent: boolean): void {
      if (tx !== sqlite || !tx.inTransaction) throw new Error('lifecycle.restoredFromSpam must run in a transaction')
      driver.run(bodies.restoredFromSpam(r, emitEvent))
    },

    /** Queues an agent run for each report of the App that waited in `queued` for a repository. */
    enqueueWaitingRuns: (appId: string): number => driver.run(bodies.enqueueWaitingRuns(appId)),

    /**
     * Records a change that is not a status move (a duplicate attached, an unmerge, an agent-run phase)
     * in the caller's transaction. Payloads carry ids, states and URLs, never report text.
     */
    record<T extends ChangeEventType>(scope: { orgId: string; appId: string | null }, type: T, data: EventPayloads[T]): number {
      return outbox.append({ orgId: scope.orgId, appId: scope.appId, type, data })
    },
  }
}
export type SqliteLifecycle = ReturnType<typeof createSqliteLifecycle>

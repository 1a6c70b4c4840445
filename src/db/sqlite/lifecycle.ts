/**
 * The lifecycle's SQLite side: every status move goes through `move`, which asks the rules
 * (lifecycle/rules.ts: the FSM for customer and system moves alike), applies the move with
 * compare-and-set on the row's version, records `feedback.status_changed` in the outbox and queues the
 * follow-up job, all in one transaction — nested in the caller's when there is one, so SQLite-side
 * repositories join it synchronously. Every job is queued through `enqueue`. No other module writes
 * `feedback.status` or inserts a job (test/architecture.test.ts holds that). The rest of fixloop uses
 * the dialect-neutral port, lifecycle/lifecycle.ts.
 */
import type { Database } from 'bun:sqlite'
import type { Clock } from '../../core/clock'
import type { FeedbackStatus } from '../../core/fsm'
import type { EventPayloads } from '../../lifecycle/event-types'
import type { JobKind, JobTargets } from '../../lifecycle/jobs'
import { decideMove, sanitizedPath, statusAfterSanitize, type MoveCause, type ScrubbedColumns } from '../../lifecycle/rules'
import type { ChangeEventType } from '../../lifecycle/lifecycle'
import { createLifecycleRepo } from './lifecycle-repo'
import { createOutbox } from './outbox'
import type { WakeSignal } from '../../lifecycle/wake'

export function createSqliteLifecycle(sqlite: Database, clock: Clock, wake?: WakeSignal) {
  const repo = createLifecycleRepo(sqlite)
  const outbox = createOutbox(sqlite, clock)

  function enqueue<K extends JobKind>(kind: K, target: JobTargets[K], runAfter = clock.now()): void {
    const t = target as { feedbackId?: string; appId?: string }
    repo.insertJob(kind, t.feedbackId ?? null, t.appId ?? null, runAfter, clock.now())
    wake?.raise(kind)
  }

  /**
   * Moves a report to `to`. Throws ApiError invalid_transition (and changes nothing) when the FSM does
   * not allow the move from the current status; returns false when the row is gone or another writer
   * got there first (`cause.from`/`cause.version` no longer hold, or the compare-and-set lost).
   * `tx` is the connection whose transaction the move joins.
   */
  function move(tx: Database, feedbackId: string, to: FeedbackStatus, cause: MoveCause): boolean {
    // The statements are prepared on the lifecycle's connection: a transaction on another one would not hold them.
    if (tx !== sqlite) throw new Error('lifecycle.move must join a transaction on the lifecycle\'s own connection')
    const apply = tx.transaction(() => {
      const row = repo.state(feedbackId)
      const write = decideMove(row, to, cause, clock.now())
      if (!row || !write || !repo.setStatus(write)) return false
      outbox.append({ orgId: row.orgId, appId: row.appId, type: 'feedback.status_changed', data: { feedbackId, from: row.status, to } })
      if (to === 'queued') enqueue('agent', { feedbackId })
      return true
    })
    // Nested in the caller's transaction (a savepoint), or a transaction of its own that takes the write
    // lock before it reads: a read-then-write transaction would fail at once (SQLITE_BUSY_SNAPSHOT) when
    // another process wrote in between, instead of waiting its turn.
    return apply.immediate()
  }

  /**
   * `received` (or `sanitizing`, after a crash in between) → `sanitizing` → `sanitized`, storing the
   * sanitized columns: the same row and the same `feedback.status_changed` events as two `move`s and the
   * overwrite between them, in one write of the row. False (nothing changed) when the row is gone, moved
   * on, or no longer at `version`. Joins the caller's transaction like `move`.
   */
  function moveToSanitized(tx: Database, feedbackId: string, version: number, columns: ScrubbedColumns, redactions: string): boolean {
    if (tx !== sqlite) throw new Error('lifecycle.moveToSanitized must join a transaction on the lifecycle\'s own connection')
    return tx
      .transaction(() => {
        const row = repo.state(feedbackId)
        const path = sanitizedPath(row, version)
        if (!row || !path) return false
        if (!repo.setSanitized({ id: feedbackId, version, moves: (path.length - 1) as 1 | 2, now: clock.now(), columns, redactions })) return false
        for (let i = 1; i < path.length; i++) {
          outbox.append({ orgId: row.orgId, appId: row.appId, type: 'feedback.status_changed', data: { feedbackId, from: path[i - 1], to: path[i] } })
        }
        return true
      })
      .immediate()
  }

  return {
    move,
    moveToSanitized,
    enqueue,
    statusAfterSanitize,

    /**
     * A report was just stored (status `received`): records `feedback.received` and queues its
     * processing. Call it in the write that inserts the row, so the three commit together.
     */
    received(tx: Database, r: { orgId: string; appId: string; feedbackId: string }): void {
      if (tx !== sqlite || !tx.inTransaction) throw new Error('lifecycle.received must run in the transaction that stores the report')
      outbox.append({ orgId: r.orgId, appId: r.appId, type: 'feedback.received', data: { feedbackId: r.feedbackId, status: 'received' } })
      enqueue('process', { feedbackId: r.feedbackId })
    },

    /**
     * A report was just stored as spam (issue 27): no `process` job (never sanitized, clustered or run
     * while it is spam), and `feedback.received` only when the App's `spamEvents` asks for it.
     */
    receivedAsSpam(tx: Database, r: { orgId: string; appId: string; feedbackId: string }, emitEvent: boolean): void {
      if (tx !== sqlite || !tx.inTransaction) throw new Error('lifecycle.receivedAsSpam must run in the transaction that stores the report')
      if (emitEvent) outbox.append({ orgId: r.orgId, appId: r.appId, type: 'feedback.received', data: { feedbackId: r.feedbackId, status: 'received' } })
    },

    /**
     * "Not spam" on a report stored as spam and never processed (issue 27): it joins the normal lifecycle
     * as if it had just arrived: `feedback.received` (unless it was emitted at intake) and its `process` job.
     */
    restoredFromSpam(tx: Database, r: { orgId: string; appId: string; feedbackId: string }, emitEvent: boolean): void {
      if (tx !== sqlite || !tx.inTransaction) throw new Error('lifecycle.restoredFromSpam must run in a transaction')
      if (emitEvent) outbox.append({ orgId: r.orgId, appId: r.appId, type: 'feedback.received', data: { feedbackId: r.feedbackId, status: 'received' } })
      enqueue('process', { feedbackId: r.feedbackId })
    },

    /** Queues an agent run for each report of the App that waited in `queued` for a repository. */
    enqueueWaitingRuns(appId: string): number {
      const n = repo.insertWaitingRuns(appId, clock.now())
      if (n > 0) wake?.raise('agent')
      return n
    },

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

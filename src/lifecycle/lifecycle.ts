/**
 * The one owner of a report's lifecycle. Every status move goes through `move`: it checks the FSM
 * (core/fsm.ts) for customer and system moves alike, applies the move with compare-and-set on the row's
 * version, records `feedback.status_changed` in the outbox and queues the follow-up job, all in one
 * transaction (nested in the caller's when there is one). Every job is queued through `enqueue`.
 * No other module writes `feedback.status` or inserts a job (test/architecture.test.ts holds that).
 */
import type { Database } from 'bun:sqlite'
import type { Clock } from '../core/clock'
import { ApiError } from '../core/errors'
import { canCustomerMove, canSystemMove, CUSTOMER_TARGETS, type CustomerTarget, type FeedbackStatus } from '../core/fsm'
import type { EventPayloads, EventType } from './event-types'
import type { JobKind, JobTargets } from './jobs'
import { createLifecycleRepo, type ScrubbedColumns } from './lifecycle-repo'
import { createOutbox } from './outbox'
import type { WakeSignal } from './wake'

/** Who asks for a move, and what the caller knows about the row. */
export interface MoveCause {
  /** A customer (sk_ PATCH) may only make the moves of spec part 3; the system only its own edges. */
  by: 'customer' | 'system'
  /** Move only if the report is still in this status (otherwise `move` returns false). */
  from?: FeedbackStatus
  /** Move only if the row still has this version (otherwise `move` returns false). */
  version?: number
  /** Stored as the report's failure reason when it moves to `failed`. */
  reason?: string
  /** The pull/merge request of a move to `pr_opened`. */
  prUrl?: string | null
}

/** The processing setting that decides where a sanitized lead goes. */
export interface RoutingSettings {
  processingMode: string
}

/** Where a sanitized lead goes next: the agent queue in auto_pr mode, a human otherwise. */
export function statusAfterSanitize(app: RoutingSettings): 'queued' | 'awaiting_manual' {
  return app.processingMode === 'auto_pr' ? 'queued' : 'awaiting_manual'
}

/** Event types that are not status moves: recorded by the module that makes the change, through `record`. */
export type ChangeEventType = Exclude<EventType, 'feedback.status_changed' | 'feedback.received'>

const isCustomerTarget = (to: FeedbackStatus): to is CustomerTarget => (CUSTOMER_TARGETS as readonly string[]).includes(to)

export function createLifecycle(sqlite: Database, clock: Clock, wake?: WakeSignal) {
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
      if (!row) return false
      if (cause.from !== undefined && row.status !== cause.from) return false
      if (cause.version !== undefined && row.version !== cause.version) return false
      const from = row.status
      const allowed = cause.by === 'customer' ? isCustomerTarget(to) && canCustomerMove(from, to) : canSystemMove(from, to)
      if (!allowed) throw new ApiError('invalid_transition', { from, to }, cause.by === 'system' ? `illegal system move ${from} → ${to}` : undefined)
      const written = repo.setStatus({
        id: feedbackId,
        version: row.version,
        to,
        now: clock.now(),
        // A report that moves on starts clean: the old failure no longer describes it.
        failureReason: to === 'failed' ? (cause.reason?.slice(0, 1000) ?? null) : to === 'archived' ? undefined : null,
        mergeRequestUrl: to === 'pr_opened' ? (cause.prUrl ?? null) : undefined,
      })
      if (!written) return false
      outbox.append({ orgId: row.orgId, appId: row.appId, type: 'feedback.status_changed', data: { feedbackId, from, to } })
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
        if (!row || row.version !== version || (row.status !== 'received' && row.status !== 'sanitizing')) return false
        const path: FeedbackStatus[] = row.status === 'received' ? ['received', 'sanitizing', 'sanitized'] : ['sanitizing', 'sanitized']
        for (let i = 1; i < path.length; i++) {
          if (!canSystemMove(path[i - 1], path[i])) throw new ApiError('invalid_transition', { from: path[i - 1], to: path[i] }, `illegal system move ${path[i - 1]} → ${path[i]}`)
        }
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
export type Lifecycle = ReturnType<typeof createLifecycle>

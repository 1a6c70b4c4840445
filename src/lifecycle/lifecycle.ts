/**
 * The one owner of a report's lifecycle, as the rest of fixloop sees it: every status move goes through
 * `move` (the FSM checked for customer and system moves alike, compare-and-set on the row's version,
 * `feedback.status_changed` recorded in the outbox and the follow-up job queued, in one transaction),
 * every job through `enqueue`. No other module writes `feedback.status` or inserts a job
 * (test/architecture.test.ts holds that).
 *
 * The methods here are transactions of their own. A repository whose business transaction includes a
 * move, an event or a job joins it through its own dialect's side: `lifecycle.sqlite` (synchronous,
 * nested in the caller's SQLite transaction: src/db/sqlite/lifecycle.ts) or `lifecycle.pg` (a PgTx:
 * src/db/pg/lifecycle.ts). The decisions themselves are pure: lifecycle/rules.ts.
 */
import type { Clock } from '../core/clock'
import type { FeedbackStatus } from '../core/fsm'
import type { Storage } from '../db/storage'
import { createSqliteLifecycle, type SqliteLifecycle } from '../db/sqlite/lifecycle'
import { createPgLifecycle, type PgLifecycle, type PgTx } from '../db/pg/lifecycle'
import type { EventPayloads, EventType } from './event-types'
import type { JobKind, JobTargets } from './jobs'
import { statusAfterSanitize, type MoveCause } from './rules'
import type { WakeSignal } from './wake'

export { statusAfterSanitize, type MoveCause, type RoutingSettings } from './rules'

/** Event types that are not status moves: recorded by the module that makes the change, through `record`. */
export type ChangeEventType = Exclude<EventType, 'feedback.status_changed' | 'feedback.received'>

export interface Lifecycle {
  /**
   * Moves a report to `to`. Throws ApiError invalid_transition (and changes nothing) when the FSM does
   * not allow the move from the current status; false when the row is gone or another writer got there
   * first (`cause.from`/`cause.version` no longer hold, or the compare-and-set lost).
   */
  move(feedbackId: string, to: FeedbackStatus, cause: MoveCause): Promise<boolean>
  enqueue<K extends JobKind>(kind: K, target: JobTargets[K], runAfter?: number): Promise<void>
  /** Queues an agent run for each report of the App that waited in `queued` for a repository. */
  enqueueWaitingRuns(appId: string): Promise<number>
  /** Records a change that is not a status move; payloads carry ids, states and URLs, never report text. */
  record<T extends ChangeEventType>(scope: { orgId: string; appId: string | null }, type: T, data: EventPayloads[T]): Promise<number>
  statusAfterSanitize: typeof statusAfterSanitize
  /** The SQLite side, for SQLite repositories to join (undefined on PostgreSQL). */
  readonly sqlite: SqliteLifecycle | undefined
  /** The PostgreSQL side, for PostgreSQL repositories to join (undefined on SQLite). */
  readonly pg: PgLifecycle | undefined
}

export function createLifecycle(storage: Storage, clock: Clock, wake?: WakeSignal): Lifecycle {
  if (storage.dialect === 'sqlite') {
    const side = createSqliteLifecycle(storage.sqlite, clock, wake)
    const { sqlite } = storage
    return {
      move: async (feedbackId, to, cause) => side.move(sqlite, feedbackId, to, cause),
      enqueue: async (kind, target, runAfter) => side.enqueue(kind, target, runAfter),
      enqueueWaitingRuns: async (appId) => side.enqueueWaitingRuns(appId),
      // An event's seq is read inside the transaction that writes it (src/db/sqlite/outbox.ts).
      record: async (scope, type, data) => sqlite.transaction(() => side.record(scope, type, data)).immediate(),
      statusAfterSanitize,
      sqlite: side,
      pg: undefined,
    }
  }
  const side = createPgLifecycle(clock, wake)
  const tx = <T>(work: (t: PgTx) => Promise<T>) => storage.tx((client, _db, onCommit) => work({ client, onCommit }))
  return {
    move: (feedbackId, to, cause) => tx((t) => side.move(t, feedbackId, to, cause)),
    enqueue: (kind, target, runAfter) => tx((t) => side.enqueue(t, kind, target, runAfter)),
    enqueueWaitingRuns: (appId) => tx((t) => side.enqueueWaitingRuns(t, appId)),
    record: (scope, type, data) => tx((t) => side.record(t, scope, type, data)),
    statusAfterSanitize,
    sqlite: undefined,
    pg: side,
  }
}

/**
 * The one owner of a report's lifecycle, as the rest of fixloop sees it: every status move goes through
 * `move` (the FSM checked for customer and system moves alike, compare-and-set on the row's version,
 * `feedback.status_changed` recorded in the outbox and the follow-up job queued, in one transaction),
 * every job through `enqueue`. No other module writes `feedback.status` or inserts a job
 * (test/architecture.test.ts holds that).
 *
 * The methods here are transactions of their own. A repository whose business transaction includes a
 * move, an event or a job joins the writer of its own store inside its dialect folder (the store builds
 * both: src/db/sqlite/lifecycle.ts, synchronous and nested in the caller's SQLite transaction;
 * src/db/pg/lifecycle.ts, a PgTx). The decisions themselves are pure: lifecycle/rules.ts.
 */
import type { FeedbackStatus } from '../core/fsm'
import type { EventPayloads, EventType } from './event-types'
import type { JobKind, JobTargets } from './jobs'
import { statusAfterSanitize, type MoveCause } from './rules'

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
}


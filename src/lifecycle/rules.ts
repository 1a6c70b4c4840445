/**
 * The lifecycle's decisions, as pure functions of a report's row: both storage sides (src/db/sqlite/
 * lifecycle.ts, src/db/pg/lifecycle.ts) read the row in their transaction, ask here, and write what the
 * answer says. No SQL, no clock.
 */
import { ApiError } from '../core/errors'
import { canCustomerMove, canFollowLead, canResolveByHand, canSystemMove, CUSTOMER_TARGETS, type CustomerTarget, type FeedbackStatus } from '../core/fsm'
import type { StoredReport } from '../sanitize/report'
import { clip } from '../core/clip'

/** The columns of a report the lifecycle decides on. */
export interface FeedbackState {
  id: string
  orgId: string
  appId: string
  status: FeedbackStatus
  version: number
}

/** Who asks for a move, and what the caller knows about the row. */
export interface MoveCause {
  /**
   * A customer (sk_ PATCH) may only make the moves of spec part 3; the system only its own edges;
   * `lead` is a duplicate following its lead (core/fsm.ts `canFollowLead`: only to `resolved`);
   * `person` is "Mark as fixed" (core/fsm.ts `canResolveByHand`: only to `resolved`).
   */
  by: 'customer' | 'system' | 'lead' | 'person'
  /** Move only if the report is still in this status (otherwise `move` returns false). */
  from?: FeedbackStatus
  /** Move only if the row still has this version (otherwise `move` returns false). */
  version?: number
  /** Stored as the report's failure reason when it moves to `failed`. */
  reason?: string
  /** The pull/merge request of a move to `pr_opened` (undefined keeps the stored one: a review iteration's return). */
  prUrl?: string | null
}

/** The write a move makes (compare-and-set on `version`). */
export interface StatusWrite {
  id: string
  version: number
  to: FeedbackStatus
  now: number
  /** undefined keeps the stored failure reason; null clears it. */
  failureReason: string | null | undefined
  /** undefined keeps the stored URL. */
  mergeRequestUrl: string | null | undefined
}

/** A report's sanitized free-text columns (as stored: JSON members encoded). */
export type ScrubbedColumns = StoredReport

export interface SanitizedWrite {
  id: string
  version: number
  /** 2 from `received`, 1 from `sanitizing`. */
  moves: 1 | 2
  now: number
  columns: ScrubbedColumns
  /** The redaction counts, JSON. */
  redactions: string
}

/** The processing setting that decides where a sanitized lead goes. */
export interface RoutingSettings {
  processingMode: string
}

/** Where a sanitized lead goes next: the agent queue in auto_pr mode, a human otherwise. */
export function statusAfterSanitize(app: RoutingSettings): 'queued' | 'awaiting_manual' {
  return app.processingMode === 'auto_pr' ? 'queued' : 'awaiting_manual'
}

const isCustomerTarget = (to: FeedbackStatus): to is CustomerTarget => (CUSTOMER_TARGETS as readonly string[]).includes(to)

/**
 * The write of a move of `row` to `to`, or null when the caller's expectations (`from`, `version`) no
 * longer hold or the row is gone. Throws ApiError invalid_transition when the FSM forbids the move.
 */
export function decideMove(row: FeedbackState | null | undefined, to: FeedbackStatus, cause: MoveCause, now: number): StatusWrite | null {
  if (!row) return null
  if (cause.from !== undefined && row.status !== cause.from) return null
  if (cause.version !== undefined && row.version !== cause.version) return null
  const from = row.status
  const allowed =
    cause.by === 'customer' ? isCustomerTarget(to) && canCustomerMove(from, to)
    : cause.by === 'lead' ? canFollowLead(from, to)
    : cause.by === 'person' ? to === 'resolved' && canResolveByHand(from)
    : canSystemMove(from, to)
  if (!allowed) throw new ApiError('invalid_transition', { from, to }, cause.by === 'customer' || cause.by === 'person' ? undefined : `illegal ${cause.by} move ${from} → ${to}`)
  return {
    id: row.id,
    version: row.version,
    to,
    now,
    // A report that moves on starts clean: the old failure no longer describes it.
    failureReason: to === 'failed' ? (cause.reason === undefined ? null : clip(cause.reason, 1000)) : to === 'archived' ? undefined : null,
    mergeRequestUrl: to === 'pr_opened' && cause.prUrl !== undefined ? cause.prUrl : undefined,
  }
}

/**
 * The statuses a report passes through to `sanitized` (`received` → `sanitizing` → `sanitized`, or from
 * `sanitizing` after a crash in between), or null when it moved on or is no longer at `version`.
 */
export function sanitizedPath(row: FeedbackState | null | undefined, version: number): FeedbackStatus[] | null {
  if (!row || row.version !== version || (row.status !== 'received' && row.status !== 'sanitizing')) return null
  const path: FeedbackStatus[] = row.status === 'received' ? ['received', 'sanitizing', 'sanitized'] : ['sanitizing', 'sanitized']
  for (let i = 1; i < path.length; i++) {
    if (!canSystemMove(path[i - 1], path[i])) throw new ApiError('invalid_transition', { from: path[i - 1], to: path[i] }, `illegal system move ${path[i - 1]} → ${path[i]}`)
  }
  return path
}

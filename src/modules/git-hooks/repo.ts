/**
 * What following a pull/merge request stores: the deliveries already handled (replay safety) and the
 * moves a host's news makes (merged → resolved with the lead's duplicates, closed → awaiting_manual,
 * reopened → pr_opened), each delivery one transaction. The port: one implementation for both
 * dialects (src/db/bodies/git-hooks.ts, transaction bodies run by each store's driver), held to
 * test/repos/git-hooks.test.ts.
 */
import type { FeedbackStatus } from '../../core/fsm'
import { deliveryIdOr } from '../../core/outbound'

/** What the host says happened to the pull/merge request. */
export type PrChange = 'merged' | 'closed' | 'reopened'

/** The lead report a pull/merge request of fixloop's belongs to. */
export interface PrReport {
  id: string
  orgId: string
  appId: string
  status: FeedbackStatus
  prUrl: string
}

/** How long polling keeps reading a request closed without merge, for a reopen (docs/agents.md "Polling"). */
export const CLOSED_PR_POLL_MS = 30 * 24 * 3600_000

/** A review waiting for its iteration (text and author sanitized and bounded). */
export interface QueuedReview {
  id: string
  report: PrReport
  text: string
  author: string | null
}

/** Reviews that may wait on one pull request; one more is refused (a flood of comments is bounded). */
export const PENDING_REVIEWS_MAX = 10
export const pendingFull = (n: number) => `${n} reviews already wait for an iteration on this pull request (limit ${PENDING_REVIEWS_MAX}); ask again once they ran`

/**
 * How a delivery ended: a replay (seen before), no change (not fixloop's PR, or its report not where the
 * news applies), the moves made, or `deferred`: a review iteration of the report is running, so the news
 * (merged, closed; a reopen cancels a held close) is held and applied when the run ends.
 */
export type Received = { outcome: 'replayed' } | { outcome: 'unchanged' } | { outcome: 'deferred' } | { outcome: 'moved'; moved: string[] }

/** A delivery id is remembered this long (hosts redeliver within hours; a replay later than this is refused by its signature's age on no host, so the window is generous). */
export const GIT_DELIVERY_RETENTION_MS = 30 * 24 * 3600_000

/**
 * What a delivery is remembered by (git_host_deliveries, per App): one key, or several. The delivery id
 * is an unsigned header, so a captured delivery replayed under a new id carries the same signed body: a
 * webhook delivery is remembered by its id AND its body's hash (`deliveryKeys`), and a delivery any of
 * whose keys was seen within GIT_DELIVERY_RETENTION_MS is a replay (docs/security.md "Replays").
 */
export type DeliveryKeys = string | readonly string[]

/** The distinct keys of `k`, in order. */
export const keyList = (k: DeliveryKeys): string[] => [...new Set(typeof k === 'string' ? [k] : k)]

/** A webhook delivery's keys: the host's id and the sha-256 of its raw body (the same key when the host sent no id). */
export const deliveryKeys = (id: string, raw: Uint8Array): string[] => keyList([id, deliveryIdOr(null, raw)])

export interface GitHooksRepo {
  /** The lead report of the App whose pull/merge request is `prUrl` (opened by one of its agent runs), or undefined. */
  reportOfPr(appId: string, prUrl: string): Promise<PrReport | undefined>
  /**
   * Records the delivery (`replayed` when the App saw one of its keys before: nothing else happens) and applies
   * `change` to `report` when given, in one transaction; forgets the App's deliveries older than the
   * retention. merged: the lead pr_opened → resolved, then each duplicate that can follow its lead
   * (core/fsm.ts canFollowLead), with `feedback.resolved` for each report resolved; closed: pr_opened →
   * awaiting_manual (the URL kept; the close remembered in closed_pull_requests for polling, forgotten by
   * a reopen or a merge, and after CLOSED_PR_POLL_MS); reopened: awaiting_manual → pr_opened. A lead in
   * `agent_running` on this request (a review iteration runs) gets the news held in deferred_pr_changes
   * (`deferred`), applied with these same moves in the transaction that ends the run (the agent-runs repo).
   * Any other report not in the status the change applies to is left alone (`unchanged`).
   */
  receive(appId: string, delivery: DeliveryKeys, apply: { report: PrReport; change: PrChange } | null): Promise<Received>
  /**
   * A review asking for changes, queued for a review iteration (docs/agents.md "Review iteration"): records
   * the delivery (`replayed` when seen before: nothing else happens), stores the review (already sanitized
   * and bounded by the caller) in pending_reviews and queues a `review` job for the report, in one
   * transaction; `position` is how many reviews of this pull request now wait (this one included).
   * `review_refused` (only the delivery recorded) when PENDING_REVIEWS_MAX already wait.
   */
  queueReview(appId: string, delivery: DeliveryKeys, review: QueuedReview): Promise<{ outcome: 'replayed' } | { outcome: 'review_queued'; position: number } | { outcome: 'review_refused'; reason: string }>
  /**
   * Polling: up to `limit` lead reports in `pr_opened` with the pull/merge request their run opened, the
   * runs after `afterRunId` in run order (a cursor: '' from the start), each with that run's id.
   */
  openPullRequests(afterRunId: string, limit: number): Promise<{ runId: string; report: PrReport }[]>
  /**
   * Polling: up to `limit` lead reports in `awaiting_manual` whose pull/merge request was closed without
   * merge at or after `closedSince` (closed_pull_requests, the URL still theirs), after `afterFeedbackId`
   * in id order (a cursor: '' from the start), so a reopen is seen without webhooks.
   */
  closedPullRequests(afterFeedbackId: string, closedSince: number, limit: number): Promise<PrReport[]>
}

/** The status a change applies to, and where it moves the lead. */
export const CHANGE_MOVES: Record<PrChange, { from: FeedbackStatus; to: FeedbackStatus }> = {
  merged: { from: 'pr_opened', to: 'resolved' },
  closed: { from: 'pr_opened', to: 'awaiting_manual' },
  reopened: { from: 'awaiting_manual', to: 'pr_opened' },
}

/** A duplicate's columns the follow-up needs. */
export interface DuplicateRow {
  id: string
  status: FeedbackStatus
  submitted_mode: string
  external_user_id: string | null
}

/** A lead just moved to `resolved`: its id, scope and the pull/merge request its events name (null: none). */
export interface ResolvedLead {
  id: string
  orgId: string
  appId: string
  prUrl: string | null
}

/** The submitter's id a `feedback.resolved` event carries: only for a private-mode report (the user token's sub). */
export const resolvedUserId = (r: { submitted_mode: string; external_user_id: string | null }): string | null => (r.submitted_mode === 'private' ? r.external_user_id : null)

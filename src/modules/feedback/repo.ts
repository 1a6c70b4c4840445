/**
 * Feedback storage: the submission (one transaction: the report, its `feedback.received` event and
 * `process` job, the uploads it references and its Idempotency-Key answer), the list page, one report,
 * and the customer's moves. Every read takes the Org in its signature, so another Org's id finds nothing
 * (404).
 *
 * The port: this interface and its pure rules; the SQLite side (src/db/sqlite/feedback.ts: prepared
 * statements, the group committer's synchronous batch) and the PostgreSQL side (src/db/pg/feedback.ts:
 * the PostgreSQL group committer), both held to test/repos/feedback.test.ts.
 */
import type { feedback } from '../../db/schema'
import type { RootState } from '../../dedup/cluster-repo'
import type { CustomerTarget, FeedbackStatus } from '../../core/fsm'
import { LIMITS } from '../../core/limits'
import type { AuditEntry } from '../audit/entry'

export type FeedbackRow = typeof feedback.$inferSelect

/** The columns a list entry needs (spec 2.2), plus `redactions` to tell whether the row is sanitized. */
export type ListRow = Pick<
  FeedbackRow,
  | 'id' | 'appId' | 'status' | 'submittedMode' | 'externalUserId' | 'email' | 'submitterName' | 'severity' | 'text' | 'url'
  | 'createdAt' | 'processedAt' | 'mergeRequestUrl' | 'duplicateOfId' | 'duplicateCount' | 'theme' | 'consolidatedText'
  | 'lastDuplicateAt' | 'redactions' | 'version' | 'suggestedLeadId' | 'suggestedScore' | 'suggestedReason' | 'mergeScore'
  | 'mergeReason' | 'mergeLocked' | 'spamScore' | 'spamReasons' | 'spamMarkedAt'
>

/** A report as submitted: its JSON columns already encoded, no status (a new report is `received`). */
export interface NewFeedback {
  id: string
  orgId: string
  appId: string
  severity: string | null
  text: string
  url: string | null
  userAgent: string | null
  viewport: string | null
  consoleLogs: string | null
  attachments: string | null
  componentTarget: string | null
  metadata: string | null
  submittedMode: 'public' | 'private'
  externalUserId: string | null
  email: string | null
  submitterName: string | null
  userContext: string | null
  /** notifyEmail: the reporter's address sealed with the master key (docs/email.md); null/absent otherwise. */
  notifyEmailSealed?: string | null
  /**
   * Classified as spam at intake (issue 27): stored with its mark in the same INSERT, with no `process`
   * job, and `feedback.received` only when `emitEvent` (the App's spamEvents). Its free-text columns
   * arrive sanitized already (nothing is kept raw, not even spam), `redactions` their counts (JSON).
   */
  spam?: { score: number; reasons: string; emitEvent: boolean; redactions: string } | null
  createdAt: number
}

/** A report to store: its id and time are given inside the write (in commit order). */
export type ReportDraft = Omit<NewFeedback, 'id' | 'createdAt'>

/** A stored Idempotency-Key: what the first request looked like and what it was answered. */
export interface IdempotencyRow {
  requestHash: string
  statusCode: number
  responseBody: string
  createdAt: number
}

/**
 * The submission's Idempotency-Key, scoped (service.ts `scopedIdempotencyKey`) and its body's hash: of the
 * body with its members sorted at every level (what is stored), and, for a key stored by an earlier version
 * within its 24 hours, of the body in the order it was sent (service.ts `requestHashes`).
 */
export interface IdempotencyClaim {
  key: string
  requestHash: string
  /** Absent: compared by `requestHash` alone. */
  orderedHash?: string
}

export interface SubmitResult {
  status: number
  body: { id: string; status: FeedbackStatus }
  replayed: boolean
}

/** What a submission did: stored (or replayed) its answer, or found its key used for another body. */
export type SubmitOutcome = { kind: 'answered'; result: SubmitResult } | { kind: 'key_reused' }

/** What a customer move did; `lost` when another writer moved the report first. */
export type CustomerMoveOutcome = { kind: 'moved' } | { kind: 'not_found' } | { kind: 'duplicate'; leadId: string } | { kind: 'lost' }

/** What "Mark as fixed" changed: the status the lead left and the duplicates that followed it. */
export interface ResolvedByHand {
  appId: string
  from: FeedbackStatus
  followed: string[]
}
export type ResolveOutcome = ({ kind: 'resolved' } & ResolvedByHand) | { kind: 'not_found' } | { kind: 'duplicate'; leadId: string } | { kind: 'lost' }

/** A spam decision by hand (PATCH /v1/feedback/:id { spam }). */
export type SpamChange = { spam: true; score: number; reasons: string } | { spam: false; emitEvent: boolean }

/** What a spam decision did; `changed` carries the reasons the report had (the score learns from them). */
export type SpamChangeOutcome =
  | { kind: 'changed'; appId: string; status: string; reasons: string | null }
  | { kind: 'unchanged'; appId: string; status: string }
  | { kind: 'not_found' }
  | { kind: 'duplicate'; leadId: string }
  | { kind: 'not_allowed'; status: string }

/** Statuses a report may be marked spam in by hand: not yet decided (a lead with no duplicates). */
export const SPAM_MARKABLE = ['received', 'sanitizing', 'sanitized', 'awaiting_manual'] as const

/** The spam decision's verdict on the row as read (pure, both sides). */
export function spamChangeVerdict(
  row: { appId: string; status: string; duplicateOfId: string | null; duplicateCount: number; spamMarkedAt: number | null },
  change: SpamChange,
): SpamChangeOutcome | 'apply' {
  if (row.duplicateOfId) return { kind: 'duplicate', leadId: row.duplicateOfId }
  const isSpam = row.spamMarkedAt !== null
  if (isSpam === change.spam) return { kind: 'unchanged', appId: row.appId, status: row.status }
  if (change.spam && (row.duplicateCount > 0 || !(SPAM_MARKABLE as readonly string[]).includes(row.status))) return { kind: 'not_allowed', status: row.status }
  return 'apply'
}

export interface ListFilter {
  orgId: string
  appId?: string
  status?: string
  cursor?: string
  includeDuplicates: boolean
  /** exclude (default): hide spam; only: the spam folder; include: both. */
  spam?: 'exclude' | 'only' | 'include'
  limit: number
}

/** The list's spam condition, or null for `include`. */
export function spamListCondition(spam: ListFilter['spam']): string | null {
  if (spam === 'include') return null
  return spam === 'only' ? 'spam_marked_at IS NOT NULL' : 'spam_marked_at IS NULL'
}

/**
 * What to do with a seen Idempotency-Key (pure, both sides): a live row with the same body replays its
 * answer, with another body is `key_reused`; none (or an expired one) is a fresh submission.
 */
export function idempotencyVerdict(seen: IdempotencyRow | null | undefined, claim: Pick<IdempotencyClaim, 'requestHash' | 'orderedHash'>, now: number): SubmitOutcome | 'fresh' {
  if (!seen || now - seen.createdAt >= LIMITS.idempotencyTtlMs) return 'fresh'
  if (seen.requestHash !== claim.requestHash && (claim.orderedHash === undefined || seen.requestHash !== claim.orderedHash)) return { kind: 'key_reused' }
  return { kind: 'answered', result: { status: seen.statusCode, body: JSON.parse(seen.responseBody), replayed: true } }
}

/** The answer to a stored submission (and what its Idempotency-Key replays). */
export function createdAnswer(id: string): SubmitResult {
  return { status: 201, body: { id, status: 'received' }, replayed: false }
}

export interface FeedbackRepo {
  /**
   * The submission's business transaction, all or nothing: the Idempotency-Key's verdict (a replay or
   * `key_reused` writes nothing), the report in `received`, its `feedback.received` event and `process`
   * job, `refKeys` uploads marked as the report's, and the key's answer stored. Runs in the intake
   * group commit; resolves only after COMMIT.
   */
  submit(draft: ReportDraft, refKeys: string[], idempotency: IdempotencyClaim | null): Promise<SubmitOutcome>
  get(orgId: string, id: string): Promise<FeedbackRow | undefined>
  /** Newest first; fetches one row past the page to know whether another page exists. */
  list(f: ListFilter): Promise<ListRow[]>
  duplicatesOf(orgId: string, leadId: string, limit: number): Promise<FeedbackRow[]>
  /** The Org of a report, for callers that hold only its id (the operator's CLI). */
  orgOf(id: string): Promise<string | undefined>
  /** Status and lead link of the Org's reports among `ids` (the leads suggestions point at); missing ids are absent. */
  leadStates(orgId: string, ids: string[]): Promise<Map<string, RootState>>
  /** Is the App connected to a repository (can its queued reports get an agent run)? */
  hasRepoConnection(appId: string): Promise<boolean>
  /** When the App's open batch window closes (epoch ms), or null when none is open. */
  batchClosesAt(appId: string): Promise<number | null>
  /**
   * A customer move (spec part 3): reads the report and moves it under one lock (compare-and-set on the
   * version read), so a move right after a submission never loses a race it never saw. Throws ApiError
   * invalid_transition (the lifecycle's FSM) and changes nothing when the move is not allowed.
   */
  customerMove(orgId: string, id: string, to: CustomerTarget): Promise<CustomerMoveOutcome>
  /**
   * "Mark as fixed" (POST /v1/feedback/:id/resolve), under the row's lock: the lead moves to `resolved`
   * through the lifecycle (`by: 'person'`: core/fsm.ts canResolveByHand, else ApiError invalid_transition
   * and nothing changes), then everything a merged pull request brings (src/db/bodies/resolutions.ts: `feedback.resolved`
   * for it and each duplicate that follows it), and the audit row `audit` makes of the change, in one
   * transaction.
   */
  resolveByHand(orgId: string, id: string, audit: (change: ResolvedByHand) => AuditEntry): Promise<ResolveOutcome>
  /**
   * A spam decision by hand, under the row's lock: `spam: true` marks it; `spam: false` clears the mark and,
   * for a report stored as spam and never processed (`received`, no `process` job), starts its normal
   * lifecycle (`feedback.received` when `emitEvent`, and its `process` job) in the same transaction.
   */
  setSpam(orgId: string, id: string, change: SpamChange, now: number): Promise<SpamChangeOutcome>
  /** How many of the App's reports are in the spam folder (bounded: stops at 100,000). */
  spamCount(appId: string): Promise<number>
}


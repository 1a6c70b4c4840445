/**
 * The steps of a cluster change, written once for both storage sides (issue 37: "a pure plan that returns
 * the writes"). Each function here takes what the service has read (the member's row, the ids that move
 * with it, a lookup of lead states) and returns a `ClusterPlan`: the writes to make, in order (which rows
 * change how, which events and decisions are recorded, which summaries are rebuilt), and what the
 * in-memory index and the App's lesson learn from it. Nothing here reads or writes.
 *
 * src/dedup/service.ts (SQLite: synchronous, inside a SQLite transaction or a batch's savepoint) and
 * src/dedup/pg-service.ts (PostgreSQL: every write in one PgTx, rows read `FOR UPDATE`) each read with
 * their own statements and apply the plan with their own: `applyWrites` in each file is the only place
 * that maps a write to a statement.
 */
import type { EventPayloads } from '../lifecycle/event-types'
import type { AuditEntry } from '../modules/audit/entry'
import type { CalibrationSnapshot } from './calibrate'
import type { ClusterRow, LeadSummary, MergeWhy, RootState, StoredDecision } from './cluster-repo'
import { takesDuplicates, type Suggestion } from './clusterer'
import { consolidate, themeOf } from './consolidate'
import type { JoiningDuplicate } from './lead-states'
import { confirmedSuggestion, currentLeadOf, MERGED_BY_HAND } from './suggestions'

/** The Org and App an event or a decision is recorded under. */
export interface Scope {
  orgId: string
  appId: string
}

/**
 * One write of a cluster change. A `summary` rebuilds the lead's count, last time, theme and consolidated
 * text and yields the lead's duplicate count; the `attached` and `unmerged` events that follow carry the
 * count of the latest summary of their lead (`leadFeedbackId`).
 */
export type ClusterWrite =
  /** `id` becomes a duplicate of `leadId` (its own summary and suggestion cleared); `locked`: by hand. */
  | { kind: 'duplicate'; id: string; leadId: string; locked: boolean; why: MergeWhy }
  /** Every duplicate of `from` moves to `to` (duplicates never chain). */
  | { kind: 'moveDuplicates'; from: string; to: string }
  /**
   * The lead's summary after a change. `change`: duplicates just joined it (`added`; `joined`: the one
   * sanitized report that joined, when it is one). A store that keeps lead states in memory may follow
   * them, and in a batch may rebuild the summary once at the batch's end (`added` 0: no count is needed
   * now). Without `change` the summary is rebuilt at once: an event of the plan needs its count.
   */
  | { kind: 'summary'; leadId: string; change?: { added: number; joined?: JoiningDuplicate } }
  | { kind: 'attached'; scope: Scope; data: Omit<EventPayloads['feedback.duplicate_attached'], 'duplicateCount'> }
  /** The report's stored suggestion. */
  | { kind: 'suggestion'; id: string; suggestion: Suggestion }
  | { kind: 'suggested'; scope: Scope; data: EventPayloads['feedback.duplicate_suggested'] }
  /**
   * The report's suggestion is cleared and `leadId` joins its rejected leads. When the row had no
   * suggestion any more, nothing changed and the rest of the plan is not applied.
   */
  | { kind: 'rejectSuggestion'; id: string; leadId: string }
  /** A person's decision about a scored pair, for the App's lesson (learn.ts). */
  | { kind: 'decision'; scope: Scope; decision: StoredDecision }
  /** A duplicate becomes a lead of its own, locked against automatic clustering. */
  | { kind: 'unmerge'; id: string }
  | { kind: 'unmerged'; scope: Scope; data: Omit<EventPayloads['feedback.unmerged'], 'duplicateCount'> }
  /** The report's `process` job, queued in the same commit. */
  | { kind: 'enqueueProcess'; id: string }
  /** The App's calibration, stored with the verdict that changed it. */
  | { kind: 'calibration'; appId: string; snapshot: CalibrationSnapshot }

/** What the in-memory side learns from a plan once it is written: the index's lead links, and whether the App's lesson is stale. */
export interface IndexChange {
  appId: string
  links: [id: string, leadId: string | null][]
  forgetLesson: boolean
}

export interface ClusterPlan {
  writes: ClusterWrite[]
  after: IndexChange | null
}

/** The report a plan is about, as read: its row (null: gone). */
type Member = Pick<ClusterRow, 'id' | 'org_id' | 'app_id' | 'created_at' | 'text' | 'redactions'>

const scopeOf = (r: Pick<ClusterRow, 'org_id' | 'app_id'>): Scope => ({ orgId: r.org_id, appId: r.app_id })

/**
 * The lead's summary from its duplicates: `n` of them (sanitized or not), the newest one's time, and the
 * newest sanitized texts (`window`, newest first). Each distinct text counts once in the consolidated
 * text (a burst repeats one text many times); its header counts every one. `boilerplate`: the App's
 * test for a leading line that is not the lead's summary (its theme then reads the next line).
 */
export function leadSummary(leadText: string, n: number, last: number | null, window: string[], boilerplate?: (line: string) => boolean): LeadSummary {
  return leadSummaryOfDistinct(leadText, n, last, [...new Set(window)], window.length, boilerplate)
}

/** As `leadSummary`, from the window's distinct texts (in the order they first occur, newest first) and how many texts it held. */
export function leadSummaryOfDistinct(leadText: string, n: number, last: number | null, distinct: string[], windowLength: number, boilerplate?: (line: string) => boolean): LeadSummary {
  return { duplicateCount: n, lastDuplicateAt: last, theme: themeOf(leadText, boilerplate), consolidatedText: consolidate(leadText, distinct, windowLength) }
}

/**
 * Makes `dupId` (and the duplicates it had, `movedIds`) duplicates of `leadId`: the rows, the lead's
 * summary, one `feedback.duplicate_attached` per report that moved, and the index's links (`why`: an
 * automatic merge's score and reason, suggestions.ts `whyAutomatic`, or a merge by hand's). `member`:
 * `dupId`'s row as read (attachment changes none of the columns used here); null when it is gone (the
 * updates then find nothing, and nothing is recorded).
 */
export function attachPlan(dupId: string, leadId: string, manual: boolean, why: MergeWhy, member: Member | null, movedIds: string[]): ClusterPlan {
  const writes: ClusterWrite[] = [{ kind: 'duplicate', id: dupId, leadId, locked: manual, why }]
  if (movedIds.length > 0) writes.push({ kind: 'moveDuplicates', from: dupId, to: leadId })
  const joined = member && movedIds.length === 0 && member.redactions !== null ? member : undefined
  writes.push({ kind: 'summary', leadId, change: { added: 1 + movedIds.length, joined } })
  if (!member) return { writes, after: null }
  const moved = [dupId, ...movedIds]
  for (const feedbackId of moved) {
    writes.push({ kind: 'attached', scope: scopeOf(member), data: { feedbackId, leadFeedbackId: leadId, manual, automatic: !manual, score: why.score } })
  }
  return { writes, after: { appId: member.app_id, links: moved.map((id) => [id, leadId]), forgetLesson: false } }
}

/**
 * True when a planned automatic merge of `self` into its lead may be written: the report is still no
 * duplicate and not locked by a person, and the lead (as read now) still takes duplicates.
 */
export function mayAttach(self: Pick<ClusterRow, 'duplicate_of_id' | 'merge_locked'>, lead: RootState | null): boolean {
  return !self.duplicate_of_id && !self.merge_locked && takesDuplicates(lead)
}

/**
 * A report that stays a lead: its summary (in a batch, at the batch's end), and its suggestion with
 * `feedback.duplicate_suggested` when the verdict has one and the report is (still) no duplicate.
 */
export function stayLeadPlan(id: string, self: (Pick<ClusterRow, 'org_id' | 'app_id'> & { duplicate_of_id?: string | null }) | null, suggestion: Suggestion | null | undefined): ClusterPlan {
  const writes: ClusterWrite[] = [{ kind: 'summary', leadId: id, change: { added: 0 } }]
  if (suggestion && self && !self.duplicate_of_id) {
    writes.push({ kind: 'suggestion', id, suggestion })
    writes.push({ kind: 'suggested', scope: scopeOf(self), data: { feedbackId: id, leadFeedbackId: suggestion.leadId, score: suggestion.score } })
  }
  return { writes, after: null }
}

/** The calibrations verdicts just changed, as writes (stored in the verdict's transaction: what every reader shows). */
export function calibrationWrites(changed: Iterable<[string, CalibrationSnapshot]>): ClusterWrite[] {
  const writes: ClusterWrite[] = []
  for (const [appId, snapshot] of changed) writes.push({ kind: 'calibration', appId, snapshot })
  return writes
}

/** Statuses a report may be merged from by hand (a resolved or running report stays a lead). */
export const MERGEABLE_STATUSES: ReadonlySet<string> = new Set(['sanitized', 'awaiting_manual', 'queued', 'failed', 'archived'])

/**
 * Why a merge by hand may not be written after all, judged on the two reports as read inside the merge's
 * own transaction: triage by hand checks them before (modules/feedback/triage-service.ts), but another
 * request can change them in between (found by racing requests against the API). Two merges in opposite
 * directions (a into b, b into a) both passed, and the second moved the first's duplicate into itself: a
 * report whose duplicateOfId was its own id. A report marked fixed meanwhile became a resolved duplicate
 * of an open lead. `duplicateOf`: the lead is now a duplicate (of that report); `status`: the report's
 * status allows no merge any more; `gone`: either was deleted.
 */
export type MergeRefusal = { kind: 'duplicateOf'; leadFeedbackId: string } | { kind: 'status'; from: string } | { kind: 'gone' }

/** The refusal of a merge of `member` into `lead` (their fresh, locked states), or null when it may be written. */
export function mergeRefusal(member: Pick<RootState, 'status'> | null, lead: RootState | null): MergeRefusal | null {
  if (!member || !lead) return { kind: 'gone' }
  if (lead.duplicate_of_id) return { kind: 'duplicateOf', leadFeedbackId: lead.duplicate_of_id }
  if (!MERGEABLE_STATUSES.has(member.status)) return { kind: 'status', from: member.status }
  return null
}

/**
 * A merge by hand: `id` (and its duplicates) become duplicates of `leadId`, locked against automatic
 * clustering. When it confirms the report's suggestion (as served: followed to its current lead, looked
 * up with `roots`), the decision is recorded and the App's lesson goes stale. The former lead, if any,
 * gets its summary again.
 */
export function mergePlan(id: string, leadId: string, member: ClusterRow | null, movedIds: string[], roots: (id: string) => RootState | null): ClusterPlan {
  const confirmed = member ? confirmedSuggestion(member, leadId, roots) : null
  const plan = attachPlan(id, leadId, true, confirmed ? { score: confirmed.score, reason: 'confirmed suggestion' } : MERGED_BY_HAND, member, movedIds)
  const formerLead = member?.duplicate_of_id
  if (formerLead && formerLead !== leadId) plan.writes.push({ kind: 'summary', leadId: formerLead })
  if (member && confirmed) {
    plan.writes.push({ kind: 'decision', scope: scopeOf(member), decision: { feedbackId: id, leadId, kind: 'confirmed', score: confirmed.score } })
    plan.after!.forgetLesson = true
  }
  return plan
}

/**
 * Rejects the report's suggestion: its lead as served (followed with `roots`) is never suggested for this
 * report again, and the decision is recorded. Null when the report has no scored suggestion (nothing changes).
 */
export function rejectPlan(member: ClusterRow | null, roots: (id: string) => RootState | null): ClusterPlan | null {
  if (!member || !member.suggested_lead_id || member.suggested_score === null) return null
  const leadId = currentLeadOf(member.suggested_lead_id, roots) ?? member.suggested_lead_id
  return {
    writes: [
      { kind: 'rejectSuggestion', id: member.id, leadId },
      { kind: 'decision', scope: scopeOf(member), decision: { feedbackId: member.id, leadId, kind: 'rejected', score: member.suggested_score } },
    ],
    after: { appId: member.app_id, links: [], forgetLesson: true },
  }
}

/**
 * Makes a duplicate a lead of its own again (and keeps it so): an automatic merge undone is a decision
 * (the App's bars rise above its score: learn.ts); both leads get their summaries, and
 * `feedback.unmerged` carries the former lead's count. `requeue`: the report's `process` job is queued
 * in the same commit (triage by hand: an unmerged report is never left without the job that moves it
 * on as a lead). No writes when the report is no duplicate and nothing is queued.
 */
export function unmergePlan(id: string, member: ClusterRow | null, requeue: boolean): ClusterPlan {
  const writes: ClusterWrite[] = []
  const formerLeadId = member?.duplicate_of_id
  let after: IndexChange | null = null
  if (member && formerLeadId) {
    const scope = scopeOf(member)
    if (!member.merge_locked && member.merge_score !== null) {
      writes.push({ kind: 'decision', scope, decision: { feedbackId: id, leadId: formerLeadId, kind: 'unmerged', score: member.merge_score } })
    }
    writes.push({ kind: 'unmerge', id }, { kind: 'summary', leadId: formerLeadId }, { kind: 'summary', leadId: id })
    writes.push({ kind: 'unmerged', scope, data: { feedbackId: id, leadFeedbackId: formerLeadId } })
    after = { appId: member.app_id, links: [[id, null]], forgetLesson: true }
  }
  if (requeue) writes.push({ kind: 'enqueueProcess', id })
  return { writes, after }
}

/**
 * A `feedback.duplicate_attached` event's payload with its lead's count, keys in the order it has always
 * been written (events are stored and delivered as JSON text: a reordering would change every payload).
 */
export function attachedPayload(d: Extract<ClusterWrite, { kind: 'attached' }>['data'], duplicateCount: number): EventPayloads['feedback.duplicate_attached'] {
  return { feedbackId: d.feedbackId, leadFeedbackId: d.leadFeedbackId, duplicateCount, manual: d.manual, automatic: d.automatic, score: d.score }
}

/** A `feedback.unmerged` event's payload with the former lead's count (keys in their usual order, as above). */
export function unmergedPayload(d: Extract<ClusterWrite, { kind: 'unmerged' }>['data'], duplicateCount: number): EventPayloads['feedback.unmerged'] {
  return { feedbackId: d.feedbackId, leadFeedbackId: d.leadFeedbackId, duplicateCount }
}

/** The audit entry of a reset of what an App's bars learned: `audit` with the counts of the decisions removed. */
export function resetAudit<K extends string>(audit: AuditEntry, removed: Record<K, number>): AuditEntry {
  return { ...audit, data: { ...audit.data, removed } }
}

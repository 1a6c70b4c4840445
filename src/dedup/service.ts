/**
 * Near-duplicate clustering: attaches each sanitized report to the open lead it duplicates (same App
 * only, never chaining through duplicates), keeps the lead's count, timestamps, theme and consolidated
 * text, and serves triage by hand (similar, merge, unmerge).
 *
 * Which leads attract duplicates: every lead past sanitizing except archived ones — including `queued`,
 * `agent_running`, `pr_opened` and `failed`, because a fresh report of a bug whose fix is under way (or
 * failed) is the same task, and shows its mergeRequestUrl. An archived lead was dismissed on purpose:
 * a new report of that bug starts a new lead, so it surfaces again instead of disappearing.
 *
 * Every attachment and unmerge is recorded in the event outbox in the same transaction. Tenant checks and
 * the rules of triage by hand (which reports may be merged) live in modules/feedback/triage-service.ts.
 */
import type { Clock } from '../core/clock'
import type { SqliteStore } from '../db/sqlite/store'
import { createSqliteClusterRepo } from '../db/sqlite/dedup'
import type { ClusterRow as Row, MergeWhy } from './cluster-repo'
import { featuresOf } from './features'
import { DEFAULT_THRESHOLDS, type Thresholds } from './decide'
import { consolidate, themeOf } from './consolidate'
import { LeadStates, type JoiningDuplicate } from './lead-states'
import { createClusterer, takesDuplicates, MAX_INDEXED_PER_APP, toInput, type Suggestion, type Verdict } from './clusterer'
import { decisionCounts, LEARNING, type DecisionKind } from './learn'
import { sqliteAuditWriter } from '../db/sqlite/audit-writer'
import type { AuditEntry } from '../modules/audit/entry'
import { confirmedSuggestion, currentLeadOf, MERGED_BY_HAND, triageStateOf, whyAutomatic } from './suggestions'

export { ATTACHABLE_LEAD_STATUSES, MAX_INDEXED_PER_APP, type Sanitized, type SimilarEntry } from './clusterer'

/**
 * The SQLite clustering service: synchronous, so the processing step writes a report's clustering in its
 * own SQLite transaction, and a batch many reports' in one (with a savepoint each). `lifecycle` records
 * the events; a bench or a tool may leave it out (events are then still written).
 */
export function createClusterService(store: SqliteStore, clock: Clock, baseThresholds: Thresholds = DEFAULT_THRESHOLDS) {
  const { storage } = store
  const repo = createSqliteClusterRepo(storage.sqlite, store.sides.lifecycle)
  const writeAudit = sqliteAuditWriter(storage.sqlite, clock)
  /** The calibrations the verdicts just made changed, stored in the verdict's transaction (what every reader shows). */
  const storeCalibrations = (): void => {
    for (const [appId, s] of core.takeCalibrations()) repo.saveCalibration(appId, s, clock.now())
  }
  const core = createClusterer({ ...repo, decisions: (appId) => repo.decisions(appId, LEARNING.window) }, baseThresholds)
  const { indexFor, row, remember } = core
  /** What each lead's summary is built from, kept between batches (lead-states.ts). */
  const leads = new LeadStates()

  /**
   * While a batch runs (`batch`): the leads whose summary waits for the batch's end, each touched
   * lead's duplicate count so far (counted once, then kept up to date by each attachment), the leads
   * whose in-memory state the database confirmed in this batch, and the reports the current item indexed.
   */
  let pending: { dirty: Set<string>; counts: Map<string, number>; trusted: Set<string>; indexed: { appId: string; id: string }[] } | null = null

  /** Builds a lead's summary from the database, and keeps what it was built from (lead-states.ts). */
  function summaryFromDb(leadId: string): { n: number; last: number | null; window: string[] } {
    const stats = repo.duplicateStats(leadId)
    const { ids, texts: window } = repo.duplicateTexts(leadId)
    // A state is kept only when every duplicate is sanitized: a raw one (merged before 0006) would enter
    // the window when the worker scrubs it, which no attachment here would tell.
    if (ids.length === stats.n || (ids.length < stats.n && ids.length === 200 && !repo.hasRawDuplicate(leadId))) {
      leads.set(leadId, { n: stats.n, last: stats.last, maxId: stats.maxId, ids, texts: window })
    } else leads.delete(leadId)
    return { n: stats.n, last: stats.last, window }
  }

  /** Recomputes a lead's count, last duplicate time, theme and consolidated text from its duplicates; returns the count. */
  function refreshLead(leadId: string): number {
    const lead = row(leadId)
    if (!lead) return 0
    // In a batch, a state the database confirmed (leadChanged) is the lead's duplicates as they are now.
    const state = pending?.trusted.has(leadId) ? leads.get(leadId) : undefined
    // Never a summary of raw text: a report not sanitized yet (or rolled back to before it was, when its
    // part of a batch failed) has none.
    if (lead.redactions === null) return state ? state.n : repo.duplicateStats(leadId).n
    const { n, last, window } = state ? { n: state.n, last: state.last, window: state.texts } : summaryFromDb(leadId)
    // Each distinct text once (a burst repeats one text many times); the header counts every one.
    const distinct = [...new Set(window)]
    repo.saveLead(leadId, { duplicateCount: n, lastDuplicateAt: last, theme: themeOf(lead.text), consolidatedText: consolidate(lead.text, distinct, window.length) }, clock.now())
    return n
  }

  /**
   * The lead's summary after a change: at once, or (in a batch) once at the batch's end; returns the
   * lead's duplicate count now. `added` duplicates just joined it (the batch keeps its count from that);
   * `joined` is the one duplicate that joined, when it is one sanitized report (a state can follow that).
   */
  function leadChanged(leadId: string, added: number, joined?: JoiningDuplicate): number {
    if (!pending) return refreshLead(leadId)
    pending.dirty.add(leadId)
    // A new lead: its count is not needed now (nothing is recorded), only its summary at the end.
    if (added === 0) return 0
    const known = pending.counts.get(leadId)
    let count: number
    if (known === undefined) {
      const stats = repo.duplicateStats(leadId)
      count = stats.n
      if (joined && leads.confirm(leadId, joined, stats)) pending.trusted.add(leadId)
    } else {
      count = known + added
      if (joined && pending.trusted.has(leadId)) leads.add(leadId, joined)
      else {
        pending.trusted.delete(leadId)
        leads.delete(leadId)
      }
    }
    pending.counts.set(leadId, count)
    return count
  }

  /**
   * Makes `dupId` (and the duplicates it had) duplicates of `leadId`; records each attachment. Call inside
   * a transaction. `known`: the report's row when the caller has just read it (attachment changes none
   * of the columns used here).
   */
  function attach(dupId: string, leadId: string, manual: boolean, why: MergeWhy, known?: Row): void {
    const now = clock.now()
    const movedIds = repo.duplicateIds(dupId)
    repo.setDuplicate(dupId, leadId, manual, why, now)
    // Never chain: the duplicates of the merged item move to the new lead too.
    if (movedIds.length > 0) repo.moveDuplicates(dupId, leadId, now)
    // It is no lead any more: what its summary was built from goes.
    leads.delete(dupId)
    const r = known ?? row(dupId)
    const joined = r && movedIds.length === 0 && r.redactions !== null ? r : undefined
    const duplicateCount = leadChanged(leadId, 1 + movedIds.length, joined)
    if (!r) return
    for (const feedbackId of [dupId, ...movedIds]) {
      repo.recordAttached({ orgId: r.org_id, appId: r.app_id }, { feedbackId, leadFeedbackId: leadId, duplicateCount, manual, automatic: !manual, score: why.score })
    }
    const index = indexFor(r.app_id)
    index.setLead(dupId, leadId)
    for (const id of movedIds) index.setLead(id, leadId)
  }

  /** A lead verdict's writes (call inside a transaction): its summary, and the suggestion with its event when there is one. */
  function stayLead(id: string, r: Pick<Row, 'org_id' | 'app_id'> | null, suggestion: Suggestion | null | undefined): void {
    leadChanged(id, 0)
    if (!suggestion || !r) return
    repo.setSuggestion(id, suggestion, clock.now())
    repo.recordSuggested({ orgId: r.org_id, appId: r.app_id }, { feedbackId: id, leadFeedbackId: suggestion.leadId, score: suggestion.score })
  }

  /** Runs a transaction of triage by hand; when it fails (rolled back), the leads' states are dropped. */
  function undoneClears(fn: () => void): void {
    try {
      fn()
    } catch (e) {
      leads.clear()
      throw e
    }
  }

  return {
    /** Builds the App's index without blocking; await it before `clusterReport` or `similar`. */
    prepare: (appId: string): Promise<void> => core.prepare(appId, () => repo.iterateApp(appId, MAX_INDEXED_PER_APP)),

    /**
     * Clusters one sanitized report: attaches it to the best open lead of its App when the decision
     * rules allow, and indexes it. Idempotent: a report already clustered is only (re)indexed.
     * Returns the lead it now duplicates, or null when it is a lead itself.
     */
    clusterReport(id: string): { leadId: string | null; reason: string } {
      const r = row(id)
      if (!r) return { leadId: null, reason: 'gone' }
      remember(r)
      const index = indexFor(r.app_id)
      const f = featuresOf(toInput(r))
      if (r.duplicate_of_id) {
        index.add(f, r.duplicate_of_id)
        pending?.indexed.push({ appId: r.app_id, id })
        return { leadId: r.duplicate_of_id, reason: 'already a duplicate' }
      }
      const verdict = core.verdictFor(r, f)
      repo.transaction(() => {
        if (verdict.leadId) attach(id, verdict.leadId, false, whyAutomatic(verdict), r)
        else stayLead(id, r, verdict.suggestion)
        storeCalibrations()
      })
      index.add(f, verdict.leadId)
      pending?.indexed.push({ appId: r.app_id, id })
      return verdict
    },

    /** Runs `fn` (a batch that plans with `plan`, then writes with `applyPlan`) with the planned links visible to every ranking. */
    withPlans: core.withPlans,

    /**
     * The first half of `clusterReport`, for a batch, without the write lock: the verdict for a report
     * that is not a duplicate (`sanitized`: its sanitized columns when they are not stored yet), indexed at
     * once so the batch's later reports rank against it. Nothing is written: `applyPlan` does that, in order.
     */
    plan: core.plan,

    /**
     * The second half, inside the batch's transaction: writes the planned verdict when its lead can still
     * take the report; otherwise (the lead was archived or merged meanwhile) clusters the report again now.
     */
    applyPlan(id: string, appId: string, verdict: Verdict): Verdict {
      // The row as planned: the caller has checked it is still at that version (its sanitized columns stored now).
      const plannedRow = core.takePlan(id)
      // Indexed in the first half: a failure of this report's part rolls the index back too (batchItem).
      pending?.indexed.push({ appId, id })
      if (!verdict.leadId) {
        // The row is read only when there is a suggestion to write (its Org scopes the event).
        repo.transaction(() => {
          stayLead(id, verdict.suggestion ? (plannedRow ?? row(id)) : null, verdict.suggestion)
          storeCalibrations()
        })
        return verdict
      }
      const self = plannedRow ?? row(id)
      const lead = repo.rootState(verdict.leadId)
      if (self && !self.duplicate_of_id && !self.merge_locked && takesDuplicates(lead)) {
        const leadId = verdict.leadId
        repo.transaction(() => {
          attach(id, leadId, false, whyAutomatic(verdict), self)
          storeCalibrations()
        })
        return verdict
      }
      if (self) indexFor(self.app_id).remove(id)
      return this.clusterReport(id)
    },

    /** A planned report that will not be written as planned (its row changed): out of the index and the plans. */
    dropPlan: core.dropPlan,

    /** Other reports of the same App as `id`, best first. */
    similar: core.similar,

    /**
     * Runs `fn` (many `clusterReport` calls, inside the caller's transaction) with each touched lead's
     * summary (count, last time, theme, consolidated text) rebuilt once at the end instead of after every
     * attachment; each `feedback.duplicate_attached` event still carries the lead's count at that moment.
     * The summaries are written before `batch` returns, in the same transaction.
     */
    batch<T>(fn: () => T): T {
      if (pending) return fn()
      pending = { dirty: new Set(), counts: new Map(), trusted: new Set(), indexed: [] }
      try {
        const out = fn()
        for (const leadId of pending.dirty) refreshLead(leadId)
        return out
      } catch (e) {
        // The caller's transaction rolls back: the states may have followed changes that are undone.
        leads.clear()
        throw e
      } finally {
        pending = null
      }
    },

    /**
     * One report's part of a batch, in its own savepoint: when `fn` throws (and the savepoint rolls back),
     * the counts the batch kept and the leads' states are dropped, to be counted again from the database,
     * and the reports the item indexed leave the index (their rows are back to before; a retry adds them).
     */
    batchItem<T>(fn: () => T): T {
      if (pending) pending.indexed.length = 0
      try {
        return fn()
      } catch (e) {
        if (pending) {
          pending.counts.clear()
          pending.trusted.clear()
          for (const { appId, id } of pending.indexed) core.unindex(appId, id)
          pending.indexed.length = 0
        }
        leads.clear()
        throw e
      }
    },

    /** Makes `id` (and its duplicates) duplicates of `leadId`, locked against automatic clustering. */
    merge(id: string, leadId: string): void {
      let learned: string | null = null
      // IMMEDIATE: these transactions read before they write (see lifecycle.move).
      undoneClears(() =>
        repo.transaction(() => {
          const r = row(id)
          const formerLead = r?.duplicate_of_id
          // The suggested lead (as served: followed to its current lead) confirmed: a decision to learn from.
          const confirmed = r ? confirmedSuggestion(r, leadId, repo.rootState) : null
          attach(id, leadId, true, confirmed ? { score: confirmed.score, reason: 'confirmed suggestion' } : MERGED_BY_HAND, r ?? undefined)
          if (formerLead && formerLead !== leadId) refreshLead(formerLead)
          if (r && confirmed) {
            repo.recordDecision({ orgId: r.org_id, appId: r.app_id }, { feedbackId: id, leadId, kind: 'confirmed', score: confirmed.score }, clock.now())
            learned = r.app_id
          }
        }),
      )
      if (learned) core.forgetLesson(learned)
    },

    /**
     * Rejects the report's suggestion: it is cleared, its lead (as served) is never suggested for this
     * report again, and the decision is stored for the App's lesson. No suggestion: nothing changes.
     */
    rejectSuggestion(id: string): void {
      let learned: string | null = null
      undoneClears(() =>
        repo.transaction(() => {
          const r = row(id)
          if (!r || !r.suggested_lead_id || r.suggested_score === null) return
          const leadId = currentLeadOf(r.suggested_lead_id, repo.rootState) ?? r.suggested_lead_id
          if (!repo.rejectSuggestion(id, leadId, clock.now())) return
          repo.recordDecision({ orgId: r.org_id, appId: r.app_id }, { feedbackId: id, leadId, kind: 'rejected', score: r.suggested_score }, clock.now())
          learned = r.app_id
        }),
      )
      if (learned) core.forgetLesson(learned)
    },

    /**
     * Makes a duplicate a lead of its own again (and keeps it so); records `feedback.unmerged`. `requeue`:
     * its `process` job is queued in the same commit (triage by hand: an unmerged report is never left
     * without the job that moves it on as a lead).
     */
    unmerge(id: string, requeue = false): void {
      const r = row(id)
      const formerLeadId = r?.duplicate_of_id
      if (!formerLeadId && !requeue) return
      undoneClears(() =>
        repo.transaction(() => {
          if (r && formerLeadId) {
            // An automatic merge undone: the App's bars rise above its score (learn.ts).
            if (!r.merge_locked && r.merge_score !== null) {
              repo.recordDecision({ orgId: r.org_id, appId: r.app_id }, { feedbackId: id, leadId: formerLeadId, kind: 'unmerged', score: r.merge_score }, clock.now())
            }
            repo.setUnmerged(id, clock.now())
            const duplicateCount = refreshLead(formerLeadId)
            refreshLead(id)
            repo.recordUnmerged({ orgId: r.org_id, appId: r.app_id }, { feedbackId: id, leadFeedbackId: formerLeadId, duplicateCount })
          }
          if (requeue) repo.enqueueProcess(id)
        }),
      )
      if (r && formerLeadId) {
        indexFor(r.app_id).setLead(id, null)
        core.forgetLesson(r.app_id)
      }
    },

    /** Drops the cached index of an App (tests; after bulk imports). */
    forget(appId?: string): void {
      core.forget(appId)
      leads.clear()
    },

    indexSize: core.indexSize,

    /** The App's merge thresholds right now (calibrated and moved by its lesson; tests and diagnostics). */
    thresholdsFor: core.thresholdsFor,

    /** The App's bars and what its decisions taught (GET /v1/apps/:id/triage). */
    triageState(appId: string, unmergeScore?: number) {
      // The calibration the clustering process stored: every process shows the same bars (API, CLI).
      const stored = repo.calibration(appId)
      return triageStateOf(core.shownThresholds(appId, stored), core.lessonFor(appId), unmergeScore === undefined ? undefined : core.thresholdsIfUnmerged(appId, unmergeScore, stored))
    },

    /** Deletes the App's decisions and writes `audit` with the counts, in one commit; the lesson goes at once. */
    resetLearning(appId: string, audit: AuditEntry | null): Record<DecisionKind, number> {
      const removed = repo.transaction(() => {
        const counts = decisionCounts(repo.clearDecisions(appId))
        if (audit) writeAudit({ ...audit, data: { ...audit.data, removed: counts } })
        return counts
      })
      core.forgetLesson(appId)
      return removed
    },
  }
}
export type ClusterService = ReturnType<typeof createClusterService>

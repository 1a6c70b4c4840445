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
 *
 * The steps of a change (attach, stay a lead, merge, unmerge, reject a suggestion, a lead's summary) are
 * planned once for both storage sides in ./steps.ts; this file reads what a plan needs and applies its
 * writes (`applyWrites`). What stays here, on purpose, and not in src/dedup/pg-service.ts:
 * - the transaction's shape: synchronous (never an await inside), one IMMEDIATE transaction per change,
 *   or a savepoint of the processing engine's batch (`batch`/`batchItem`), where a lead's summary waits
 *   for the batch's end and each touched lead's count is kept from its first attachment on;
 * - the lead states kept between batches (lead-states.ts: what a summary is built from, confirmed by the
 *   database before they are trusted) and their clearing when a transaction rolls back;
 * - the reads: plain (the write lock is held by the transaction), the index learning its links inside
 *   the transaction (a failed batch item takes its reports out again); PostgreSQL reads a snapshot
 *   before its transaction and locks rows in it.
 */
import type { Clock } from '../core/clock'
import type { SyncClusterSides } from './store-sides'
import { DEFAULT_THRESHOLDS, type Thresholds } from './decide'
import { LeadStates, type JoiningDuplicate } from './lead-states'
import { createClusterer, featuresIn, MAX_INDEXED_PER_APP, type Verdict } from './clusterer'
import { decisionCounts, LEARNING, type DecisionKind } from './learn'
import type { AuditEntry } from '../modules/audit/entry'
import { appTriageState, whyAutomatic } from './suggestions'
import { attachedPayload, attachPlan, calibrationWrites, leadSummary, mayAttach, mergePlan, mergeRefusal, rejectPlan, resetAudit, stayLeadPlan, unmergedPayload, unmergePlan, type ClusterPlan, type ClusterWrite, type IndexChange, type MergeRefusal } from './steps'

export { ATTACHABLE_LEAD_STATUSES, MAX_INDEXED_PER_APP, type Sanitized, type SimilarEntry } from './clusterer'

/**
 * The SQLite clustering service: synchronous, so the processing step writes a report's clustering in its
 * own SQLite transaction, and a batch many reports' in one (with a savepoint each). `lifecycle` records
 * the events; a bench or a tool may leave it out (events are then still written).
 */
export function createClusterService(sides: SyncClusterSides, clock: Clock, baseThresholds: Thresholds = DEFAULT_THRESHOLDS) {
  const { dedup: repo, writeAudit } = sides
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
    repo.saveLead(leadId, leadSummary(lead.text, n, last, window, core.boilerplateOf(lead.app_id)), clock.now())
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
   * Applies a plan's writes (steps.ts) in order, in the caller's transaction; false when one found nothing
   * to change and the rest was skipped. A summary with a change goes through `leadChanged` (in a batch: at
   * the batch's end, its count kept from the lead's first attachment); one without, at once.
   */
  function applyWrites(writes: ClusterWrite[]): boolean {
    const now = clock.now()
    const counts = new Map<string, number>()
    for (const w of writes) {
      switch (w.kind) {
        case 'duplicate':
          repo.setDuplicate(w.id, w.leadId, w.locked, w.why, now)
          // It is no lead any more: what its summary was built from goes.
          leads.delete(w.id)
          break
        case 'moveDuplicates':
          repo.moveDuplicates(w.from, w.to, now)
          break
        case 'summary':
          counts.set(w.leadId, w.change ? leadChanged(w.leadId, w.change.added, w.change.joined) : refreshLead(w.leadId))
          break
        case 'attached':
          repo.recordAttached(w.scope, attachedPayload(w.data, counts.get(w.data.leadFeedbackId) ?? 0))
          break
        case 'suggestion':
          repo.setSuggestion(w.id, w.suggestion, now)
          break
        case 'suggested':
          repo.recordSuggested(w.scope, w.data)
          break
        case 'rejectSuggestion':
          if (!repo.rejectSuggestion(w.id, w.leadId, now)) return false
          break
        case 'decision':
          repo.recordDecision(w.scope, w.decision, now)
          break
        case 'unmerge':
          repo.setUnmerged(w.id, now)
          break
        case 'unmerged':
          repo.recordUnmerged(w.scope, unmergedPayload(w.data, counts.get(w.data.leadFeedbackId) ?? 0))
          break
        case 'enqueueProcess':
          repo.enqueueProcess(w.id)
          break
        case 'calibration':
          repo.saveCalibration(w.appId, w.snapshot, now)
          break
      }
    }
    return true
  }

  /** The index's new lead links (learned in the change's transaction: a failed batch item takes its reports out again). */
  function learnLinks(change: IndexChange | null): void {
    if (!change || change.links.length === 0) return
    const index = indexFor(change.appId)
    for (const [id, leadId] of change.links) index.setLead(id, leadId)
  }

  /** A verdict's plan with the calibrations the verdicts changed (call inside a transaction). */
  function writeVerdict(plan: ClusterPlan): void {
    applyWrites(plan.writes)
    applyWrites(calibrationWrites(core.takeCalibrations()))
    learnLinks(plan.after)
  }

  /** Runs a transaction of triage by hand; when it fails (rolled back), the leads' states are dropped. */
  function undoneClears<T>(fn: () => T): T {
    try {
      return fn()
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
      const f = featuresIn(index, r)
      if (r.duplicate_of_id) {
        index.add(f, r.duplicate_of_id, r.text)
        pending?.indexed.push({ appId: r.app_id, id })
        return { leadId: r.duplicate_of_id, reason: 'already a duplicate' }
      }
      const verdict = core.verdictFor(r, f)
      const leadId = verdict.leadId
      repo.transaction(() => writeVerdict(leadId ? attachPlan(id, leadId, false, whyAutomatic(verdict), r, repo.duplicateIds(id)) : stayLeadPlan(id, r, verdict.suggestion)))
      index.add(f, verdict.leadId, r.text)
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
      const leadId = verdict.leadId
      if (!leadId) {
        // The row is read only when there is a suggestion to write (its Org scopes the event).
        repo.transaction(() => writeVerdict(stayLeadPlan(id, verdict.suggestion ? (plannedRow ?? row(id)) : null, verdict.suggestion)))
        return verdict
      }
      const self = plannedRow ?? row(id)
      if (self && mayAttach(self, repo.rootState(leadId))) {
        repo.transaction(() => writeVerdict(attachPlan(id, leadId, false, whyAutomatic(verdict), self, repo.duplicateIds(id))))
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

    /** Makes `id` (and its duplicates) duplicates of `leadId`, locked against automatic clustering (steps.ts `mergePlan`). */
    merge(id: string, leadId: string): MergeRefusal | null {
      // IMMEDIATE: these transactions read before they write (see lifecycle.move).
      const done = undoneClears(() =>
        repo.transaction(() => {
          // The lead as it is now, not as triage by hand read it before: a merge in the other direction may have committed since.
          const member = row(id)
          const refusal = mergeRefusal(member, repo.rootState(leadId))
          if (refusal) return { refusal, after: null }
          const plan = mergePlan(id, leadId, member, repo.duplicateIds(id), repo.rootState)
          applyWrites(plan.writes)
          learnLinks(plan.after)
          return { refusal: null, after: plan.after }
        }),
      )
      if (done.after?.forgetLesson) core.forgetLesson(done.after.appId)
      return done.refusal
    },

    /** Rejects the report's suggestion, never to offer its lead (as served) again; records the decision (steps.ts `rejectPlan`). */
    rejectSuggestion(id: string): void {
      const after = undoneClears(() =>
        repo.transaction(() => {
          const plan = rejectPlan(row(id), repo.rootState)
          return plan && applyWrites(plan.writes) ? plan.after : null
        }),
      )
      if (after?.forgetLesson) core.forgetLesson(after.appId)
    },

    /**
     * Makes a duplicate a lead of its own again (and keeps it so); records `feedback.unmerged`. `requeue`:
     * its `process` job is queued in the same commit (steps.ts `unmergePlan`).
     */
    unmerge(id: string, requeue = false): void {
      const plan = unmergePlan(id, row(id), requeue)
      if (plan.writes.length === 0) return
      undoneClears(() => repo.transaction(() => applyWrites(plan.writes)))
      learnLinks(plan.after)
      if (plan.after?.forgetLesson) core.forgetLesson(plan.after.appId)
    },

    /** Drops the cached index of an App (tests; after bulk imports). */
    forget(appId?: string): void {
      core.forget(appId)
      leads.clear()
    },

    /** Reports removed outside clustering, committed (clusterer.ts `forgetRemoved`): its lead states are counted again too. */
    forgetRemoved(ids: readonly string[]): void {
      if (core.forgetRemoved(ids, true).length > 0) leads.clear()
    },

    indexSize: core.indexSize,

    /** The App's merge thresholds right now (calibrated and moved by its lesson; tests and diagnostics). */
    thresholdsFor: core.thresholdsFor,

    /** The App's bars and what its decisions taught (GET /v1/apps/:id/triage). */
    triageState(appId: string, unmergeScore?: number) {
      return appTriageState(core, appId, repo.calibration(appId), unmergeScore)
    },

    /** Deletes the App's decisions and writes `audit` with the counts, in one commit; the lesson goes at once. */
    resetLearning(appId: string, audit: AuditEntry | null): Record<DecisionKind, number> {
      const removed = repo.transaction(() => {
        const counts = decisionCounts(repo.clearDecisions(appId))
        if (audit) writeAudit(resetAudit(audit, counts))
        return counts
      })
      core.forgetLesson(appId)
      return removed
    },
  }
}
export type ClusterService = ReturnType<typeof createClusterService>

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
import type { Database } from 'bun:sqlite'
import type { Clock } from '../core/clock'
import { createClusterRepo, type CandidateRow, type ClusterRow as Row } from '../db/cluster-repo'
import { createLifecycle, type Lifecycle } from '../lifecycle/lifecycle'
import { AppIndex } from './app-index'
import { featuresOf, type Features, type ReportInput } from './features'
import { blend, combine } from './rerank'
import { calibrate } from './calibrate'
import { decide, DEFAULT_THRESHOLDS, type CandidateView, type Thresholds } from './decide'
import { consolidate, themeOf } from './consolidate'
import { servableText } from '../sanitize/servable'

export const ATTACHABLE_LEAD_STATUSES = new Set(['sanitized', 'awaiting_manual', 'queued', 'agent_running', 'pr_opened', 'failed'])
/**
 * Reports per App held in the similarity index: the newest ones. Duplicates of a bug arrive close
 * together; older reports stay readable and mergeable by hand, they just stop attracting new ones.
 */
export const MAX_INDEXED_PER_APP = 100_000
/** Reports indexed between two yields to the event loop while an index is built. */
const BUILD_SLICE = 250
/** How many of the best word-score candidates get the full (blended) score. */
const RESCORE = 15
/** The newest reports scored when an index is built, to seed the App's threshold calibration. */
const CALIBRATION_SEED = 40

/** A report's sanitized columns before they are stored (a batch plans on them first: `plan`). */
export type Sanitized = Pick<Row, 'text' | 'url' | 'component_target' | 'console_logs'> & { redactions: string }

export interface SimilarEntry {
  id: string
  score: number
  text: string
  duplicateOfId: string | null
}

const toInput = (r: Row): ReportInput => ({
  id: r.id,
  text: r.text,
  url: r.url,
  componentTarget: r.component_target,
  consoleLogs: r.console_logs,
  duplicateOfId: r.duplicate_of_id,
})

/** `lifecycle` records the events; a bench or a tool may leave it out (events are then still written). */
export function createClusterService(sqlite: Database, clock: Clock, baseThresholds: Thresholds = DEFAULT_THRESHOLDS, lifecycle: Lifecycle = createLifecycle(sqlite, clock)) {
  const indexes = new Map<string, AppIndex>()
  const repo = createClusterRepo(sqlite)
  const building = new Map<string, Promise<void>>()

  const row = (id: string): Row | null => repo.get(id)

  /**
   * While a batch runs (`batch`): the leads whose summary waits for the batch's end, and each touched
   * lead's duplicate count so far (counted once, then kept up to date by each attachment).
   */
  let pending: { dirty: Set<string>; counts: Map<string, number> } | null = null

  /**
   * While a batch plans its reports before it writes them (`withPlans`): each planned report's lead (null:
   * a lead of its own). Rows read meanwhile show these links before they are stored, so a later report of
   * the batch never takes a planned duplicate for a lead.
   */
  let planned: Map<string, { leadId: string | null; sanitized: Sanitized | undefined }> | null = null
  /** A row as it will be once the batch's plans are written: its planned lead, its sanitized text and status. */
  function withPlanned<T extends CandidateRow | null>(r: T): T {
    if (!r || !planned) return r
    const plan = planned.get(r.id)
    if (!plan) return r
    const s = plan.sanitized
    return s ? { ...r, duplicate_of_id: plan.leadId, status: 'sanitized', text: s.text, url: s.url, redactions: s.redactions } : { ...r, duplicate_of_id: plan.leadId }
  }

  /**
   * Builds an App's index from its newest `MAX_INDEXED_PER_APP` reports, in slices that yield to the
   * event loop, so a large App never blocks requests (1M stored reports would otherwise stall the
   * process for seconds and hold every report in memory).
   */
  function prepare(appId: string): Promise<void> {
    if (indexes.has(appId)) return Promise.resolve()
    let pending = building.get(appId)
    if (!pending) {
      pending = (async () => {
        const index = new AppIndex()
        let n = 0
        const recent: Row[] = []
        for (const r of repo.iterateApp(appId, MAX_INDEXED_PER_APP)) {
          index.add(featuresOf(toInput(r)), r.duplicate_of_id)
          if (recent.push(r) > CALIBRATION_SEED) recent.shift()
          if (++n % BUILD_SLICE === 0) await new Promise<void>((resolve) => setImmediate(resolve))
        }
        indexes.set(appId, index)
        seedCalibration(appId, recent)
      })().finally(() => building.delete(appId))
      building.set(appId, pending)
    }
    return pending
  }

  /** The App's index; built at once (blocking) if `prepare` was not awaited first. */
  function indexFor(appId: string): AppIndex {
    let index = indexes.get(appId)
    if (!index) {
      index = new AppIndex()
      const rows = repo.allOfApp(appId, MAX_INDEXED_PER_APP)
      for (const r of rows) index.add(featuresOf(toInput(r)), r.duplicate_of_id)
      indexes.set(appId, index)
      seedCalibration(appId, rows.slice(-CALIBRATION_SEED))
    }
    return index
  }

  /**
   * Seeds a freshly built index's calibration with the best scores of the App's newest reports, so a
   * restart does not send every App back to the conservative "no history" thresholds.
   */
  function seedCalibration(appId: string, recent: Row[]): void {
    const index = indexes.get(appId)!
    for (const r of recent) index.history.add(rank(appId, featuresOf(toInput(r)), r.text, RESCORE).find((c) => c.id !== r.id)?.score ?? 0)
  }

  /** Candidates best first, with the blended (word + trigram) score; `excludeIds` are left out. */
  type Ranked = SimilarEntry & { row: CandidateRow; features: CandidateView['features']; triScore: number; charScore: number }

  /** A report's merge signals: from the index when it holds the report, else built from its full row. */
  function featuresFor(id: string, index: AppIndex): CandidateView['features'] | null {
    const doc = index.doc(id)
    if (doc) return doc
    const full = row(id)
    return full ? featuresOf(toInput(full)) : null
  }

  function rank(appId: string, f: Features, text: string, limit: number): Ranked[] {
    const index = indexFor(appId)
    const near = index.nearest(f, Math.max(RESCORE, limit))
    // One statement for the whole shortlist.
    const rows = repo.getCandidates(near.map((c) => c.id))
    const found = near.flatMap((c) => {
      const r = withPlanned(rows.get(c.id) ?? null)
      return r && r.app_id === appId ? [{ r, id: r.id, wordScore: c.wordScore, text: r.text }] : []
    })
    const scores = blend(text, found)
    const out: Ranked[] = found.flatMap(({ r }, i) => {
      const features = featuresFor(r.id, index)
      if (!features) return []
      const { score, triScore, charScore } = scores[i]
      return [{ id: r.id, score: Math.round(score * 1000) / 1000, text: r.text, duplicateOfId: r.duplicate_of_id, row: r, features, triScore, charScore }]
    })
    return out.sort((a, b) => b.score - a.score)
  }

  /** Recomputes a lead's count, last duplicate time, theme and consolidated text from its duplicates; returns the count. */
  function refreshLead(leadId: string): number {
    const lead = row(leadId)
    if (!lead) return 0
    // Never a summary of raw text: a report not sanitized yet (or rolled back to before it was, when its
    // part of a batch failed) has none.
    if (lead.redactions === null) return repo.duplicateStats(leadId).n
    const stats = repo.duplicateStats(leadId)
    const { texts, count } = repo.duplicateTexts(leadId)
    repo.saveLead(leadId, { duplicateCount: stats.n, lastDuplicateAt: stats.last, theme: themeOf(lead.text), consolidatedText: consolidate(lead.text, texts, count) }, clock.now())
    return stats.n
  }

  /**
   * The lead's summary after a change: at once, or (in a batch) once at the batch's end; returns the
   * lead's duplicate count now. `added` duplicates just joined it (the batch keeps its count from that).
   */
  function leadChanged(leadId: string, added: number): number {
    if (!pending) return refreshLead(leadId)
    pending.dirty.add(leadId)
    // A new lead: its count is not needed now (nothing is recorded), only its summary at the end.
    if (added === 0) return 0
    const known = pending.counts.get(leadId)
    const count = known === undefined ? repo.duplicateStats(leadId).n : known + added
    pending.counts.set(leadId, count)
    return count
  }

  /** Makes `dupId` (and the duplicates it had) duplicates of `leadId`; records each attachment. Call inside a transaction. */
  function attach(dupId: string, leadId: string, manual: boolean): void {
    const now = clock.now()
    const movedIds = repo.duplicateIds(dupId)
    repo.setDuplicate(dupId, leadId, manual, now)
    // Never chain: the duplicates of the merged item move to the new lead too.
    if (movedIds.length > 0) repo.moveDuplicates(dupId, leadId, now)
    const duplicateCount = leadChanged(leadId, 1 + movedIds.length)
    const r = row(dupId)
    if (!r) return
    for (const feedbackId of [dupId, ...movedIds]) {
      lifecycle.record({ orgId: r.org_id, appId: r.app_id }, 'feedback.duplicate_attached', { feedbackId, leadFeedbackId: leadId, duplicateCount, manual })
    }
    const index = indexFor(r.app_id)
    index.setLead(dupId, leadId)
    for (const id of movedIds) index.setLead(id, leadId)
  }

  /** Which open lead `r` duplicates, if any (the decision of `clusterReport`; nothing is written). */
  function verdictFor(r: Row, f: Features): { leadId: string | null; reason: string } {
    let verdict: { leadId: string | null; reason: string } = { leadId: null, reason: 'no similar report' }
    if (r.merge_locked) return verdict
    const index = indexFor(r.app_id)
    const seenRoots = new Set<string>()
    const ranked = rank(r.app_id, f, r.text, RESCORE)
    // A lead is often among the candidates itself: its row was just read.
    const candidateRows = new Map(ranked.map((c) => [c.id, c.row]))
    // This App's thresholds, from the best scores its earlier reports reached (calibrate.ts).
    const thresholds = calibrate(baseThresholds, index.history)
    index.history.add(ranked[0]?.score ?? 0)
    for (const c of ranked) {
      const rootId = c.duplicateOfId ?? c.id
      if (seenRoots.has(rootId)) continue
      const root = rootId === c.id ? c.row : (candidateRows.get(rootId) ?? withPlanned(row(rootId)))
      if (!root || !ATTACHABLE_LEAD_STATUSES.has(root.status) || root.duplicate_of_id) continue
      seenRoots.add(rootId)
      // Against a cluster with duplicates, the whole cluster's vocabulary counts too.
      const score = index.clusterSize(rootId) > 1 ? Math.max(c.score, combine(index.clusterScore(f, rootId), c.triScore, c.charScore)) : c.score
      // Vetoes hold against the lead too, not only against the member that matched best.
      const rootFeatures = rootId === c.id ? c.features : featuresFor(rootId, index)
      if (!rootFeatures) continue
      const v = rootId === c.id ? decide(f, c.features, score, thresholds) : decideAgainstLead(f, c.features, rootFeatures, score, thresholds)
      if (v.attach) return { leadId: rootId, reason: v.reason }
      if (verdict.reason === 'no similar report') verdict = { leadId: null, reason: v.reason }
      if (seenRoots.size >= 5) break
    }
    return verdict
  }

  function decideAgainstLead(f: Features, member: CandidateView['features'], lead: CandidateView['features'], score: number, thresholds: Thresholds) {
    const viaMember = decide(f, member, score, thresholds)
    if (!viaMember.attach) return viaMember
    const veto = decide(f, lead, 1, thresholds)
    return veto.attach ? viaMember : veto
  }

  return {
    /** Builds the App's index without blocking; await it before `clusterReport` or `similar`. */
    prepare,

    /**
     * Clusters one sanitized report: attaches it to the best open lead of its App when the decision
     * rules allow, and indexes it. Idempotent: a report already clustered is only (re)indexed.
     * Returns the lead it now duplicates, or null when it is a lead itself.
     */
    clusterReport(id: string): { leadId: string | null; reason: string } {
      const r = row(id)
      if (!r) return { leadId: null, reason: 'gone' }
      const index = indexFor(r.app_id)
      const f = featuresOf(toInput(r))
      if (r.duplicate_of_id) {
        index.add(f, r.duplicate_of_id)
        return { leadId: r.duplicate_of_id, reason: 'already a duplicate' }
      }
      const verdict = verdictFor(r, f)
      sqlite.transaction(() => {
        if (verdict.leadId) attach(id, verdict.leadId, false)
        else leadChanged(id, 0)
      }).immediate()
      index.add(f, verdict.leadId)
      return verdict
    },

    /**
     * Runs `fn` (a batch that plans its reports with `plan`, then writes them with `applyPlan`) with the
     * planned links visible to every ranking in between.
     */
    withPlans<T>(fn: () => T): T {
      if (planned) return fn()
      planned = new Map()
      try {
        return fn()
      } finally {
        planned = null
      }
    },

    /**
     * The first half of `clusterReport`, for a batch, without the write lock: the verdict for a report
     * that is not a duplicate (`sanitized`: its sanitized columns when they are not stored yet), indexed at
     * once so the batch's later reports rank against it. Nothing is written: `applyPlan` does that, in order.
     */
    plan(id: string, sanitized?: Sanitized): { leadId: string | null; reason: string } | null {
      const stored = row(id)
      if (!stored || stored.duplicate_of_id) return null
      const r: Row = sanitized ? { ...stored, ...sanitized, status: 'sanitized' } : stored
      const index = indexFor(r.app_id)
      // A retry of a batch that was handed back: the report may be indexed from its first plan.
      index.remove(id)
      const f = featuresOf(toInput(r))
      const verdict = verdictFor(r, f)
      index.add(f, verdict.leadId)
      planned?.set(id, { leadId: verdict.leadId, sanitized })
      return verdict
    },

    /**
     * The second half, inside the batch's transaction: writes the planned verdict when its lead can still
     * take the report; otherwise (the lead was archived or merged meanwhile) clusters the report again now.
     */
    applyPlan(id: string, verdict: { leadId: string | null; reason: string }): { leadId: string | null; reason: string } {
      planned?.delete(id)
      if (!verdict.leadId) {
        sqlite.transaction(() => leadChanged(id, 0)).immediate()
        return verdict
      }
      const self = row(id)
      const lead = row(verdict.leadId)
      if (self && !self.duplicate_of_id && !self.merge_locked && lead && !lead.duplicate_of_id && ATTACHABLE_LEAD_STATUSES.has(lead.status)) {
        const leadId = verdict.leadId
        sqlite.transaction(() => attach(id, leadId, false)).immediate()
        return verdict
      }
      if (self) indexFor(self.app_id).remove(id)
      return this.clusterReport(id)
    },

    /** A planned report that will not be written as planned (its row changed): out of the index and the plans. */
    dropPlan(id: string, appId: string): void {
      planned?.delete(id)
      indexFor(appId).remove(id)
    },

    /** Other reports of the same App as `id`, best first. */
    similar(id: string, limit: number): SimilarEntry[] {
      const r = row(id)
      if (!r) return []
      return rank(r.app_id, featuresOf(toInput(r)), r.text, limit)
        .filter((c) => c.id !== id)
        .slice(0, limit)
        .map(({ id, score, text, duplicateOfId, row }) => ({ id, score, text: servableText(text, row), duplicateOfId }))
    },

    /**
     * Runs `fn` (many `clusterReport` calls, inside the caller's transaction) with each touched lead's
     * summary (count, last time, theme, consolidated text) rebuilt once at the end instead of after every
     * attachment; each `feedback.duplicate_attached` event still carries the lead's count at that moment.
     * The summaries are written before `batch` returns, in the same transaction.
     */
    batch<T>(fn: () => T): T {
      if (pending) return fn()
      pending = { dirty: new Set(), counts: new Map() }
      try {
        const out = fn()
        for (const leadId of pending.dirty) refreshLead(leadId)
        return out
      } finally {
        pending = null
      }
    },

    /**
     * One report's part of a batch, in its own savepoint: when `fn` throws (and the savepoint rolls back),
     * the counts the batch kept are dropped, to be counted again from the database.
     */
    batchItem<T>(fn: () => T): T {
      try {
        return fn()
      } catch (e) {
        pending?.counts.clear()
        throw e
      }
    },

    /** Makes `id` (and its duplicates) duplicates of `leadId`, locked against automatic clustering. */
    merge(id: string, leadId: string): void {
      const formerLead = row(id)?.duplicate_of_id
      // IMMEDIATE: these transactions read before they write (see lifecycle.move).
      sqlite.transaction(() => {
        attach(id, leadId, true)
        if (formerLead && formerLead !== leadId) refreshLead(formerLead)
      }).immediate()
    },

    /** Makes a duplicate a lead of its own again (and keeps it so); records `feedback.unmerged`. */
    unmerge(id: string): void {
      const r = row(id)
      if (!r?.duplicate_of_id) return
      const formerLeadId = r.duplicate_of_id
      sqlite.transaction(() => {
        repo.setUnmerged(id, clock.now())
        const duplicateCount = refreshLead(formerLeadId)
        refreshLead(id)
        lifecycle.record({ orgId: r.org_id, appId: r.app_id }, 'feedback.unmerged', { feedbackId: id, leadFeedbackId: formerLeadId, duplicateCount })
      }).immediate()
      indexFor(r.app_id).setLead(id, null)
    },

    /** Drops the cached index of an App (tests; after bulk imports). */
    forget(appId?: string): void {
      if (appId) indexes.delete(appId)
      else indexes.clear()
    },

    indexSize: (appId: string): number => indexFor(appId).size,

    /** The App's calibrated merge thresholds right now (calibrate.ts; tests and diagnostics). */
    thresholdsFor: (appId: string): Thresholds => calibrate(baseThresholds, indexFor(appId).history),
  }
}
export type ClusterService = ReturnType<typeof createClusterService>

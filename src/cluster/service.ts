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
import { createClusterRepo, type CandidateRow, type ClusterRow as Row, type RootState } from '../db/cluster-repo'
import { createLifecycle, type Lifecycle } from '../lifecycle/lifecycle'
import { AppIndex } from './app-index'
import { featuresOf, type Features, type ReportInput } from './features'
import { blend, combine } from './rerank'
import { calibrate } from './calibrate'
import { decide, decideOnScore, DEFAULT_THRESHOLDS, strongEnough, veto, type CandidateView, type Thresholds } from './decide'
import { consolidate, themeOf } from './consolidate'
import { servableText } from '../sanitize/servable'
import { TextCache } from './text-cache'
import { LeadStates, type JoiningDuplicate } from './lead-states'
import { sqliteStorage } from '../db/sqlite/storage'

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
export function createClusterService(sqlite: Database, clock: Clock, baseThresholds: Thresholds = DEFAULT_THRESHOLDS, lifecycle: Lifecycle = createLifecycle(sqliteStorage(sqlite), clock)) {
  const indexes = new Map<string, AppIndex>()
  const repo = createClusterRepo(sqlite)
  const building = new Map<string, Promise<void>>()

  const row = (id: string): Row | null => repo.get(id)
  /** Sanitized reports' texts, for ranking without reading the candidates' rows (text-cache.ts). */
  const texts = new TextCache()
  /** What each lead's summary is built from, kept between batches (lead-states.ts). */
  const leads = new LeadStates()

  /** Keeps a row's text for ranking, once it is sanitized (a raw text is never cached). */
  const remember = (r: { id: string; text: string; redactions: string | null }): void => {
    if (r.redactions !== null) texts.set(r.id, r.text)
  }

  /**
   * While a batch runs (`batch`): the leads whose summary waits for the batch's end, each touched
   * lead's duplicate count so far (counted once, then kept up to date by each attachment), the leads
   * whose in-memory state the database confirmed in this batch, and the reports the current item indexed.
   */
  let pending: { dirty: Set<string>; counts: Map<string, number>; trusted: Set<string>; indexed: { appId: string; id: string }[] } | null = null

  /**
   * While a batch plans its reports before it writes them (`withPlans`): each planned report's lead (null:
   * a lead of its own). Rows read meanwhile show these links before they are stored, so a later report of
   * the batch never takes a planned duplicate for a lead.
   */
  let planned: Map<string, { leadId: string | null; sanitized: Sanitized | undefined; row: Row }> | null = null

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
          remember(r)
          if (recent.push(r) > CALIBRATION_SEED) recent.shift()
          if (++n % BUILD_SLICE === 0) await new Promise<void>((resolve) => setImmediate(resolve))
        }
        // A blocking build (indexFor) may have finished first: keep that one, which later changes went to.
        if (indexes.has(appId)) return
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
      for (const r of rows) {
        index.add(featuresOf(toInput(r)), r.duplicate_of_id)
        remember(r)
      }
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
    for (const r of recent) index.history.add(rank(appId, featuresOf(toInput(r)), r.text, RESCORE, true).find((c) => c.id !== r.id)?.score ?? 0)
  }

  /** Candidates best first, with the blended (word + trigram) score. */
  type Ranked = SimilarEntry & { row: CandidateRow | null; features: CandidateView['features']; triScore: number; charScore: number }
  type Candidate = { id: string; wordScore: number; text: string; duplicateOfId: string | null; row: CandidateRow | null }

  /** A report's merge signals: from the index when it holds the report, else built from its full row. */
  function featuresFor(id: string, index: AppIndex): CandidateView['features'] | null {
    const doc = index.doc(id)
    if (doc) return doc
    const full = row(id)
    return full ? featuresOf(toInput(full)) : null
  }

  /** The shortlist's rows, read in one statement (what /similar serves: current links, servable text). */
  function storedCandidates(appId: string, near: { id: string; wordScore: number }[]): Candidate[] {
    const rows = repo.getCandidates(near.map((c) => c.id))
    const out: Candidate[] = []
    for (const c of near) {
      const r = rows.get(c.id)
      if (r && r.app_id === appId) out.push({ id: r.id, wordScore: c.wordScore, text: r.text, duplicateOfId: r.duplicate_of_id, row: r })
    }
    return out
  }

  /**
   * The shortlist for clustering: texts from the cache (a sanitized text never changes), the cluster
   * links from the index (every change of a link goes through this service); only texts not cached are
   * read, in one statement. Whether a lead still takes duplicates is read fresh by the caller.
   */
  function cachedCandidates(appId: string, near: { id: string; wordScore: number }[], index: AppIndex): Candidate[] {
    let missing: string[] | null = null
    const held = near.map((c) => {
      // A report planned in this batch with its sanitized text not stored yet: that text, never the raw row's.
      const text = texts.get(c.id) ?? planned?.get(c.id)?.sanitized?.text
      if (text === undefined) (missing ??= []).push(c.id)
      return text
    })
    const rows = missing ? repo.getCandidates(missing) : null
    const out: Candidate[] = []
    for (let i = 0; i < near.length; i++) {
      const c = near[i]
      let text = held[i]
      if (text === undefined) {
        const r = rows!.get(c.id)
        if (!r || r.app_id !== appId) continue
        remember(r)
        text = r.text
      }
      out.push({ id: c.id, wordScore: c.wordScore, text, duplicateOfId: index.leadOf(c.id), row: null })
    }
    return out
  }

  /** `cached`: the clustering path (cachedCandidates); otherwise the rows are read (storedCandidates). */
  function rank(appId: string, f: Features, text: string, limit: number, cached = false): Ranked[] {
    const index = indexFor(appId)
    const near = index.nearest(f, Math.max(RESCORE, limit))
    const found = cached ? cachedCandidates(appId, near, index) : storedCandidates(appId, near)
    const scores = blend(text, found)
    const out: Ranked[] = []
    for (let i = 0; i < found.length; i++) {
      const c = found[i]
      const features = featuresFor(c.id, index)
      if (!features) continue
      const { score, triScore, charScore } = scores[i]
      out.push({ id: c.id, score: Math.round(score * 1000) / 1000, text: c.text, duplicateOfId: c.duplicateOfId, row: c.row, features, triScore, charScore })
    }
    return out.sort((a, b) => b.score - a.score)
  }

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
  function attach(dupId: string, leadId: string, manual: boolean, known?: Row): void {
    const now = clock.now()
    const movedIds = repo.duplicateIds(dupId)
    repo.setDuplicate(dupId, leadId, manual, now)
    // Never chain: the duplicates of the merged item move to the new lead too.
    if (movedIds.length > 0) repo.moveDuplicates(dupId, leadId, now)
    // It is no lead any more: what its summary was built from goes.
    leads.delete(dupId)
    const r = known ?? row(dupId)
    const joined = r && movedIds.length === 0 && r.redactions !== null ? r : undefined
    const duplicateCount = leadChanged(leadId, 1 + movedIds.length, joined)
    if (!r) return
    for (const feedbackId of [dupId, ...movedIds]) {
      lifecycle.sqlite!.record({ orgId: r.org_id, appId: r.app_id }, 'feedback.duplicate_attached', { feedbackId, leadFeedbackId: leadId, duplicateCount, manual })
    }
    const index = indexFor(r.app_id)
    index.setLead(dupId, leadId)
    for (const id of movedIds) index.setLead(id, leadId)
  }

  /** Whether a root takes duplicates: read now (under the write lock in `clusterReport`), as planned in a batch's first half. */
  function rootStateOf(rootId: string): RootState | null {
    const plan = planned?.get(rootId)
    if (!plan) return repo.rootState(rootId)
    const stored = plan.sanitized ? null : repo.rootState(rootId)
    return { status: plan.sanitized ? 'sanitized' : (stored?.status ?? 'sanitized'), duplicate_of_id: plan.leadId }
  }

  /** Which open lead `r` duplicates, if any (the decision of `clusterReport`; nothing is written). */
  function verdictFor(r: Row, f: Features): { leadId: string | null; reason: string } {
    let verdict: { leadId: string | null; reason: string } = { leadId: null, reason: 'no similar report' }
    if (r.merge_locked) return verdict
    const index = indexFor(r.app_id)
    const seenRoots = new Set<string>()
    const ranked = rank(r.app_id, f, r.text, RESCORE, true)
    // This App's thresholds, from the best scores its earlier reports reached (calibrate.ts).
    const thresholds = calibrate(baseThresholds, index.history)
    index.history.add(ranked[0]?.score ?? 0)
    // Whether a lead takes duplicates is read now: it may have been archived (or moved on) by another
    // connection since it was indexed. Once per lead.
    const roots = new Map<string, RootState | null>()
    for (const c of ranked) {
      const rootId = c.duplicateOfId ?? c.id
      if (seenRoots.has(rootId)) continue
      let root = roots.get(rootId)
      if (root === undefined) roots.set(rootId, (root = rootStateOf(rootId)))
      if (!root || !ATTACHABLE_LEAD_STATUSES.has(root.status) || root.duplicate_of_id) continue
      seenRoots.add(rootId)
      // Vetoes hold against the lead too, not only against the member that matched best.
      const rootFeatures = rootId === c.id ? c.features : featuresFor(rootId, index)
      if (!rootFeatures) continue
      // A member the rules refuse whatever the score needs no cluster score (the costly part).
      let v = veto(f, c.features)
      if (!v) {
        // Against a cluster with duplicates, the whole cluster's vocabulary counts too. It can only
        // raise the score: not computed when the member's own score already attaches (the verdict
        // is the same; its reason then names the member's score).
        const score =
          index.clusterSize(rootId) > 1 && !strongEnough(f, c.features, c.score, thresholds)
            ? Math.max(c.score, combine(index.clusterScore(f, rootId), c.triScore, c.charScore))
            : c.score
        v = rootId === c.id ? decideOnScore(f, c.features, score, thresholds) : decideAgainstLead(f, c.features, rootFeatures, score, thresholds)
      }
      if (v.attach) return { leadId: rootId, reason: v.reason }
      if (verdict.reason === 'no similar report') verdict = { leadId: null, reason: v.reason }
      if (seenRoots.size >= 5) break
    }
    return verdict
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

  /** `decide` against a lead through one of its duplicates, the member's vetoes already passed. */
  function decideAgainstLead(f: Features, member: CandidateView['features'], lead: CandidateView['features'], score: number, thresholds: Thresholds) {
    const viaMember = decideOnScore(f, member, score, thresholds)
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
      remember(r)
      const index = indexFor(r.app_id)
      const f = featuresOf(toInput(r))
      if (r.duplicate_of_id) {
        index.add(f, r.duplicate_of_id)
        pending?.indexed.push({ appId: r.app_id, id })
        return { leadId: r.duplicate_of_id, reason: 'already a duplicate' }
      }
      const verdict = verdictFor(r, f)
      sqlite.transaction(() => {
        if (verdict.leadId) attach(id, verdict.leadId, false, r)
        else leadChanged(id, 0)
      }).immediate()
      index.add(f, verdict.leadId)
      pending?.indexed.push({ appId: r.app_id, id })
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
      // Later reports of the batch rank against its sanitized text (never its raw one) before it is stored.
      remember(r)
      const f = featuresOf(toInput(r))
      const verdict = verdictFor(r, f)
      index.add(f, verdict.leadId)
      planned?.set(id, { leadId: verdict.leadId, sanitized, row: r })
      return verdict
    },

    /**
     * The second half, inside the batch's transaction: writes the planned verdict when its lead can still
     * take the report; otherwise (the lead was archived or merged meanwhile) clusters the report again now.
     */
    applyPlan(id: string, appId: string, verdict: { leadId: string | null; reason: string }): { leadId: string | null; reason: string } {
      // The row as planned: the caller has checked it is still at that version (its sanitized columns stored now).
      const plannedRow = planned?.get(id)?.row
      planned?.delete(id)
      // Indexed in the first half: a failure of this report's part rolls the index back too (batchItem).
      pending?.indexed.push({ appId, id })
      if (!verdict.leadId) {
        sqlite.transaction(() => leadChanged(id, 0)).immediate()
        return verdict
      }
      const self = plannedRow ?? row(id)
      const lead = repo.rootState(verdict.leadId)
      if (self && !self.duplicate_of_id && !self.merge_locked && lead && !lead.duplicate_of_id && ATTACHABLE_LEAD_STATUSES.has(lead.status)) {
        const leadId = verdict.leadId
        sqlite.transaction(() => attach(id, leadId, false, self)).immediate()
        return verdict
      }
      if (self) indexFor(self.app_id).remove(id)
      return this.clusterReport(id)
    },

    /** A planned report that will not be written as planned (its row changed): out of the index and the plans. */
    dropPlan(id: string, appId: string): void {
      planned?.delete(id)
      indexFor(appId).remove(id)
      texts.delete(id)
    },

    /** Other reports of the same App as `id`, best first. */
    similar(id: string, limit: number): SimilarEntry[] {
      const r = row(id)
      if (!r) return []
      return rank(r.app_id, featuresOf(toInput(r)), r.text, limit)
        .filter((c) => c.id !== id)
        .slice(0, limit)
        .map(({ id, score, text, duplicateOfId, row }) => ({ id, score, text: servableText(text, row!), duplicateOfId }))
    },

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
          for (const { appId, id } of pending.indexed) {
            indexes.get(appId)?.remove(id)
            texts.delete(id)
          }
          pending.indexed.length = 0
        }
        leads.clear()
        throw e
      }
    },

    /** Makes `id` (and its duplicates) duplicates of `leadId`, locked against automatic clustering. */
    merge(id: string, leadId: string): void {
      const formerLead = row(id)?.duplicate_of_id
      // IMMEDIATE: these transactions read before they write (see lifecycle.move).
      undoneClears(() =>
        sqlite.transaction(() => {
          attach(id, leadId, true)
          if (formerLead && formerLead !== leadId) refreshLead(formerLead)
        }).immediate(),
      )
    },

    /** Makes a duplicate a lead of its own again (and keeps it so); records `feedback.unmerged`. */
    unmerge(id: string): void {
      const r = row(id)
      if (!r?.duplicate_of_id) return
      const formerLeadId = r.duplicate_of_id
      undoneClears(() =>
        sqlite.transaction(() => {
          repo.setUnmerged(id, clock.now())
          const duplicateCount = refreshLead(formerLeadId)
          refreshLead(id)
          lifecycle.sqlite!.record({ orgId: r.org_id, appId: r.app_id }, 'feedback.unmerged', { feedbackId: id, leadFeedbackId: formerLeadId, duplicateCount })
        }).immediate(),
      )
      indexFor(r.app_id).setLead(id, null)
    },

    /** Drops the cached index of an App (tests; after bulk imports). */
    forget(appId?: string): void {
      if (appId) indexes.delete(appId)
      else indexes.clear()
      texts.clear()
      leads.clear()
    },

    indexSize: (appId: string): number => indexFor(appId).size,

    /** The App's calibrated merge thresholds right now (calibrate.ts; tests and diagnostics). */
    thresholdsFor: (appId: string): Thresholds => calibrate(baseThresholds, indexFor(appId).history),
  }
}
export type ClusterService = ReturnType<typeof createClusterService>

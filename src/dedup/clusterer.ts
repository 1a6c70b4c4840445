/**
 * The in-memory half of near-duplicate clustering, shared by both storage sides (src/dedup/service.ts
 * on SQLite, src/dedup/pg-service.ts on PostgreSQL): the App similarity indexes, the text cache,
 * ranking, and the verdict for a report (which open lead it duplicates). Nothing here writes; what it
 * reads goes through `ClusterReads`, which is synchronous: on SQLite the repository's own statements, on
 * PostgreSQL a snapshot of the rows a verdict needs, read just before (`shortlist` names them).
 */
import type { CandidateRow, ClusterRow as Row, RootState } from './cluster-repo'
import { AppIndex } from './app-index'
import { featuresOf, retitled, type Features, type ReportInput } from './features'
import { APP_GRAMS_MIN_DOCS, blend, combine, DEFAULT_BLEND } from './rerank'
import { densityOf, NEIGHBOURHOOD_SHORTLIST, RESCALED_CANDIDATES, scaledScore } from './neighbourhood'
import { LONG_AGO_LOCALITY, longAgoBlock, recencyBonus } from './arrival-locality'
import { SIMILAR_TITLE_WEIGHT, titleCosine, titleWords } from './title-cosine'
import { containment, heldIn, SIMILAR_CONTAINMENT_WEIGHT } from './title-containment'
import { calibrate, inputOf, shownLocality, snapshotOf, type CalibrationInput, type CalibrationSnapshot } from './calibrate'
import { learnedFor, lessonOf, NO_LESSON, raiseAfterUnmerge, type Decision, type Lesson } from './learn'
import { confirmOnLead, decideOnScore, strongEnough, veto, type CandidateView, type PairContext, type Thresholds } from './decide'
import { genericNote } from './signal-spread'
import { servableText } from '../sanitize/servable'
import { TextCache } from './text-cache'

export const ATTACHABLE_LEAD_STATUSES = new Set(['sanitized', 'awaiting_manual', 'queued', 'agent_running', 'pr_opened', 'failed'])

/** Whether a root takes duplicates now: a lead, in an attachable status, not marked spam (issue 27: spam never gathers real reports). */
export function takesDuplicates(root: RootState | null | undefined): root is RootState {
  return !!root && !root.duplicate_of_id && !root.spam_marked_at && ATTACHABLE_LEAD_STATUSES.has(root.status)
}
/**
 * Reports per App held in the similarity index: the newest ones. Duplicates of a bug arrive close
 * together; older reports stay readable and mergeable by hand, they just stop attracting new ones.
 */
export const MAX_INDEXED_PER_APP = 100_000
/** Reports indexed between two yields to the event loop while an index is built. */
const BUILD_SLICE = 250
/**
 * Removed ids dropped between two looks at the clock (`forgetRemovedInSlices`), and how long the thread
 * drops them before it yields: a page of the removal log (5,000 ids) held a node's thread ~70 ms at once.
 */
const REMOVAL_SLICE_IDS = 250
export const REMOVAL_SLICE_MS = 10
/** How many of the best word-score candidates get the full (blended) score. */
export const RESCORE = 15
/**
 * How many candidates /similar scores fully: a person reads the list, so it looks wider than a verdict
 * (R@10 on the real development corpora: +1.5-2.5 points from 15 to 50; ~2 ms more per request).
 */
export const SIMILAR_SHORTLIST = 50
/**
 * How many of a report's most distinctive words find candidates (app-index.ts `nearest`): for a verdict,
 * and for /similar, where a person reads the list. On the real development corpora, 24 words instead of
 * 12 put a true duplicate in /similar's shortlist of 50 for 92.6 % / 89.0 % of the reports that have one
 * (Eclipse / Firefox; 89.6 % / 82.8 % with 12): R@10 0.839 → 0.855, 0.765 → 0.805. Verdicts keep 12:
 * with 24 their merges and suggestions moved by less than 0.3 points, for twice the postings walked.
 */
export const VERDICT_RETRIEVAL_TERMS = 12
export const SIMILAR_RETRIEVAL_TERMS = 24
/**
 * How a ranking reads its candidates and what it scores them with. `cached`: texts from the text cache and
 * links from the index (the clustering path), else the rows as stored (what /similar serves).
 * `withAppOrder`: the App's n-gram frequencies too, for /similar's order (`rankScore`).
 */
interface RankMode {
  cached: boolean
  retrievalTerms: number
  withAppOrder: boolean
  /** Whether retrieval keeps reports that arrived close to the query first (arrival-locality.ts): /similar's. */
  byArrival: boolean
}
/** A verdict (and the calibration's seed): cached texts, 12 words, the blended score its bars compare. */
const VERDICT_RANKING: RankMode = { cached: true, retrievalTerms: VERDICT_RETRIEVAL_TERMS, withAppOrder: false, byArrival: false }
/** GET /similar: the stored rows, 24 words, ordered by the App's n-gram IDF (a person reads the list). */
const SIMILAR_RANKING: RankMode = { cached: false, retrievalTerms: SIMILAR_RETRIEVAL_TERMS, withAppOrder: true, byArrival: true }
/** A candidate's neighbourhood for /similar's order (neighbourhood.ts): ranked as /similar ranks, texts from the cache. */
const NEIGHBOURHOOD_RANKING: RankMode = { cached: true, retrievalTerms: SIMILAR_RETRIEVAL_TERMS, withAppOrder: true, byArrival: false }

/** The newest reports scored when an index is built, to seed the App's threshold calibration. */
const CALIBRATION_SEED = 40

/**
 * How many reports of an App an index build counts in its n-gram frequencies (rerank.ts AppGrams): an
 * IDF needs a fair sample, not every report, and computing a report's n-grams is most of what counting
 * it costs (100,000 reports: ~14 s more to build an index when all are counted). Reports indexed after
 * the build are all counted (their n-grams are at hand then).
 */
const GRAM_SAMPLE = 5_000
/** Which of `total` rows (by position) a build counts: evenly spread, all of them when few. */
function gramSample(total: number): (i: number) => boolean {
  const stride = Math.max(1, Math.ceil(total / GRAM_SAMPLE))
  return (i) => i % stride === 0
}

/** A report's sanitized columns before they are stored (a batch plans on them first: `plan`). */
export type Sanitized = Pick<Row, 'text' | 'url' | 'component_target' | 'console_logs'> & { redactions: string }

export interface SimilarEntry {
  id: string
  score: number
  text: string
  duplicateOfId: string | null
}

/** A lead offered to a person instead of merged (CONTRACT.md "Duplicate suggestions"). */
export interface Suggestion {
  leadId: string
  score: number
  reason: string
}

/**
 * `leadId`: the lead the report is merged into automatically (null: it stays a lead); `score`: that
 * merge's score; `suggestion`: when not merged, the best lead close enough to offer (at most one).
 */
export type Verdict = { leadId: string | null; reason: string; score?: number; suggestion?: Suggestion | null }

/** What ranking and verdicts read from the store; synchronous (see the file's comment). */
export interface ClusterReads {
  get(id: string): Row | null
  rootState(id: string): RootState | null
  /** By id, without their largest columns; missing ids are absent. */
  getCandidates(ids: string[]): Map<string, CandidateRow>
  /** The App's newest `limit` clustered reports, oldest first (a blocking index build). */
  allOfApp(appId: string, limit: number): Row[]
  /**
   * The App's newest triage decisions (learn.ts), read when the App's lesson is stale. Absent on
   * PostgreSQL, where the caller reads them before a verdict (`learnFrom`).
   */
  decisions?(appId: string): Decision[]
}

/** How long an App's lesson is trusted before its decisions are read again (a decision recorded by another node or thread). */
export const LESSON_TTL_MS = 1000

/** The ids of a row's rejected leads (a JSON array; anything else counts as none). */
export function rejectedLeads(json: string | null): Set<string> {
  if (!json) return new Set()
  try {
    const ids = JSON.parse(json)
    return new Set(Array.isArray(ids) ? ids.filter((v): v is string => typeof v === 'string') : [])
  } catch {
    return new Set()
  }
}

export const toInput = (r: Row): ReportInput => ({
  id: r.id,
  text: r.text,
  url: r.url,
  componentTarget: r.component_target,
  consoleLogs: r.console_logs,
  duplicateOfId: r.duplicate_of_id,
})

/**
 * A report's features as its App's index reads them: a leading line many of the App's reports share (an
 * integration's) is skipped for the title (AppIndex.isBoilerplate).
 */
export const featuresIn = (index: AppIndex, r: Row): Features => featuresOf(toInput(r), (line) => index.isBoilerplate(line, r.id))

export function createClusterer(reads: ClusterReads, baseThresholds: Thresholds) {
  const indexes = new Map<string, AppIndex>()
  const building = new Map<string, Promise<void>>()
  /** Bumped by `forget`: a build that began before keeps nothing (its rows may miss what made it stale). */
  const epochs = new Map<string, number>()
  /**
   * Reports removed (`forgetRemoved`) while an App's index is built: the build read its rows before, so it
   * drops them itself before the index is used (it is among `indexes` only once built, where
   * `forgetRemoved` looks). `relink` as `forgetRemoved`'s.
   */
  const removedWhileBuilding = new Map<string, { batches: (readonly string[])[]; relink: boolean }>()
  /**
   * Which App's live index (`indexes`) holds each report (a report's id is its App's alone): a removal goes
   * to the indexes that hold its ids. It asked every index for every id before: a removal of 100,000
   * reports cost a node holding 50 Apps' indexes 5,000,000 lookups, 0.5-0.7 s of its thread
   * (bench/removal-drop.ts), a million reports ten times that, whichever App they were of. Kept by the
   * index itself (AppIndex.onIds) from when it goes live (`goLive`) until it is dropped (`retire`).
   */
  const holders = new Map<string, string>()

  /** The App's index is built: it serves from now on, and its reports are found by `holders`. */
  function goLive(appId: string, index: AppIndex): void {
    indexes.set(appId, index)
    for (const id of index.ids()) holders.set(id, appId)
    index.onIds = (id, held) => void (held ? holders.set(id, appId) : holders.delete(id))
  }

  /** The App's index is dropped (`forget`): its reports leave `holders` (a later build of the App adds them again). */
  function retire(appId: string, index: AppIndex | undefined): void {
    if (!index) return
    index.onIds = undefined
    for (const id of index.ids()) if (holders.get(id) === appId) holders.delete(id)
  }
  const row = (id: string): Row | null => reads.get(id)
  /** Sanitized reports' texts, for ranking without reading the candidates' rows (text-cache.ts). */
  const texts = new TextCache()
  /** Each App's lesson from its triage decisions (learn.ts), and when it was read (performance.now()). */
  const lessons = new Map<string, { lesson: Lesson; at: number }>()

  /** The App's lesson: cached, read again once `LESSON_TTL_MS` old (or dropped by a decision recorded here). */
  function lessonFor(appId: string): Lesson {
    const held = lessons.get(appId)
    if (held && (performance.now() - held.at < LESSON_TTL_MS || !reads.decisions)) return held.lesson
    if (!reads.decisions) return NO_LESSON
    const lesson = lessonOf(reads.decisions(appId))
    lessons.set(appId, { lesson, at: performance.now() })
    return lesson
  }

  /** The App's thresholds from this calibration input, moved by what its people taught. */
  function thresholdsWith(appId: string, input: CalibrationInput): Thresholds {
    const plain = calibrate(baseThresholds, input)
    const lesson = lessonFor(appId)
    return lesson === NO_LESSON ? plain : calibrate(baseThresholds, input, learnedFor(lesson, plain))
  }

  /** The App's thresholds now: calibrated from its score history, moved by what its people taught. */
  const thresholdsOf = (appId: string, index: AppIndex): Thresholds => thresholdsWith(appId, index.history)

  /** Each App's calibration as last handed out to be stored (`takeCalibrations`), and the changed ones since. */
  const savedCalibration = new Map<string, string>()
  const changedCalibration = new Map<string, CalibrationSnapshot>()

  const snapshotKey = (s: CalibrationSnapshot): string => `${s.scored}|${s.median}|${s.locality}`

  /** Notes the App's calibration for storing when it differs from what was stored last. */
  function noteCalibration(appId: string, index: AppIndex): void {
    const snap = snapshotOf(index.history, index.arrivalLocality)
    if (savedCalibration.get(appId) === snapshotKey(snap)) changedCalibration.delete(appId)
    else changedCalibration.set(appId, snap)
  }

  /** Keeps a row's text for ranking, once it is sanitized (a raw text is never cached). */
  const remember = (r: { id: string; text: string; redactions: string | null }): void => {
    if (r.redactions !== null) texts.set(r.id, r.text)
  }

  /**
   * While a batch plans its reports before it writes them (`withPlans`): each planned report's lead (null:
   * a lead of its own). Rows read meanwhile show these links before they are stored, so a later report of
   * the batch never takes a planned duplicate for a lead.
   */
  let planned: Map<string, { leadId: string | null; sanitized: Sanitized | undefined; row: Row }> | null = null

  /** `forgetRemoved`'s work on one App's index: whether it held any of `ids`. */
  function dropRemoved(appId: string, index: AppIndex, ids: Iterable<string>, relink: boolean): boolean {
    let held = false
    const members = new Set<string>()
    for (const id of ids) {
      if (!index.has(id)) continue
      held = true
      if (relink) for (const member of index.membersOf(id)) members.add(member)
      index.remove(id)
      planned?.delete(id)
    }
    for (const member of members) {
      if (!index.has(member)) continue
      const now = row(member)
      if (!now || now.app_id !== appId) index.remove(member)
      else index.setLead(member, now.duplicate_of_id)
    }
    return held
  }

  /**
   * Builds an App's index from its newest `MAX_INDEXED_PER_APP` reports (`load`), in slices that yield to
   * the event loop, so a large App never blocks requests (1M stored reports would otherwise stall the
   * process for seconds and hold every report in memory).
   */
  function prepare(appId: string, load: () => Iterable<Row> | Promise<Iterable<Row>>): Promise<void> {
    if (indexes.has(appId)) return Promise.resolve()
    let pending = building.get(appId)
    if (!pending) {
      const epoch = epochs.get(appId) ?? 0
      const removed = { batches: [] as (readonly string[])[], relink: false }
      removedWhileBuilding.set(appId, removed)
      pending = (async () => {
        const index = new AppIndex()
        let n = 0
        const recent: Row[] = []
        const loaded = load()
        const rows = loaded instanceof Promise ? await loaded : loaded
        const sampled = gramSample(Array.isArray(rows) ? rows.length : 0)
        for (const r of rows) {
          index.add(featuresIn(index, r), r.duplicate_of_id, sampled(n) ? r.text : undefined)
          remember(r)
          if (recent.push(r) > CALIBRATION_SEED) recent.shift()
          if (++n % BUILD_SLICE === 0) await new Promise<void>((resolve) => setImmediate(resolve))
        }
        // A blocking build (indexFor) may have finished first: keep that one, which later changes went to.
        if (indexes.has(appId) || (epochs.get(appId) ?? 0) !== epoch) return
        if (removed.batches.length > 0) {
          const ids = removed.batches.flat()
          for (const id of ids) texts.delete(id) // remembered by this build again
          dropRemoved(appId, index, ids, removed.relink)
        }
        goLive(appId, index)
        seedCalibration(appId, recent)
      })().finally(() => {
        if (building.get(appId) === pending) building.delete(appId)
        if (removedWhileBuilding.get(appId) === removed) removedWhileBuilding.delete(appId)
      })
      building.set(appId, pending)
    }
    return pending
  }

  /** The App's index; built at once (blocking) if `prepare` was not awaited first. */
  function indexFor(appId: string): AppIndex {
    let index = indexes.get(appId)
    if (!index) {
      index = new AppIndex()
      const rows = reads.allOfApp(appId, MAX_INDEXED_PER_APP)
      const sampled = gramSample(rows.length)
      for (let i = 0; i < rows.length; i++) {
        const r = rows[i]
        index.add(featuresIn(index, r), r.duplicate_of_id, sampled(i) ? r.text : undefined)
        remember(r)
      }
      goLive(appId, index)
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
    for (const r of recent) index.history.add(rank(appId, featuresIn(index, r), r.text, RESCORE, VERDICT_RANKING).find((c) => c.id !== r.id)?.score ?? 0)
  }

  /** Candidates best first, with the blended (word + trigram) score. */
  /** `score`: the blended score the merge rules compare (and a verdict's order); `rankScore`: /similar's order (rerank.ts `rankScore`). */
  type Ranked = SimilarEntry & { row: CandidateRow | null; features: CandidateView['features']; triScore: number; charScore: number; rankScore: number }
  type Candidate = { id: string; wordScore: number; text: string; duplicateOfId: string | null; row: CandidateRow | null }

  /** A report's merge signals: from the index when it holds the report, else built from its full row. */
  function featuresFor(id: string, index: AppIndex): CandidateView['features'] | null {
    const doc = index.doc(id)
    if (!doc) {
      const full = row(id)
      return full ? featuresIn(index, full) : null
    }
    if (!index.storedTitleIsBoilerplate(id)) return doc
    // Indexed before its first line was known to be an integration's (one of the App's first reports
    // with it): its title is read again, as a report arriving now would have it.
    const text = texts.get(id) ?? row(id)?.text
    return text === undefined ? doc : retitled(doc, text, index.boilerplate)
  }

  /** The shortlist's rows, read in one statement (what /similar serves: current links, servable text). */
  function storedCandidates(appId: string, near: { id: string; wordScore: number }[]): Candidate[] {
    const rows = reads.getCandidates(near.map((c) => c.id))
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
    const rows = missing ? reads.getCandidates(missing) : null
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

  /** `limit` candidates of the App for `f` (its text `text`), read and scored as `mode` says (VERDICT_RANKING, SIMILAR_RANKING). */
  function rank(appId: string, f: Features, text: string, limit: number, mode: RankMode): Ranked[] {
    const index = indexFor(appId)
    const near = index.nearest(f, Math.max(RESCORE, limit), mode.retrievalTerms, mode.byArrival)
    const found = mode.cached ? cachedCandidates(appId, near, index) : storedCandidates(appId, near)
    // The App's n-gram counts only for /similar's order (`withAppOrder`): a verdict compares the blended score.
    const scores = blend(text, found, DEFAULT_BLEND, mode.withAppOrder ? index.grams : undefined)
    const out: Ranked[] = []
    for (let i = 0; i < found.length; i++) {
      const c = found[i]
      const features = featuresFor(c.id, index)
      if (!features) continue
      const { score, triScore, charScore, rankScore } = scores[i]
      out.push({ id: c.id, score: Math.round(score * 1000) / 1000, text: c.text, duplicateOfId: c.duplicateOfId, row: c.row, features, triScore, charScore, rankScore })
    }
    return out.sort((a, b) => b.score - a.score)
  }

  /**
   * /similar's candidates for `r` in its ranking order, the best `max(RESCALED_CANDIDATES, limit)` of them
   * (`appOrder`: ordered by the App's n-gram IDF, so neighbourhood densities apply).
   */
  function similarHead(r: Row, limit: number): { ranked: Ranked[]; appOrder: boolean; title: string } {
    const f = featuresIn(indexFor(r.app_id), r)
    const ranked = rank(r.app_id, f, r.text, Math.max(SIMILAR_SHORTLIST, limit), SIMILAR_RANKING)
      .filter((c) => c.id !== r.id)
      .sort((a, b) => b.rankScore - a.rankScore)
    const appOrder = indexFor(r.app_id).grams.docs >= APP_GRAMS_MIN_DOCS
    return { ranked: appOrder ? ranked.slice(0, Math.max(RESCALED_CANDIDATES, limit)) : ranked, appOrder, title: f.title }
  }

  /** A report's neighbourhood density (neighbourhood.ts): kept while fresh, else from a ranking of it now. */
  function densityFor(appId: string, index: AppIndex, id: string): number {
    const held = index.densities.get(id, index.added)
    if (held !== undefined) return held
    const r = row(id)
    // Gone since it was ranked: no scaling for it.
    if (!r) return 0
    const scores = rank(appId, featuresIn(index, r), r.text, NEIGHBOURHOOD_SHORTLIST, NEIGHBOURHOOD_RANKING)
      .filter((c) => c.id !== id)
      .map((c) => c.rankScore)
    const density = densityOf(scores)
    index.densities.set(id, density, index.added)
    return density
  }

  /** /similar's candidates of report `id` with their scores scaled by the neighbourhoods (neighbourhood.ts). */
  function scaledByNeighbourhood(appId: string, index: AppIndex, id: string, ranked: Ranked[]): { c: Ranked; score: number }[] {
    // The query's own density from the ranking at hand (its shortlist is the neighbourhood).
    const own = densityOf(ranked.map((c) => c.rankScore))
    index.densities.set(id, own, index.added)
    return ranked.map((c) => ({ c, score: scaledScore(c.rankScore, own, densityFor(appId, index, c.id)) }))
  }

  /** Whether a root takes duplicates: read now (under the write lock on SQLite), as planned in a batch's first half. */
  function rootStateOf(rootId: string): RootState | null {
    const plan = planned?.get(rootId)
    if (!plan) return reads.rootState(rootId)
    const stored = plan.sanitized ? null : reads.rootState(rootId)
    return { status: plan.sanitized ? 'sanitized' : (stored?.status ?? 'sanitized'), duplicate_of_id: plan.leadId, spam_marked_at: stored?.spam_marked_at ?? null }
  }

  /** `decide` against a lead through one of its duplicates, the member's vetoes already passed (`context`: decideOnScore's). */
  function decideAgainstLead(f: Features, member: CandidateView['features'], lead: CandidateView['features'], score: number, thresholds: Thresholds, context: PairContext) {
    return confirmOnLead(f, lead, decideOnScore(f, member, score, thresholds, context), score)
  }

  /** Which open lead `r` duplicates, if any (the decision of `clusterReport`; nothing is written). */
  function verdictFor(r: Row, f: Features): Verdict {
    let verdict: Verdict = { leadId: null, reason: 'no similar report' }
    let suggestion: Suggestion | null = null
    let suggestionKey = -Infinity
    if (r.merge_locked) return { ...verdict, suggestion }
    const index = indexFor(r.app_id)
    const seenRoots = new Set<string>()
    const ranked = rank(r.app_id, f, r.text, RESCORE, VERDICT_RANKING)
    // This App's thresholds, from the best scores its earlier reports reached (calibrate.ts).
    const thresholds = thresholdsOf(r.app_id, index)
    index.history.add(ranked[0]?.score ?? 0, r.id)
    noteCalibration(r.app_id, index)
    // Leads a person rejected for this report are never offered (nor merged) again.
    const rejected = rejectedLeads(r.rejected_lead_ids)
    // What may corroborate a merge: a component, console error or stack trace many bugs share does not.
    const signals = index.specificSignals(f)
    // Whether a lead takes duplicates is read now: it may have been archived (or moved on) by another
    // connection since it was indexed. Once per lead.
    const roots = new Map<string, RootState | null>()
    // Whether the App's duplicates come in bursts (arrival-locality.ts): a bonus for suggesting, a corroboration halfway up for merging.
    const locality = index.arrivalLocality
    // A specific identifier both titles name corroborates a merge while few of the App's reports hold it (shared-identifier.ts).
    const reportsHolding = (word: string): number => index.reportsHolding(word)
    for (const c of ranked) {
      let arrival = 0
      const rootId = c.duplicateOfId ?? c.id
      // A report clustered again while indexed (a removed lead's successor: src/db/sql/report-removal.ts)
      // finds itself, or its own duplicates, among the candidates: never its own lead.
      if (c.id === r.id || rootId === r.id) continue
      if (seenRoots.has(rootId) || rejected.has(rootId)) continue
      let root = roots.get(rootId)
      if (root === undefined) roots.set(rootId, (root = rootStateOf(rootId)))
      if (!takesDuplicates(root)) continue
      seenRoots.add(rootId)
      // Vetoes hold against the lead too, not only against the member that matched best.
      const rootFeatures = rootId === c.id ? c.features : featuresFor(rootId, index)
      if (!rootFeatures) continue
      // A member the rules refuse whatever the score needs no cluster score (the costly part).
      let v = veto(signals, c.features)
      if (!v) {
        // Against a cluster with duplicates, the whole cluster's vocabulary counts too. It can only
        // raise the score: not computed when the member's own score already attaches (the verdict
        // is the same; its reason then names the member's score).
        const score =
          index.clusterSize(rootId) > 1 && !strongEnough(signals, c.features, c.score, thresholds)
            ? Math.max(c.score, combine(index.clusterScore(f, rootId), c.triScore, c.charScore))
            : c.score
        // Where the App's duplicates come in bursts, a report that arrived close counts for more as a
        // suggestion (its score plus that bonus is held against the floor) and corroborates a merge at
        // the arrival bar (decide.ts `arrivalCorroborates`), the score itself unchanged.
        arrival = locality > 0 ? recencyBonus(index.arrivalGap(r.id, c.id), locality) : 0
        const bars = arrival > 0 ? { ...thresholds, suggest: thresholds.suggest - arrival } : thresholds
        // And a bug last reported long ago, reported again, is often a new bug: a merge block (arrival-locality.ts).
        const longAgo = locality >= LONG_AGO_LOCALITY ? longAgoBlock(index.sinceClusterReported(r.id, rootId), locality) : null
        const context = { block: longAgo, reportsHolding, arrival }
        v = rootId === c.id ? decideOnScore(signals, c.features, score, bars, context) : decideAgainstLead(signals, c.features, rootFeatures, score, bars, context)
        if (!v.attach && v.suggest && signals !== f) v = { ...v, reason: v.reason + genericNote(f, signals, c.features) }
        if (!v.attach && v.suggest && !longAgo && arrival >= 0.005) v = { ...v, reason: `${v.reason}; arrived close to it (+${arrival.toFixed(2)})` }
      }
      if (v.attach) return { leadId: rootId, reason: v.reason, score: c.score, suggestion: null }
      // The suggestion: the lead whose score and arrival bonus are the highest.
      if (!v.attach && v.suggest && (!suggestion || c.score + arrival > suggestionKey)) {
        suggestion = { leadId: rootId, score: c.score, reason: v.reason }
        suggestionKey = c.score + arrival
      }
      if (verdict.reason === 'no similar report') verdict = { leadId: null, reason: v.reason }
      if (seenRoots.size >= 5) break
    }
    return { ...verdict, suggestion }
  }

  /**
   * Reports removed outside clustering (a reporter's erasure, the report retention: src/db/sql/report-removal.ts),
   * committed: out of their App's index and the text cache, and the duplicates of a removed lead linked
   * as the database has them now (handed to the oldest surviving duplicate, or gone too). Without it the
   * index kept an erased report's text until a restart, and ranked a new report against a cluster by a
   * lead that no longer exists (the clustering shortlist takes links from the index, not the database).
   * Ids no index holds are ignored. `relink`: read the duplicates' links again (SQLite, where `reads` reads
   * the database; PostgreSQL's rankings correct every link from the snapshot they read, and outside one
   * its reads see nothing). Returns the Apps touched (their lead states are the caller's to drop). Work
   * in proportion to `ids`, whatever the number of indexes (`holders`).
   */
  function forgetRemoved(ids: readonly string[], relink: boolean): string[] {
    for (const id of ids) texts.delete(id)
    // A build under way read its rows before this removal: it drops these when it ends.
    if (removedWhileBuilding.size > 0) {
      const batch = [...ids]
      for (const removed of removedWhileBuilding.values()) {
        removed.batches.push(batch)
        removed.relink ||= relink
      }
    }
    const byApp = new Map<string, string[]>()
    for (const id of ids) {
      const appId = holders.get(id)
      if (appId === undefined) continue
      const list = byApp.get(appId)
      if (list) list.push(id)
      else byApp.set(appId, [id])
    }
    const touched: string[] = []
    for (const [appId, list] of byApp) {
      const index = indexes.get(appId)
      if (index && dropRemoved(appId, index, list, relink)) touched.push(appId)
    }
    return touched
  }

  const api = {
    prepare,
    indexFor,
    row,
    remember,
    verdictFor,
    /** The prepared App index, or undefined (PostgreSQL: an index is always prepared before it is used). */
    preparedIndex: (appId: string): AppIndex | undefined => indexes.get(appId),

    /**
     * The App's test for a leading line that is no report's summary (AppIndex.isBoilerplate), for a
     * lead's theme; none while the App's index is not built here (the first line is the theme then).
     */
    boilerplateOf: (appId: string): ((line: string) => boolean) | undefined => indexes.get(appId)?.boilerplate,

    /**
     * The ids a verdict for `r` (or a ranking of `limit`) reads: its nearest candidates and their leads.
     * The App's index must be prepared. PostgreSQL reads these rows before it computes (ClusterReads).
     */
    shortlist(r: Row, limit = RESCORE, mode: RankMode = VERDICT_RANKING): string[] {
      const index = indexes.get(r.app_id)
      if (!index) return []
      const ids = new Set<string>()
      // One more than a ranking takes: the report itself may be in the index now and out of it when ranked (`plan`).
      for (const c of index.nearest(featuresIn(index, r), Math.max(RESCORE, limit) + 1, mode.retrievalTerms, mode.byArrival)) {
        ids.add(c.id)
        ids.add(index.leadOf(c.id) ?? c.id)
      }
      return [...ids]
    },

    /** The ids /similar for `r` reads (`limit` asked for): its shortlist as /similar finds it. PostgreSQL reads these first. */
    similarShortlist: (r: Row, limit: number): string[] => api.shortlist(r, Math.max(SIMILAR_SHORTLIST, limit), SIMILAR_RANKING),

    /**
     * The ids /similar for `id` reads beyond its shortlist (whose rows must be at hand): the shortlists of
     * the candidates whose neighbourhood density is not known yet, minus texts the cache holds.
     * PostgreSQL reads these second.
     */
    neighbourhoodReads(id: string, limit: number): string[] {
      const r = row(id)
      const index = r ? indexes.get(r.app_id) : undefined
      if (!r || !index) return []
      const ids = new Set<string>()
      for (const c of similarHead(r, limit).ranked) {
        if (index.densities.get(c.id, index.added) !== undefined) continue
        const cr = row(c.id)
        if (!cr) continue
        for (const n of index.nearest(featuresIn(index, cr), SIMILAR_SHORTLIST + 1, SIMILAR_RETRIEVAL_TERMS)) if (texts.get(n.id) === undefined) ids.add(n.id)
      }
      return [...ids]
    },

    /**
     * Runs `fn` (a batch that plans its reports with `plan`, then writes them) with the planned links
     * visible to every ranking in between.
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

    /** As `withPlans`, for a batch whose planning awaits its reads (PostgreSQL): the plans end when `fn` settles. */
    async withPlansAsync<T>(fn: () => Promise<T>): Promise<T> {
      if (planned) return fn()
      planned = new Map()
      try {
        return await fn()
      } finally {
        planned = null
      }
    },

    /**
     * The first half of clustering a report, without the write lock: the verdict for a report that is not
     * a duplicate (`sanitized`: its sanitized columns when they are not stored yet), indexed at once so
     * later reports rank against it. Nothing is written: the caller writes it (or drops it: `dropPlan`).
     */
    plan(id: string, sanitized?: Sanitized): Verdict | null {
      const stored = row(id)
      if (!stored || stored.duplicate_of_id) return null
      const r: Row = sanitized ? { ...stored, ...sanitized, status: 'sanitized' } : stored
      const index = indexFor(r.app_id)
      // A retry of a batch that was handed back: the report may be indexed from its first plan.
      index.remove(id)
      // Later reports of the batch rank against its sanitized text (never its raw one) before it is stored.
      remember(r)
      const f = featuresIn(index, r)
      const verdict = verdictFor(r, f)
      index.add(f, verdict.leadId, r.text)
      planned?.set(id, { leadId: verdict.leadId, sanitized, row: r })
      return verdict
    },

    /** The row a report was planned from (its sanitized columns stored since), taken off the plans. */
    takePlan(id: string): Row | undefined {
      const r = planned?.get(id)?.row
      planned?.delete(id)
      return r
    },

    /** A planned report that will not be written as planned (its row changed): out of the index and the plans. */
    dropPlan(id: string, appId: string): void {
      planned?.delete(id)
      indexes.get(appId)?.remove(id)
      texts.delete(id)
    },

    /** Out of the index and the text cache (a write that rolled back). */
    unindex(appId: string, id: string): void {
      indexes.get(appId)?.remove(id)
      texts.delete(id)
    },

    forgetRemoved,

    /**
     * `forgetRemoved` a slice at a time, yielding to the event loop once REMOVAL_SLICE_MS went by (the
     * thread serves requests or clusters meanwhile): a node drops a page of the removal log this way.
     */
    async forgetRemovedInSlices(ids: readonly string[], relink: boolean): Promise<string[]> {
      const touched = new Set<string>()
      let since = performance.now()
      for (let from = 0; from < ids.length; from += REMOVAL_SLICE_IDS) {
        for (const appId of forgetRemoved(ids.slice(from, from + REMOVAL_SLICE_IDS), relink)) touched.add(appId)
        if (performance.now() - since >= REMOVAL_SLICE_MS && from + REMOVAL_SLICE_IDS < ids.length) {
          await new Promise<void>((resolve) => setImmediate(resolve))
          since = performance.now()
        }
      }
      return [...touched]
    },

    /** Other reports of the same App as `id`, best first. */
    similar(id: string, limit: number): SimilarEntry[] {
      const r = row(id)
      if (!r) return []
      const { ranked, appOrder, title } = similarHead(r, limit)
      const index = indexFor(r.app_id)
      // Below APP_GRAMS_MIN_DOCS the order is the blended score's, whose scale densities were not measured on.
      const scored = appOrder ? scaledByNeighbourhood(r.app_id, index, r.id, ranked) : ranked.map((c) => ({ c, score: c.rankScore }))
      // Two titles in the same words rank a little higher (title-cosine.ts), and so does a report that says
      // what the other's title says, anywhere in its text (title-containment.ts).
      const words = titleWords(title)
      const idf = (word: string): number => index.wordIdf(word)
      for (const s of scored) {
        const other = titleWords(s.c.features.title)
        const theirs = containment(words, index.holds(s.c.id, words) ?? heldIn(s.c.text, words), idf)
        const ours = containment(other, index.holds(r.id, other) ?? heldIn(r.text, other), idf)
        s.score += SIMILAR_TITLE_WEIGHT * titleCosine(words, other, idf) + SIMILAR_CONTAINMENT_WEIGHT * Math.max(theirs, ours)
      }
      // Where the App's duplicates come in bursts, a candidate that arrived close to the report moves up (arrival-locality.ts).
      const locality = index.arrivalLocality
      if (locality > 0) for (const s of scored) s.score += recencyBonus(index.arrivalGap(r.id, s.c.id), locality)
      return scored
        .sort((a, b) => b.score - a.score)
        .slice(0, limit)
        .map(({ c, score }) => ({ id: c.id, score: Math.round(Math.min(1, Math.max(0, score)) * 1000) / 1000, text: servableText(c.text, c.row!), duplicateOfId: c.duplicateOfId }))
    },

    /** Drops the cached index of an App (tests; after bulk imports). */
    forget(appId?: string): void {
      for (const app of appId ? [appId] : [...indexes.keys(), ...building.keys()]) epochs.set(app, (epochs.get(app) ?? 0) + 1)
      if (appId) {
        retire(appId, indexes.get(appId))
        indexes.delete(appId)
        building.delete(appId)
      } else {
        for (const index of indexes.values()) index.onIds = undefined
        holders.clear()
        indexes.clear()
        building.clear()
      }
      if (appId) lessons.delete(appId)
      else lessons.clear()
      texts.clear()
    },

    /** The Apps with an index in this process (built or being built). */
    indexedApps: (): string[] => [...new Set([...indexes.keys(), ...building.keys()])],

    indexSize: (appId: string): number => indexFor(appId).size,

    /** The App's merge thresholds right now (calibrated, moved by its lesson: calibrate.ts, learn.ts). */
    thresholdsFor: (appId: string): Thresholds => thresholdsOf(appId, indexFor(appId)),

    /**
     * The App's thresholds as every reader shows them: from the calibration the clustering process stored
     * (`stored`, table app_calibration), else (nothing stored yet) from this process's own history.
     */
    shownThresholds: (appId: string, stored: CalibrationSnapshot | null): Thresholds => thresholdsWith(appId, stored ? inputOf(stored) : indexFor(appId).history),

    /** The App's arrival locality as every reader shows it: stored with the calibration, else this process's index. */
    shownLocality: (appId: string, stored: CalibrationSnapshot | null): number => stored?.locality ?? shownLocality(indexFor(appId).arrivalLocality),

    /**
     * The App's thresholds once an automatic merge scoring `score` were undone (what the dashboard says
     * at the Unmerge button): the same calibration and lesson, with that unmerge's raise added.
     */
    thresholdsIfUnmerged(appId: string, score: number, stored: CalibrationSnapshot | null): Thresholds {
      const input = stored ? inputOf(stored) : indexFor(appId).history
      const lesson = lessonFor(appId)
      const after: Lesson = { ...lesson, raiseTo: Math.max(lesson.raiseTo, raiseAfterUnmerge(score)) }
      return calibrate(baseThresholds, input, learnedFor(after, calibrate(baseThresholds, input)))
    },

    /**
     * The Apps whose calibration changed since the last call, to store with the verdicts being written
     * (app_calibration); handed out once each.
     */
    takeCalibrations(): [appId: string, snapshot: CalibrationSnapshot][] {
      const out = [...changedCalibration]
      for (const [appId, s] of out) savedCalibration.set(appId, snapshotKey(s))
      changedCalibration.clear()
      return out
    },

    /** The App's lesson now (read when stale), for display: its bars' reasons. */
    lessonFor,

    /** True when the App's lesson must be read before the next verdict (PostgreSQL: `learnFrom`). */
    lessonStale: (appId: string): boolean => {
      const held = lessons.get(appId)
      return !held || performance.now() - held.at >= LESSON_TTL_MS
    },

    /** Takes the App's decisions as read now (PostgreSQL, before a verdict). */
    learnFrom(appId: string, decisions: Decision[]): void {
      lessons.set(appId, { lesson: lessonOf(decisions), at: performance.now() })
    },

    /** Drops the App's lesson: a decision was just recorded here, the next verdict reads them again. */
    forgetLesson(appId: string): void {
      lessons.delete(appId)
    },
  }
  return api
}
export type Clusterer = ReturnType<typeof createClusterer>

/**
 * The in-memory similarity index of one App: an inverted index from words to reports, document
 * frequencies for TF-IDF, and each report's compact word vector. Candidate retrieval walks only the
 * postings of a report's rarer words, so the cost per query grows far slower than the App.
 */
import type { Features } from './features'
import { DocStore, type DocView } from './doc-store'
import { ScoreHistory } from './calibrate'
import { AppGrams, noteText } from './rerank'
import { Densities } from './neighbourhood'
import { GENERIC_MIN_LEADS, leadsIn, reportsIn, SignalSpread, signalKeys, withoutGeneric } from './signal-spread'
import { titleKey } from './title-key'
import { ARRIVAL_NEIGHBOURS, ArrivalLocality, NEAR_SHARE, nearByChance, recencyBonus } from './arrival-locality'

export interface Scored {
  id: string
  wordScore: number
}

/** How many of a report's most distinctive words are used to find candidates (a verdict's default). */
export const RETRIEVAL_TERMS = 12
/** A line that is the title of this many of an App's reports, different bugs, is no summary (`isBoilerplate`; commonTitle's bar). */
export const BOILERPLATE_REPORTS = GENERIC_MIN_LEADS + 1
/** …when at least this share of them are leads. */
export const BOILERPLATE_LEAD_SHARE = 1 / 3
/** How many of the newest reports per word are visited when finding candidates. */
const MAX_POSTINGS_PER_TERM = 1000

export class AppIndex {
  /** Reused score accumulator, one slot per indexed report, and the slots a query touched in it. */
  private acc = new Float64Array(1024)
  private touched = new Int32Array(0)
  private termIds = new Map<string, number>()
  private df: number[] = []
  private postings: number[][] = []
  private docs = new DocStore()
  private slotOf = new Map<string, number>()
  /** Root lead → its duplicates, for scoring a report against a whole cluster. */
  private members = new Map<string, Set<string>>()
  private live = 0
  /** The best score each clustered report reached against the App: its per-App calibration. */
  readonly history = new ScoreHistory()
  /** The App's character n-gram frequencies, for the n-gram IDF of the blended score (rerank.ts). */
  readonly grams = new AppGrams()
  /** Each report's neighbourhood density, for /similar's order (neighbourhood.ts), computed when first needed. */
  readonly densities = new Densities()
  /** Reports indexed so far (never decreases): when a density was computed, and so whether it is stale. */
  private addedCount = 0
  /** How many leads carry each component, console error and stack fingerprint (signal-spread.ts). */
  private spread = new SignalSpread()
  /** Indexed reports that are leads (no `leadId`): the App's bugs, as far as the index knows. */
  private leadCount = 0
  /** Whether the App's duplicates arrive close together (arrival-locality.ts), from its links. */
  private locality = new ArrivalLocality()
  /** Per slot, the note its link made in `locality` (0: none, 1: far, 2: near) and that link's chance of being near. */
  private linkNote = new Uint8Array(1024)
  private linkChance = new Float32Array(1024)
  /** Root lead → the slot of its cluster's newest member (a report arriving now is nearest to it). */
  private newestMember = new Map<string, number>()
  /**
   * Per slot, when the report arrived in the App (0, 1, 2, …): a report indexed again (clustered anew)
   * keeps its first arrival, while its slot moves to the end. How many reports have arrived so far.
   */
  private arrivedAt = new Int32Array(1024)
  private arrivals = 0
  /**
   * Told of every report that enters (true) or leaves (false) the index, once it is an App's live index
   * (the clusterer's id → App map, which finds a removed report's index without asking every index).
   */
  onIds: ((id: string, held: boolean) => void) | undefined

  /** The reports it holds. */
  ids(): IterableIterator<string> {
    return this.slotOf.keys()
  }

  get size(): number {
    return this.live
  }

  get added(): number {
    return this.addedCount
  }

  has(id: string): boolean {
    return this.slotOf.has(id)
  }

  private idf(termId: number): number {
    return Math.log(1 + (this.live + 1) / (this.df[termId] + 1))
  }

  /** The IDF of a word no indexed report holds: the highest there is (`idf` at a document frequency of 0). */
  private unseenIdf(): number {
    return Math.log(1 + (this.live + 1))
  }

  /**
   * A query's idf memo: a word's idf does not change while one query runs (nothing is added or removed),
   * and a query takes the same word's idf once per report it scores. `beginQuery` empties it.
   */
  private idfMemo = new Float64Array(0)
  private idfStamp = new Uint32Array(0)
  private stamp = 0

  private beginQuery(): void {
    if (this.idfMemo.length < this.df.length) {
      const size = Math.max(this.df.length, this.idfMemo.length * 2, 1024)
      this.idfMemo = new Float64Array(size)
      this.idfStamp = new Uint32Array(size)
      this.stamp = 0
    }
    if (++this.stamp === 0xffffffff) {
      this.idfStamp.fill(0)
      this.stamp = 1
    }
  }

  /** `idf(termId)`, memoised for the query under way (call `beginQuery` first). */
  private queryIdf(termId: number): number {
    if (this.idfStamp[termId] === this.stamp) return this.idfMemo[termId]
    const v = this.idf(termId)
    this.idfMemo[termId] = v
    this.idfStamp[termId] = this.stamp
    return v
  }

  /**
   * Indexes a report. `countText`: its text, counted in the App's n-gram frequencies (`grams`, for
   * /similar's order); an index build passes it for an even sample only (clusterer.ts GRAM_SAMPLE).
   */
  add(f: Features, leadId: string | null, countText?: string): void {
    if (countText !== undefined) noteText(this.grams, countText)
    const previous = this.slotOf.get(f.id)
    const arrivedAt = previous !== undefined ? this.arrivedAt[previous] : this.arrivals++
    if (previous !== undefined) this.remove(f.id)
    const terms: number[] = []
    const tfs: number[] = []
    for (const [word, tf] of f.tf) {
      let tid = this.termIds.get(word)
      if (tid === undefined) {
        tid = this.df.length
        this.termIds.set(word, tid)
        this.df.push(0)
        this.postings.push([])
      }
      terms.push(tid)
      tfs.push(tf)
    }
    const slot = this.docs.push(f, terms, tfs, leadId)
    this.slotOf.set(f.id, slot)
    this.onIds?.(f.id, true)
    this.growSlotTables(slot)
    this.arrivedAt[slot] = arrivedAt
    const title = this.docs.titleKey(slot)
    this.spread.countTitle(title, 1)
    if (!leadId) {
      this.spread.add(signalKeys(f), title)
      this.leadCount++
    }
    for (const tid of terms) {
      this.df[tid]++
      this.postings[tid].push(slot)
    }
    if (leadId) this.link(f.id, leadId)
    this.live++
    this.addedCount++
  }

  private link(id: string, leadId: string): void {
    let set = this.members.get(leadId)
    if (!set) this.members.set(leadId, (set = new Set()))
    this.noteArrival(id, leadId, set.size + 1)
    set.add(id)
  }

  private unlink(id: string, leadId: string | null): void {
    if (!leadId) return
    this.members.get(leadId)?.delete(id)
    const slot = this.slotOf.get(id)
    if (slot === undefined || this.linkNote[slot] === 0) return
    this.locality.note(this.linkNote[slot] === 2, this.linkChance[slot], -1)
    this.linkNote[slot] = 0
  }

  /**
   * Notes in `locality` how close `id` arrived to its cluster (`earlier` members before it): to the lead
   * or the cluster's newest member, the nearest for a report arriving now.
   */
  private noteArrival(id: string, leadId: string, earlier: number): void {
    const slot = this.slotOf.get(id)
    const root = this.slotOf.get(leadId)
    if (slot === undefined || root === undefined) return
    const at = this.arrivedAt[slot]
    const gap = this.clusterGap(at, slot, root, leadId)
    const newest = this.newestMember.get(leadId)
    if (newest === undefined || !this.docs.aliveFlags[newest] || at > this.arrivedAt[newest]) this.newestMember.set(leadId, slot)
    if (this.linkNote[slot] !== 0) this.locality.note(this.linkNote[slot] === 2, this.linkChance[slot], -1)
    // Near: within NEAR_SHARE of the reports before it, and at least the next one (in a young App 5 % is
    // less than one report; the chance counts the same share).
    const before = Math.max(1, this.arrivals - 1)
    const nearWithin = Math.max(1, NEAR_SHARE * before)
    const near = gap <= nearWithin
    // Rounded as it is kept, so taking the note back subtracts exactly what was added.
    const chance = Math.fround(nearByChance(earlier, Math.min(1, nearWithin / before)))
    this.locality.note(near, chance, 1)
    this.linkNote[slot] = near ? 2 : 1
    this.linkChance[slot] = chance
  }

  /** Room in the per-slot arrival tables for `slot`. */
  private growSlotTables(slot: number): void {
    if (this.linkNote.length > slot) return
    const size = Math.max(slot + 1, this.linkNote.length * 2)
    const notes = new Uint8Array(size)
    notes.set(this.linkNote)
    this.linkNote = notes
    const chances = new Float32Array(size)
    chances.set(this.linkChance)
    this.linkChance = chances
    const arrived = new Int32Array(size)
    arrived.set(this.arrivedAt)
    this.arrivedAt = arrived
  }

  /** When report `id` arrived (0, 1, …), or `arrivals` (now) when it is not indexed. */
  private arrivalOf(id: string): number {
    const slot = this.slotOf.get(id)
    return slot === undefined ? this.arrivals : this.arrivedAt[slot]
  }

  /**
   * How far apart two reports arrived, as a share of the App's indexed reports: `a` not indexed yet is
   * arriving now (after every indexed one); −1 when `b` is not indexed.
   */
  arrivalGap(a: string, b: string): number {
    const y = this.slotOf.get(b)
    return y === undefined ? -1 : Math.abs(this.arrivalOf(a) - this.arrivedAt[y]) / Math.max(1, this.arrivals)
  }

  /**
   * How long ago a cluster was last reported, for report `id` (not indexed yet: arriving now): the gap to
   * the nearer of its lead and its newest member, as a share of the App's indexed reports (−1: no lead).
   */
  sinceClusterReported(id: string, rootId: string): number {
    const root = this.slotOf.get(rootId)
    if (root === undefined) return -1
    return this.clusterGap(this.arrivalOf(id), this.slotOf.get(id), root, rootId) / Math.max(1, this.arrivals)
  }

  /**
   * How many reports arrived between arrival `at` (of the report in `slot`, if indexed) and the nearer of
   * cluster `rootId`'s lead (in `root`) and its newest member other than that report.
   */
  private clusterGap(at: number, slot: number | undefined, root: number, rootId: string): number {
    const gap = Math.abs(at - this.arrivedAt[root])
    const newest = this.newestMember.get(rootId)
    return newest !== undefined && newest !== slot && this.docs.aliveFlags[newest] ? Math.min(gap, Math.abs(at - this.arrivedAt[newest])) : gap
  }

  /** A word's IDF in the App right now (a word no report holds: the highest, as in `nearest`). */
  wordIdf(word: string): number {
    const tid = this.termIds.get(word)
    return tid === undefined ? this.unseenIdf() : this.idf(tid)
  }

  /**
   * Which of `words` the indexed report `id` holds anywhere in its text, title or body (same order);
   * undefined when the index does not hold the report.
   */
  holds(id: string, words: readonly string[]): boolean[] | undefined {
    const slot = this.slotOf.get(id)
    if (slot === undefined) return undefined
    const wanted = words.map((w) => this.termIds.get(w) ?? -1)
    const held = words.map(() => false)
    const terms = this.docs.terms
    for (let i = this.docs.termsStart(slot), end = this.docs.termsEnd(slot); i < end; i++) {
      const k = wanted.indexOf(terms[i])
      if (k !== -1) held[k] = true
    }
    return held
  }

  /** How many indexed reports hold `word` (a specific identifier is rare when few do: shared-identifier.ts). */
  reportsHolding(word: string): number {
    const tid = this.termIds.get(word)
    return tid === undefined ? 0 : this.df[tid]
  }

  /** Whether the App's duplicates arrive close together: 0 (no telling) to 1 (arrival-locality.ts). */
  get arrivalLocality(): number {
    return this.locality.strength
  }

  remove(id: string): void {
    const slot = this.slotOf.get(id)
    if (slot === undefined) return
    const leadId = this.docs.leadId(slot)
    this.unlink(id, leadId)
    const doc = this.docs.view(slot)
    this.spread.countTitle(this.docs.titleKey(slot), -1)
    if (!leadId) {
      this.spread.remove(signalKeys(doc), this.docs.titleKey(slot))
      this.leadCount--
    }
    this.docs.eachTerm(slot, (tid) => this.df[tid]--)
    // Postings keep the dead slot (cheaper than splicing arrays); its score accumulator holds NaN from now
    // on, which `nearest` never counts as touched (one memory read per posting instead of two).
    this.docs.kill(slot)
    if (slot < this.acc.length) this.acc[slot] = NaN
    this.slotOf.delete(id)
    this.onIds?.(id, false)
    this.densities.delete(id)
    this.newestMember.delete(id)
    this.live--
  }

  setLead(id: string, leadId: string | null): void {
    const slot = this.slotOf.get(id)
    if (slot === undefined) return
    const was = this.docs.leadId(slot)
    this.unlink(id, was)
    if (!was !== !leadId) {
      // A lead became a duplicate, or the reverse: the App's leads and what they carry change.
      const doc = this.docs.view(slot)
      if (leadId) this.spread.remove(signalKeys(doc), this.docs.titleKey(slot))
      else this.spread.add(signalKeys(doc), this.docs.titleKey(slot))
      this.leadCount += leadId ? -1 : 1
    }
    this.docs.setLeadId(slot, leadId)
    if (leadId) this.link(id, leadId)
  }

  /**
   * `f`'s merge signals without those many other leads of the App carry too (signal-spread.ts): a
   * component, console error or stack fingerprint that many bugs share corroborates no merge.
   */
  specificSignals<T extends Features>(f: T): T & { genericTitle?: boolean; commonTitle?: boolean } {
    const report = this.slotOf.has(f.id)
    return withoutGeneric(f, this.spread, this.leadCount, { lead: report && this.leadOf(f.id) === null, report })
  }

  /**
   * Whether `line` is an integration's line rather than a user's summary, for report `selfId` (or for a
   * report arriving now): at least `BOILERPLATE_REPORTS` other reports of the App have it as their
   * title, and they are different bugs (at least a third of them leads). A popular bug's one title is
   * not: its reports are duplicates of one lead. featuresOf then reads the next line. The reports that
   * had the line first keep it as their stored title, so it stays counted; when they are compared, their
   * title is read again as a report arriving now would read it (clusterer.ts `featuresFor`).
   */
  isBoilerplate(line: string, selfId?: string): boolean {
    const key = titleKey(line)
    const self = selfId === undefined ? undefined : this.slotOf.get(selfId)
    const mine = self !== undefined && this.docs.titleKey(self) === key
    return this.boilerplateCounts(this.spread.titleCounts(key), mine, mine && this.docs.leadId(self) === null)
  }

  /** `isBoilerplate` as a report arriving now asks it: the predicate featuresOf and themeOf take. */
  readonly boilerplate = (line: string): boolean => this.isBoilerplate(line)

  /** `isBoilerplate` for an indexed report's stored title, as a report arriving now would judge it (its key at hand). */
  storedTitleIsBoilerplate(id: string): boolean {
    const slot = this.slotOf.get(id)
    return slot !== undefined && this.boilerplateCounts(this.spread.titleCounts(this.docs.titleKey(slot)), false, false)
  }

  /** The rule of `isBoilerplate` on a title's packed counts, less the asking report's own where it has the title. */
  private boilerplateCounts(packed: number, selfReport: boolean, selfLead: boolean): boolean {
    const reports = reportsIn(packed) - (selfReport ? 1 : 0)
    if (reports < BOILERPLATE_REPORTS) return false
    const leads = leadsIn(packed) - (selfLead ? 1 : 0)
    return leads >= 2 && leads >= reports * BOILERPLATE_LEAD_SHARE
  }

  /**
   * Reused dense per-term tables (a generation stamp marks the entries of the current use): a cluster's
   * centroid, and a query's word weights. Same sums in the same order as maps, without a map per query.
   */
  private centroid = new Float64Array(0)
  private centroidStamp = new Uint32Array(0)
  private centroidGen = 0
  private touchedTerms: number[] = []
  private queryWeight = new Float64Array(0)
  private queryWeightStamp = new Uint32Array(0)
  private queryWeightGen = 0

  /** Sizes the per-term tables to the vocabulary; returns the next generation of each (0 wraps to a clear). */
  private termTables(): void {
    if (this.centroid.length < this.df.length) {
      const size = Math.max(this.df.length, this.centroid.length * 2, 1024)
      this.centroid = new Float64Array(size)
      this.centroidStamp = new Uint32Array(size)
      this.queryWeight = new Float64Array(size)
      this.queryWeightStamp = new Uint32Array(size)
      this.centroidGen = this.queryWeightGen = 0
    }
  }

  /** Adds an indexed report's TF-IDF vector, scaled, to the centroid (inside a query: `beginQuery` first). */
  private vector(slot: number, scale: number): void {
    const terms = this.docs.terms
    const tfs = this.docs.tfs
    const centroid = this.centroid
    const stamp = this.centroidStamp
    const gen = this.centroidGen
    for (let i = this.docs.termsStart(slot), end = this.docs.termsEnd(slot); i < end; i++) {
      const tid = terms[i]
      if (stamp[tid] !== gen) {
        stamp[tid] = gen
        centroid[tid] = 0
        this.touchedTerms.push(tid)
      }
      centroid[tid] = centroid[tid] + scale * tfs[i] * this.queryIdf(tid)
    }
  }

  /**
   * Cosine of `f` with the centroid of a whole cluster (the lead and up to `maxMembers` duplicates, each
   * normalised). A cluster of paraphrases covers more of the ways users describe its bug than any one
   * report does.
   */
  clusterScore(f: Features, rootId: string, maxMembers = 50): number {
    this.beginQuery()
    this.termTables()
    if (++this.centroidGen === 0xffffffff) {
      this.centroidStamp.fill(0)
      this.centroidGen = 1
    }
    this.touchedTerms.length = 0
    const terms = this.docs.terms
    const tfs = this.docs.tfs
    const addMember = (id: string): void => {
      if (id === f.id) return
      const slot = this.slotOf.get(id)
      if (slot === undefined) return
      let norm = 0
      for (let i = this.docs.termsStart(slot), end = this.docs.termsEnd(slot); i < end; i++) norm += (tfs[i] * this.queryIdf(terms[i])) ** 2
      if (norm > 0) this.vector(slot, 1 / Math.sqrt(norm))
    }
    // The lead, then its newest `maxMembers` duplicates (a set keeps the order they joined in).
    addMember(rootId)
    const members = this.members.get(rootId)
    if (members) {
      let skip = members.size - maxMembers
      for (const id of members) if (skip-- <= 0) addMember(id)
    }
    const centroid = this.centroid
    const stamp = this.centroidStamp
    const gen = this.centroidGen
    let dot = 0
    let cNorm = 0
    let qNorm = 0
    for (const tid of this.touchedTerms) cNorm += centroid[tid] * centroid[tid]
    for (const [word, tf] of f.tf) {
      const tid = this.termIds.get(word)
      const qw = tf * (tid === undefined ? this.unseenIdf() : this.queryIdf(tid))
      qNorm += qw * qw
      if (tid !== undefined) dot += qw * (stamp[tid] === gen ? centroid[tid] : 0)
    }
    return cNorm === 0 || qNorm === 0 ? 0 : dot / Math.sqrt(cNorm * qNorm)
  }

  /** The reports indexed as duplicates of `rootId`. */
  membersOf(rootId: string): string[] {
    return [...(this.members.get(rootId) ?? [])]
  }

  clusterSize(rootId: string): number {
    return 1 + (this.members.get(rootId)?.size ?? 0)
  }

  /** The lead an indexed report duplicates (null for a lead, or a report not indexed). */
  leadOf(id: string): string | null {
    const slot = this.slotOf.get(id)
    return slot === undefined ? null : this.docs.leadId(slot)
  }

  /** The stored features of an indexed report (what the merge rules compare). */
  doc(id: string): DocView | undefined {
    const slot = this.slotOf.get(id)
    return slot === undefined ? undefined : this.docs.view(slot)
  }

  /**
   * The `limit` reports most similar to `f` by TF-IDF cosine over words, excluding `f.id` itself.
   * Retrieval uses the postings of words held by at most `maxDf` reports; scoring uses every word.
   * `byArrival` (/similar, for an indexed report): reports that arrived close to it are kept first
   * where the App's duplicates come in bursts (arrival-locality.ts).
   */
  nearest(f: Features, limit: number, retrievalTerms = RETRIEVAL_TERMS, byArrival = false): Scored[] {
    this.beginQuery()
    const query: { tid: number; w: number; idf: number }[] = []
    let qNorm = 0
    for (const [word, tf] of f.tf) {
      const tid = this.termIds.get(word)
      // A word no indexed report has still counts in the query's norm, with the highest idf.
      const idf = tid === undefined ? this.unseenIdf() : this.queryIdf(tid)
      const w = tf * idf
      qNorm += w * w
      if (tid !== undefined && this.df[tid] > 0) query.push({ tid, w, idf })
    }
    if (query.length === 0 || qNorm === 0) return []
    qNorm = Math.sqrt(qNorm)
    // Retrieval: the query's most distinctive words only, and within each the newest postings only
    // (recent reports are the likely duplicates). This bounds the work per query whatever the App's size.
    // A word only the query itself holds (a stack frame, a build number) finds nothing: skip it, or a
    // long technical report spends its whole retrieval budget on such words.
    const selfDf = this.slotOf.has(f.id) ? 1 : 0
    const retrieval = query
      .filter((q) => this.df[q.tid] > selfDf)
      .sort((a, b) => b.idf - a.idf)
      .slice(0, retrievalTerms)
    const alive = this.docs.aliveFlags
    if (this.acc.length < this.docs.slots) {
      this.acc = new Float64Array(Math.max(this.docs.slots, this.acc.length * 2, 1024))
      for (let slot = 0; slot < this.docs.slots; slot++) if (alive[slot] !== 1) this.acc[slot] = NaN
    }
    const acc = this.acc
    if (this.touched.length < retrieval.length * MAX_POSTINGS_PER_TERM) this.touched = new Int32Array(retrieval.length * MAX_POSTINGS_PER_TERM)
    const touched = this.touched
    let nTouched = 0
    // What a report holding every retrieval word scores (summed in the same order, so equal to the bit).
    let full = 0
    for (const { tid, w, idf } of retrieval) {
      const list = this.postings[tid]
      const stop = Math.max(0, list.length - MAX_POSTINGS_PER_TERM)
      const add = w * idf
      full += add
      for (let i = list.length - 1; i >= stop; i--) {
        // A removed report's slot holds NaN (see `remove`): never 0, so never touched, and it stays NaN.
        const slot = list[i]
        const sum = acc[slot]
        if (sum === 0) touched[nTouched++] = slot
        acc[slot] = sum + add
      }
    }
    const selfSlot = this.slotOf.get(f.id)
    const keep = Math.max(limit * 3, 40)
    // Where reports holding every retrieval word tie (a flood of one template, the same words in every
    // report but a one-digit number), a report with the query's very title goes first: otherwise the
    // newest ties are kept and an exact twin is missed. Read only on such a tie.
    const sameTitle = titleKey(f.title)
    const titled = (slot: number): boolean => this.docs.titleKey(slot) === sameTitle
    const top = new TopK(keep, full, titled)
    // /similar's retrieval, where the App's duplicates come in bursts (arrival-locality.ts): a report that
    // arrived close to the query is kept before one that only shares a little more of its words. The
    // bonus is scaled to what a report holding every retrieval word scores; the word score stays as is.
    const locality = byArrival && selfSlot !== undefined ? this.locality.strength : 0
    const arrivals = Math.max(1, this.arrivals)
    const selfAt = selfSlot === undefined ? 0 : this.arrivedAt[selfSlot]
    const arrivalBonus = (slot: number): number => (locality > 0 ? recencyBonus(Math.abs(this.arrivedAt[slot] - selfAt) / arrivals, locality) : 0)
    // The reports that arrived right before and after the query are candidates too, on their bonus
    // alone, when they hold none of its retrieval words (a paraphrase).
    if (locality > 0) {
      const last = Math.min(this.docs.slots - 1, selfSlot! + ARRIVAL_NEIGHBOURS)
      for (let slot = Math.max(0, selfSlot! - ARRIVAL_NEIGHBOURS); slot <= last; slot++) {
        if (slot !== selfSlot && alive[slot] === 1 && acc[slot] === 0) top.offer(slot, full * arrivalBonus(slot))
      }
    }
    for (let i = 0; i < nTouched; i++) {
      const slot = touched[i]
      if (slot !== selfSlot) {
        const score = locality > 0 ? acc[slot] + full * arrivalBonus(slot) : acc[slot]
        // Most partial matches fall below the heap's least once it is full: skipped without a call.
        if (score >= top.floor) top.offer(slot, score)
      }
      acc[slot] = 0
    }
    // Full cosine for the best partial matches only.
    const shortlist = top.sorted()
    this.termTables()
    if (++this.queryWeightGen === 0xffffffff) {
      this.queryWeightStamp.fill(0)
      this.queryWeightGen = 1
    }
    const qWeight = this.queryWeight
    const qStamp = this.queryWeightStamp
    const qGen = this.queryWeightGen
    for (const q of query) {
      qWeight[q.tid] = q.w
      qStamp[q.tid] = qGen
    }
    const scored: (Scored & { slot: number; key: number })[] = []
    const terms = this.docs.terms
    const tfs = this.docs.tfs
    for (const [slot] of shortlist) {
      let dot = 0
      let dNorm = 0
      for (let i = this.docs.termsStart(slot), end = this.docs.termsEnd(slot); i < end; i++) {
        const tid = terms[i]
        const w = tfs[i] * this.queryIdf(tid)
        dNorm += w * w
        if (qStamp[tid] === qGen) dot += qWeight[tid] * w
      }
      if (dNorm > 0) {
        const wordScore = dot / (qNorm * Math.sqrt(dNorm))
        scored.push({ id: this.docs.id(slot), wordScore, slot, key: wordScore + arrivalBonus(slot) })
      }
    }
    const tieBreak = (a: { slot: number }, b: { slot: number }): number => Number(titled(b.slot)) - Number(titled(a.slot))
    return scored
      .sort((a, b) => b.key - a.key || tieBreak(a, b))
      .slice(0, limit)
      .map(({ id, wordScore }) => ({ id, wordScore }))
  }
}

/**
 * The k highest-scored items, kept in a binary min-heap: O(n log k) instead of sorting all n. Between
 * items at the score `tied` an item `preferred` says yes to ranks higher (asked only on such a tie: rare
 * but for a flood of one template), so it is kept before the others.
 */
class TopK {
  private slots: number[] = []
  private scores: number[] = []
  /** The least score kept once k items are held (-Infinity before): an offer below it changes nothing. */
  floor = -Infinity

  constructor(
    private readonly k: number,
    private readonly tied = NaN,
    private readonly preferred: (slot: number) => boolean = () => false,
  ) {}

  /** Whether `slot` at `score` ranks above `other` at the same score. */
  private before(score: number, slot: number, other: number): boolean {
    return score === this.tied && this.preferred(slot) && !this.preferred(other)
  }

  /** Whether the item at heap position `a` ranks below the one at `b`. */
  private below(a: number, b: number): boolean {
    const { scores, slots } = this
    return scores[a] < scores[b] || (scores[a] === scores[b] && this.before(scores[b], slots[b], slots[a]))
  }

  offer(slot: number, score: number): void {
    const { slots, scores } = this
    if (slots.length < this.k) {
      slots.push(slot)
      scores.push(score)
      let i = slots.length - 1
      while (i > 0) {
        const parent = (i - 1) >> 1
        if (!this.below(i, parent)) break
        this.swap(i, parent)
        i = parent
      }
      if (slots.length === this.k) this.floor = scores[0]
      return
    }
    if (score < scores[0] || (score === scores[0] && !this.before(score, slot, slots[0]))) return
    slots[0] = slot
    scores[0] = score
    let i = 0
    for (;;) {
      const l = 2 * i + 1
      const r = l + 1
      let min = i
      if (l < slots.length && this.below(l, min)) min = l
      if (r < slots.length && this.below(r, min)) min = r
      if (min === i) break
      this.swap(i, min)
      i = min
    }
    this.floor = scores[0]
  }

  private swap(a: number, b: number): void {
    const { slots, scores } = this
    ;[slots[a], slots[b]] = [slots[b], slots[a]]
    ;[scores[a], scores[b]] = [scores[b], scores[a]]
  }

  /** [slot, score] pairs, best first. */
  sorted(): [number, number][] {
    return this.slots.map((s, i): [number, number] => [s, this.scores[i]]).sort((a, b) => b[1] - a[1])
  }
}

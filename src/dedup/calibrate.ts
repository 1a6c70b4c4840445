/**
 * Per-App bars. The background similarity differs between Apps: in an App of long technical reports
 * (stack traces, shared templates, user-agent lines) two *different* bugs already score what two
 * paraphrases score in an App of short end-user notes. Each App records the best score every new report
 * reached against it (mostly against a different bug, since most reports are not duplicates); the
 * median is the App's background. The merge bars only ever go *up* from it (a bar that followed a low
 * background down merged different bugs on real reports); the suggestion floor follows it. A new App
 * starts with higher merge bars until it has enough history.
 */
import type { Thresholds } from './decide'

/** The calibration's knobs (docs/triage.md explains each; bench/cluster.ts measures them). */
export const CALIBRATION = {
  /** Reports an App must have scored before its own distribution is trusted. */
  minHistory: 30,
  /** How much higher the thresholds are while an App has less history than that. */
  learningRaise: 0.1,
  /** How far above the App's median best-match score a report must score to merge on the score alone (never below the base bar). */
  margin: 0.3,
  /** The most the calibration raises the thresholds (beyond this nothing would merge at all). */
  maxRaise: 0.15,
  /** The share of the raise applied to the corroborated (moderate) threshold. */
  corroboratedShare: 0.5,
  /**
   * How far above the App's median best-match score a lead must score to be suggested (never below
   * the base floor). 0: a lead above the App's typical best match is worth a person's look. On the real
   * development corpora (bench/dup-corpora) 0.05 → 0 took the suggestion hit rate from 0.468 to 0.510
   * (Eclipse) and 0.345 to 0.406 (Firefox), the share of suggestions right from 0.57 to 0.53 and 0.45 to
   * 0.40. An App whose people reject what it suggests raises its own floor (learn.ts).
   */
  suggestMargin: 0,
  /** Scores an App must have before the suggestion floor follows its median (a person checks each one). */
  minSuggestHistory: 10,
}

/** Scores kept per App: the newest ones, so the calibration follows the App as it changes. */
export const HISTORY = 512

/**
 * A bounded ring of an App's best-match scores, with a sorted copy kept beside it for the median. A
 * report counts once: scored again (a batch handed back and planned anew, a verdict redone because its
 * lead was archived meanwhile), its new score replaces its first instead of counting it twice.
 */
export class ScoreHistory {
  private ring = new Float32Array(HISTORY)
  /** The ring's scores in ascending order (updated on each add: O(HISTORY), no sort per report). */
  private sorted = new Float32Array(HISTORY)
  private n = 0
  /** Which report each ring slot holds, and the slot of each report in the ring. */
  private idAt: (string | undefined)[] = new Array(HISTORY)
  private slotOf = new Map<string, number>()

  get count(): number {
    return Math.min(this.n, HISTORY)
  }

  /** `score`, the best match report `id` reached (an index build's seed passes no id). */
  add(score: number, id?: string): void {
    const value = Math.fround(Number.isNaN(score) ? 0 : score)
    const size = this.count
    const again = id === undefined ? undefined : this.slotOf.get(id)
    if (again !== undefined) {
      this.take(this.ring[again], size)
      this.ring[again] = value
      this.put(value, size - 1)
      return
    }
    const slot = this.n++ % HISTORY
    let used = size
    if (size === HISTORY) {
      // The oldest score leaves the sorted copy first.
      this.take(this.ring[slot], size)
      used--
      const gone = this.idAt[slot]
      if (gone !== undefined) this.slotOf.delete(gone)
    }
    this.ring[slot] = value
    this.idAt[slot] = id
    if (id !== undefined) this.slotOf.set(id, slot)
    this.put(value, used)
  }

  /** Removes one `value` from the sorted copy of `size` scores. */
  private take(value: number, size: number): void {
    const i = this.lowerBound(value, size)
    this.sorted.copyWithin(i, i + 1, size)
  }

  /** Inserts `value` into the sorted copy of `size` scores. */
  private put(value: number, size: number): void {
    const at = this.lowerBound(value, size)
    this.sorted.copyWithin(at + 1, at, size)
    this.sorted[at] = value
  }

  /** The first index of the sorted copy (of `size` scores) holding a score ≥ `value`. */
  private lowerBound(value: number, size: number): number {
    let lo = 0
    let hi = size
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (this.sorted[mid] < value) lo = mid + 1
      else hi = mid
    }
    return lo
  }

  median(): number {
    const size = this.count
    return size === 0 ? 0 : this.sorted[size >> 1]
  }
}

/**
 * What calibrate reads of an App's history: how many reports it scored and their median best score.
 * A live ScoreHistory (the process that clusters) or a stored snapshot (`app_calibration`: every
 * process that shows the App's bars reads that, so the API, the dashboard and the CLI show the same).
 */
export interface CalibrationInput {
  readonly count: number
  median(): number
}

/**
 * A stored calibration: what the process that clusters last wrote for the App. `locality` rides along
 * (arrival-locality.ts, to a hundredth): it lives in the clustering node's index, and every reader shows
 * it from here, as it shows the bars.
 */
export interface CalibrationSnapshot {
  scored: number
  median: number
  locality: number
}

/**
 * The median as calibrate uses it: to a thousandth, so a stored snapshot (a REAL / double column) gives
 * exactly the bars the live history gives.
 */
export const calibrationMedian = (input: CalibrationInput): number => Math.round(input.median() * 1000) / 1000

/**
 * What to store of a live history: the count up to what calibrate looks at (`minHistory`; more changes
 * nothing) and the median as calibrate uses it. Equal snapshots give equal bars.
 */
export function snapshotOf(history: CalibrationInput, locality: number): CalibrationSnapshot {
  return { scored: Math.min(history.count, CALIBRATION.minHistory), median: calibrationMedian(history), locality: shownLocality(locality) }
}

/** An App's arrival locality as stored and shown: to a hundredth (finer moves with every link and says nothing more). */
export const shownLocality = (locality: number): number => Math.round(locality * 100) / 100

/** A stored snapshot as calibrate's input. */
export function inputOf(s: CalibrationSnapshot): CalibrationInput {
  return { count: s.scored, median: () => s.median }
}

/**
 * What people's triage decisions taught about an App (src/dedup/learn.ts `learnedFor` computes it from
 * the stored decisions): `mergeShift` moves both merge bars (negative only once confirmed decisions show
 * the automatic merges would stay right); `mergeFloor` is the least either bar may be (after an
 * automatic merge was undone: above that merge's score; 0: no floor); `suggestFloor` the least the
 * suggestion floor may be.
 */
export interface Learned {
  mergeShift: number
  mergeFloor?: number
  /** The least the suggestion floor may be (people rejected the suggestions below it; 0: nothing raised it). */
  suggestFloor?: number
}

export const NOTHING_LEARNED: Learned = { mergeShift: 0, mergeFloor: 0, suggestFloor: 0 }

/** The thresholds for an App with this history (and what its people's decisions taught). */
export function calibrate(base: Thresholds, history: CalibrationInput, learned: Learned = NOTHING_LEARNED): Thresholds {
  const c = CALIBRATION
  const median = calibrationMedian(history)
  const raise = history.count < c.minHistory ? c.learningRaise : Math.min(c.maxRaise, Math.max(0, median + c.margin - base.strong))
  // A corroborated merge (same component or console error) carries evidence no text score has:
  // it moves half as far.
  const floor = learned.mergeFloor ?? 0
  const strong = Math.max(base.strong + raise + learned.mergeShift, floor)
  const moderate = Math.max(base.moderate + raise * c.corroboratedShare + learned.mergeShift, floor)
  // Suggestions follow the App's background from the start: a person only reads them.
  const calibrated = history.count < c.minSuggestHistory ? base.suggest : Math.max(base.suggest, median + c.suggestMargin)
  const suggest = Math.max(calibrated, learned.suggestFloor ?? 0)
  return { strong, moderate, suggest: Math.min(suggest, moderate) }
}

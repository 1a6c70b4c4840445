/**
 * Per-App merge thresholds. One global threshold does not transfer between Apps: in an App of long
 * technical reports (stack traces, shared templates, user-agent lines) two *different* bugs already
 * score what two paraphrases score in an App of short end-user notes. So each App's thresholds are set
 * from its own score distribution: the best score each new report reached against the App before it
 * (mostly against a different bug, since most reports are not duplicates). The median of those is the
 * App's background similarity; an automatic merge needs a clear margin above it. Until an App has
 * enough history, it merges only on very high scores.
 */
import type { Thresholds } from './decide'

/** The calibration's knobs (docs/triage.md explains each; bench/cluster.ts measures them). */
export const CALIBRATION = {
  /** Reports an App must have scored before its own distribution is trusted. */
  minHistory: 30,
  /** How much higher the thresholds are while an App has less history than that. */
  learningRaise: 0.15,
  /** How far above the App's median best-match score a report must score to merge on the score alone. */
  margin: 0.3,
  /** The most the calibration raises the thresholds (beyond this nothing would merge at all). */
  maxRaise: 0.35,
  /** The share of the raise applied to the corroborated (moderate) threshold. */
  corroboratedShare: 0.5,
}

/** Scores kept per App: the newest ones, so the calibration follows the App as it changes. */
export const HISTORY = 512

/** A bounded ring of an App's best-match scores. */
export class ScoreHistory {
  private ring = new Float32Array(HISTORY)
  private n = 0

  get count(): number {
    return Math.min(this.n, HISTORY)
  }

  add(score: number): void {
    this.ring[this.n++ % HISTORY] = score
  }

  median(): number {
    const xs = Array.from(this.ring.subarray(0, this.count)).sort((a, b) => a - b)
    return xs.length === 0 ? 0 : xs[xs.length >> 1]
  }
}

/** The thresholds for an App with this history. */
export function calibrate(base: Thresholds, history: ScoreHistory): Thresholds {
  const c = CALIBRATION
  const raise = history.count < c.minHistory ? c.learningRaise : Math.min(c.maxRaise, Math.max(0, history.median() + c.margin - base.strong))
  // A corroborated merge (same component or console error) carries evidence no text score has:
  // it moves half as far.
  return { strong: base.strong + raise, moderate: base.moderate + raise * c.corroboratedShare }
}

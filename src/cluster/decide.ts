/**
 * The merge decision. Precision comes first: a wrong merge hides a real bug, a missed merge only costs
 * a second agent run. A report attaches to a lead only on a strong score, or on a moderate score
 * corroborated by the same page, component or console error; and never when the two first lines carry
 * different identifying numbers (versions, error codes).
 */
import type { Features } from './features'

export interface Thresholds {
  /** Attach on this blended score alone. */
  strong: number
  /** Attach on this score when a corroborating signal agrees. */
  moderate: number
  /** Weight of word TF-IDF cosine in the blend; the rest is character-trigram cosine. */
  wordWeight: number
}

/** Tuned on test/fixtures/dedup-corpus.json for precision ≥ 0.98 on every shuffled order (bench/cluster.ts). */
export const DEFAULT_THRESHOLDS: Thresholds = { strong: 0.5, moderate: 0.38, wordWeight: 0.75 }

/** What the merge rules compare besides the score (features of a new report, or a stored one). */
export interface MergeSignals {
  firstNumbers: readonly string[]
  versions: ReadonlySet<string>
  polarity: Features['polarity']
  distinctWords: number
  page: string | null
  component: string | null
  errorFp: string | null
}

export interface CandidateView {
  features: MergeSignals
  wordScore: number
  text: string
}

/**
 * Which signals other than text agree between the two reports. The same page alone does not
 * corroborate: "same page, another bug" is the most common look-alike (measured on the corpus, it
 * brought most wrong merges). It counts only alongside the same component or console error.
 */
export function corroboration(a: CandidateView['features'], b: CandidateView['features']): string[] {
  const out: string[] = []
  if (a.component && a.component === b.component) out.push('component')
  if (a.errorFp && a.errorFp === b.errorFp) out.push('consoleError')
  if (out.length > 0 && a.page && a.page === b.page) out.push('page')
  return out
}

/** Two first lines naming different numbers (versions, codes, counts, in order) describe different cases. */
export function numbersVeto(a: readonly string[], b: readonly string[]): boolean {
  if (a.length === 0 || b.length === 0) return false
  return a.length !== b.length || a.some((n, i) => n !== b[i])
}

/** Reports with fewer distinct content words than this ("search broken") need a much higher score. */
export const SHORT_REPORT_WORDS = 4
export const SHORT_REPORT_EXTRA = 0.2

function disjoint(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  if (a.size === 0 || b.size === 0) return false
  for (const v of a) if (b.has(v)) return false
  return true
}

export type Verdict = { attach: true; reason: string } | { attach: false; reason: string }

export function decide(query: CandidateView['features'], candidate: CandidateView['features'], score: number, t: Thresholds = DEFAULT_THRESHOLDS): Verdict {
  if (numbersVeto(query.firstNumbers, candidate.firstNumbers)) return { attach: false, reason: 'different numbers in first lines' }
  if (disjoint(query.versions, candidate.versions)) return { attach: false, reason: 'different versions' }
  if (query.polarity && candidate.polarity && query.polarity !== candidate.polarity) return { attach: false, reason: 'opposite symptoms (too often vs never)' }
  // A very short report matches too much: it merges only on near-identical wording.
  const extra = Math.min(query.distinctWords, candidate.distinctWords) < SHORT_REPORT_WORDS ? SHORT_REPORT_EXTRA : 0
  if (score >= t.strong + extra) return { attach: true, reason: `strong similarity ${score.toFixed(2)}` }
  const agree = corroboration(query, candidate)
  if (score >= t.moderate + extra && agree.length > 0) return { attach: true, reason: `similarity ${score.toFixed(2)} with same ${agree.join(', ')}` }
  return { attach: false, reason: `similarity ${score.toFixed(2)} too low` }
}

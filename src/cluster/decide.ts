/**
 * The merge decision. Precision comes first: a wrong merge hides a real bug, a missed merge only costs
 * a second agent run. A report attaches to a lead only on a strong score, or on a moderate score
 * corroborated by the same page, component or console error; and never when the two title lines carry
 * different identifying numbers (versions, error codes) or are templated siblings ("Backport X to
 * branch-3.2" / "… to branch-3.3").
 */
import type { Features } from './features'
import { words } from './tokenize'

export interface Thresholds {
  /** Attach on this blended score alone. */
  strong: number
  /** Attach on this score when a corroborating signal agrees. */
  moderate: number
  /**
   * Below the merge bars and at least this score (a pair no veto refused): the lead is suggested to a
   * person instead of merged (CONTRACT.md "Duplicate suggestions").
   */
  suggest: number
}

/**
 * Tuned on both corpora (test/fixtures/dedup-corpus.json, test/fixtures/real-corpus.json) for merge
 * precision first (bench/cluster.ts). An App's own thresholds start above these (see calibrate.ts).
 */
export const DEFAULT_THRESHOLDS: Thresholds = { strong: 0.42, moderate: 0.32, suggest: 0.3 }

/** What the merge rules compare besides the score (features of a new report, or a stored one). */
export interface MergeSignals {
  title: string
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

/** `suggest`: not sure enough to merge, close enough to offer the lead to a person (score ≥ `Thresholds.suggest`). */
export type Verdict = { attach: true; reason: string } | { attach: false; reason: string; suggest?: boolean }

/** Title tokens as typed (case kept: an inner capital marks a name), trailing punctuation dropped. */
function titleTokens(title: string): string[] {
  return title.match(/[A-Za-z0-9][\w.\-/+#]*[A-Za-z0-9+#]|[A-Za-z0-9]/g) ?? []
}

/** A title's tokens and where each lowercased one last occurs. */
interface TitleParts {
  tokens: string[]
  positions: Map<string, number>
}

/** Titles seen lately: a report is compared with up to 15 candidates, and a lead's title with many reports. */
const titles = new Map<string, TitleParts>()

function titleParts(title: string): TitleParts {
  let parts = titles.get(title)
  if (!parts) {
    const tokens = titleTokens(title)
    parts = { tokens, positions: new Map(tokens.map((t, i) => [t.toLowerCase(), i])) }
    if (titles.size >= 4096) titles.clear()
    titles.set(title, parts)
  }
  return parts
}

/** A token that names a thing rather than says something: a version, a module, a product, an OS. */
function nameLike(token: string, position: number): boolean {
  return /\d|[-_./+#]/.test(token) || /[A-Z]/.test(token.slice(1)) || (position > 0 && /^[A-Z]/.test(token))
}

/**
 * Templated siblings: two titles ≥ 60 % identical that swap one or two name-like tokens ("Backport X
 * to branch-3.2" / "branch-3.3", "Build fails on Centos 7" / "on Centos 8", "module-a build fails" /
 * "module-b build fails"). Projects file one issue per branch, platform or module on purpose; their
 * texts are near-identical, so no score can tell them apart — only the substituted name can.
 */
export function templatedSiblings(a: string, b: string): boolean {
  // One title twice: no token differs (what the rules below conclude, without the work).
  if (a === b) return false
  const { tokens: ta, positions: la } = titleParts(a)
  const { tokens: tb, positions: lb } = titleParts(b)
  if (la.size < 3 || lb.size < 3) return false
  const onlyA = [...la.keys()].filter((t) => !lb.has(t))
  const onlyB = [...lb.keys()].filter((t) => !la.has(t))
  const shared = la.size - onlyA.length
  if (shared / Math.max(la.size, lb.size) < 0.6) return false
  if (onlyA.length < 1 || onlyA.length > 2 || onlyB.length < 1 || onlyB.length > 2) return false
  // Inflections, stop words and the synonym table make no substitution ("crashes" / "crashed").
  const wa = new Set(words(onlyA.join(' ')))
  const wb = new Set(words(onlyB.join(' ')))
  const content = wa.size > 0 && wb.size > 0
  if (content && [...wa].every((w) => wb.has(w)) && [...wb].every((w) => wa.has(w))) return false
  // One word swapped for another in an otherwise identical title names another thing ("cache build
  // fails" / "cli build fails"); otherwise at least one swapped token per side must look like a name.
  if (content && onlyA.length === 1 && onlyB.length === 1) return true
  const named = (only: string[], tokens: string[], pos: Map<string, number>) =>
    only.some((t) => {
      const i = pos.get(t)!
      return nameLike(tokens[i], i)
    })
  return named(onlyA, ta, la) && named(onlyB, tb, lb)
}

/**
 * The rules that refuse a merge whatever the score (numbers, versions, templated titles, polarity), or
 * null. Apart from `decide` so a caller can skip computing a costly score for a pair that is refused anyway.
 */
export function veto(query: CandidateView['features'], candidate: CandidateView['features']): Verdict | null {
  if (numbersVeto(query.firstNumbers, candidate.firstNumbers)) return { attach: false, reason: 'different numbers in titles' }
  if (disjoint(query.versions, candidate.versions)) return { attach: false, reason: 'different versions in titles' }
  if (templatedSiblings(query.title, candidate.title)) return { attach: false, reason: 'templated sibling titles (a different name substituted)' }
  if (query.polarity && candidate.polarity && query.polarity !== candidate.polarity) return { attach: false, reason: 'opposite symptoms (too often vs never)' }
  return null
}

export function decide(query: CandidateView['features'], candidate: CandidateView['features'], score: number, t: Thresholds = DEFAULT_THRESHOLDS): Verdict {
  return veto(query, candidate) ?? decideOnScore(query, candidate, score, t)
}

/** A very short report matches too much: it merges only on near-identical wording. */
const shortExtra = (query: CandidateView['features'], candidate: CandidateView['features']): number =>
  Math.min(query.distinctWords, candidate.distinctWords) < SHORT_REPORT_WORDS ? SHORT_REPORT_EXTRA : 0

/**
 * True when `score` alone attaches the pair (once `veto` let it through): a higher score cannot change
 * that, so a caller may skip computing one (a cluster's centroid score only ever raises the score).
 */
export function strongEnough(query: CandidateView['features'], candidate: CandidateView['features'], score: number, t: Thresholds = DEFAULT_THRESHOLDS): boolean {
  return score >= t.strong + shortExtra(query, candidate)
}

/** `decide` for a pair `veto` let through: the score against the (possibly raised) thresholds. */
export function decideOnScore(query: CandidateView['features'], candidate: CandidateView['features'], score: number, t: Thresholds = DEFAULT_THRESHOLDS): Verdict {
  const extra = shortExtra(query, candidate)
  if (score >= t.strong + extra) return { attach: true, reason: `strong similarity ${score.toFixed(2)}` }
  const agree = corroboration(query, candidate)
  if (score >= t.moderate + extra && agree.length > 0) return { attach: true, reason: `similarity ${score.toFixed(2)} with same ${agree.join(', ')}` }
  if (score >= t.suggest + extra) return { attach: false, suggest: true, reason: `similarity ${score.toFixed(2)} below the merge bar ${(t.strong + extra).toFixed(2)}` }
  return { attach: false, reason: `similarity ${score.toFixed(2)} too low` }
}

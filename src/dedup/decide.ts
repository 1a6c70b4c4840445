/**
 * The merge decision, in two tiers. Precision comes first: a wrong automatic merge hides a distinct bug
 * behind another one, a missed merge only costs a person one look. A report merges into a lead only on
 * a sure score (the merge bar), or a lesser one corroborated by the same component, console error or
 * specific title, or (halfway up) by its arrival close to the lead where the App's duplicates come in
 * bursts; below that, down to a floor, the lead is suggested to a person. The vetoes
 * (vetoes.ts) refuse both; a merge block turns a merge into a suggestion. docs/triage.md has the bars
 * and their measured figures.
 */
import type { Features } from './features'
import { words } from './tokenize'
import { sharedIdentifier } from './shared-identifier'
import { ARRIVAL_CORROBORATES } from './arrival-locality'
import { differentNumbers, differentTests, disjointVersions, nameAddedOnOneSide, nameVariant, numbersVeto, oppositePolarity, redactedInTitles, scopeDifference, sharedNames, oneSlotSwapped, templatedSiblings } from './vetoes'

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
 * The floors of every App's bars (calibrate.ts only raises the merge bars). 0.75: on a held-out set of
 * real public bug reports almost every automatic merge above it was right, while the former
 * calibrated bars (0.45–0.6) joined different bugs two times in three. The corroborated bar and the
 * suggestion floor were checked on the tuning and evaluation corpora (bench/cluster.ts).
 */
export const DEFAULT_THRESHOLDS: Thresholds = { strong: 0.75, moderate: 0.55, suggest: 0.3 }

/** What the merge rules compare besides the score (features of a new report, or a stored one). */
export interface MergeSignals {
  title: string
  firstNumbers: readonly string[]
  versions: ReadonlySet<string>
  polarity: Features['polarity']
  distinctWords: number
  page: string | null
  component: string | null
  /** Console-error fingerprints, the newest first. */
  errorFps: readonly string[]
  stackFp: string | null
  /** The title is one many other leads of the App carry (signal-spread.ts): no evidence, and the title rules are blind. */
  genericTitle?: boolean
  /** More than a few other reports of the App have this title (signal-spread.ts): the title is no evidence. */
  commonTitle?: boolean
}

export interface CandidateView {
  features: MergeSignals
  wordScore: number
  text: string
}

/** Content words a title needs before two identical ones count as evidence ("Build fails" does not). */
export const TITLE_MATCH_WORDS = 5

/**
 * Two identical, specific titles (≥ `TITLE_MATCH_WORDS` content words, no redacted value): people who
 * hit one bug often type one summary and then add different details. Generic titles ("Build fails")
 * are left out, and the vetoes have already compared the titles' numbers and names.
 */
export function titleMatch(a: CandidateView['features'], b: CandidateView['features']): boolean {
  if (a.title.toLowerCase() !== b.title.toLowerCase() || a.title.includes('[REDACTED:')) return false
  // Typed words, not their parts: "OffsetCommitter.decode() fails: ArrayIndexOutOfBoundsException" is
  // three (a class, a verb, an exception: what every bug of that component says).
  let n = 0
  for (const token of a.title.split(/\s+/)) if (words(token).length > 0 && ++n >= TITLE_MATCH_WORDS) return true
  return false
}

/** Typed content words each title needs before a near-identical pair of titles counts as evidence. */
export const NEAR_TITLE_WORDS = TITLE_MATCH_WORDS

/** Whitespace-separated tokens of a title that hold a content word (an identifier counts once). */
function typedWords(title: string): number {
  let n = 0
  for (const token of title.split(/\s+/)) if (words(token).length > 0) n++
  return n
}
/** The share of their content words (stemmed) two near-identical titles hold in common, at least. */
export const NEAR_TITLE_OVERLAP = 0.7

/**
 * Two near-identical, specific titles: at least NEAR_TITLE_WORDS typed content words each, and at least
 * NEAR_TITLE_OVERLAP of their stemmed content words in common (Jaccard). People who hit
 * one bug type nearly one summary ("Eclipse hangs when opening a large XML file" / "Eclipse hangs on
 * opening large XML files"). As a corroboration at the corroborated bar, over six arrival orders
 * (bench/cluster.ts): automatic-merge recall 0.037 → 0.095 on the evaluation corpus (none wrong),
 * 0.133 → 0.138 on the real Eclipse reports (wrong attachments 0.29 % as before), 0.028 → 0.031 on the
 * real Firefox ones (0.08 → 0.10 %). At an overlap of 0.6 it brought wrong merges (Firefox, one order:
 * 7 of 26 added), and counting an identifier's parts as words let generic identical titles through.
 * The vetoes have already compared the titles' numbers, versions, scopes and swapped names.
 */
export function nearTitle(a: CandidateView['features'], b: CandidateView['features']): boolean {
  if (a.title.includes('[REDACTED:') || b.title.includes('[REDACTED:')) return false
  // As specific as `titleMatch` asks: typed words, not an identifier's parts ("OffsetCommitter.decode()
  // fails: ArrayIndexOutOfBoundsException" is three, what every bug of that component says).
  if (typedWords(a.title) < NEAR_TITLE_WORDS || typedWords(b.title) < NEAR_TITLE_WORDS) return false
  const x = new Set(words(a.title))
  const y = new Set(words(b.title))
  let shared = 0
  for (const w of x) if (y.has(w)) shared++
  return shared / (x.size + y.size - shared) >= NEAR_TITLE_OVERLAP
}

/**
 * Which signals other than the score agree between the two reports. The same page alone does not
 * corroborate: "same page, another bug" is the most common look-alike (measured on the corpus, it
 * brought most wrong merges). It counts only alongside the same component or console error.
 * `reportsHolding` (the App's index: how many reports hold a word) lets a specific identifier both
 * titles name corroborate (shared-identifier.ts); without it, none does.
 */
export function corroboration(a: CandidateView['features'], b: CandidateView['features'], reportsHolding?: (word: string) => number): string[] {
  const out: string[] = []
  if (a.component && a.component === b.component) out.push('component')
  if (a.errorFps.some((e) => b.errorFps.includes(e))) out.push('consoleError')
  if (a.stackFp && a.stackFp === b.stackFp) out.push('stack trace')
  if (out.length > 0 && a.page && a.page === b.page) out.push('page')
  // A title many leads or reports share (signal-spread.ts) says nothing of which bug a report is.
  if (a.genericTitle || a.commonTitle) return out
  if (titleMatch(a, b)) out.push('title')
  else if (nearTitle(a, b)) out.push('near title')
  else if (reportsHolding && sharedIdentifier(a.title, b.title, reportsHolding)) out.push('identifier')
  return out
}

/** Reports with fewer distinct content words than this ("search broken") need a much higher score. */
export const SHORT_REPORT_WORDS = 4
export const SHORT_REPORT_EXTRA = 0.2
/** The highest bar a short report's extra may raise to: near-identical wording always clears it. */
export const SHORT_REPORT_CEILING = 0.97

/** `suggest`: not sure enough to merge, close enough to offer the lead to a person (score ≥ `Thresholds.suggest`). */
export type Verdict = { attach: true; reason: string } | { attach: false; reason: string; suggest?: boolean }

/**
 * The vetoes (vetoes.ts): the pair describes different cases whatever the score, so it is neither
 * merged nor suggested (a person would only reject it). Apart from `decide` so a caller can skip
 * computing a costly score for a pair that is refused anyway.
 */
export function veto(query: CandidateView['features'], candidate: CandidateView['features']): Verdict | null {
  if (differentNumbers(query, candidate)) return { attach: false, reason: 'veto: different numbers in titles' }
  if (disjointVersions(query.versions, candidate.versions)) return { attach: false, reason: 'veto: different versions in titles' }
  if (templatedSiblings(query.title, candidate.title)) return { attach: false, reason: 'veto: templated sibling titles (one name swapped)' }
  if (scopeDifference(query.title, candidate.title) === 'sibling') return { attach: false, reason: 'veto: same title under another scope' }
  if (oppositePolarity(query.polarity, candidate.polarity)) return { attach: false, reason: 'veto: opposite symptoms (too often vs never)' }
  return null
}

/**
 * The merge blocks (vetoes.ts): the pair may be one bug, but the titles cannot show it with
 * confidence, so a score high enough to merge only suggests the lead to a person.
 */
export function mergeBlock(query: CandidateView['features'], candidate: CandidateView['features']): string | null {
  if (scopeDifference(query.title, candidate.title) === 'one-sided') return 'a scope on one title only'
  if (redactedInTitles(query.title, candidate.title)) return 'a redacted value in a title'
  if (nameAddedOnOneSide(query.title, candidate.title)) return 'a name on one title only'
  if (nameVariant(query.title, candidate.title)) return 'one name written two ways'
  if (differentTests(query.title, candidate.title)) return 'different tests named'
  if (oneSlotSwapped(query.title, candidate.title)) return 'one template, another word in it'
  if (query.genericTitle && query.title.toLowerCase() === candidate.title.toLowerCase()) return 'a title many reports share'
  return null
}

export { numbersVeto, templatedSiblings }

/** The verdict on one pair: a veto, else the score against the bars (`decideOnScore`). */
export function decide(query: CandidateView['features'], candidate: CandidateView['features'], score: number, t: Thresholds = DEFAULT_THRESHOLDS): Verdict {
  return veto(query, candidate) ?? decideOnScore(query, candidate, score, t)
}

/**
 * The bar a short report's score must clear. A very short report matches too much: it merges only on
 * near-identical wording. Capped at `SHORT_REPORT_CEILING`: a raised bar plus the extra (a new App's 0.85 +
 * 0.2) would pass 1, and two identical short reports ("Export is broken", twice) would never merge.
 */
const barFor = (query: CandidateView['features'], candidate: CandidateView['features'], bar: number): number =>
  Math.min(query.distinctWords, candidate.distinctWords) < SHORT_REPORT_WORDS ? Math.min(bar + SHORT_REPORT_EXTRA, Math.max(bar, SHORT_REPORT_CEILING)) : bar

/**
 * True when `score` alone attaches the pair (once `veto` let it through): a higher score cannot change
 * that, so a caller may skip computing one (a cluster's centroid score only ever raises the score).
 */
export function strongEnough(query: CandidateView['features'], candidate: CandidateView['features'], score: number, t: Thresholds = DEFAULT_THRESHOLDS): boolean {
  return score >= barFor(query, candidate, t.strong)
}

/**
 * A verdict reached through one of a lead's duplicates (`viaMember`), held against the lead itself: a
 * veto on the lead refuses the merge *and* the suggestion; a merge block on it turns a merge into a
 * suggestion (its reason keeps the member's score).
 */
export function confirmOnLead(query: CandidateView['features'], lead: CandidateView['features'], viaMember: Verdict, score: number): Verdict {
  if (!viaMember.attach && !viaMember.suggest) return viaMember
  const refused = veto(query, lead)
  if (refused) return refused
  const block = viaMember.attach ? mergeBlock(query, lead) : null
  return block ? { attach: false, suggest: true, reason: `similarity ${score.toFixed(2)}; ${likeness(query, lead)}; not merged: ${block}` } : viaMember
}

/** Why a pair is alike, in a few words: identical titles, or the names both titles carry. */
function likeness(query: CandidateView['features'], candidate: CandidateView['features']): string {
  if (query.title.toLowerCase() === candidate.title.toLowerCase()) return 'same title'
  const names = sharedNames(query.title, candidate.title)
  return names.length > 0 ? `titles share ${names.join(', ')}` : 'alike texts'
}

/**
 * What a caller knows of a pair beyond the two reports' own signals (clusterer.ts), for `decideOnScore`.
 * `block`: a merge block beyond the titles' (the cluster's arrival), checked after them.
 * `reportsHolding`: `corroboration`'s. `arrival`: what the candidate's arrival close to the report adds
 * in the App (arrival-locality.ts `recencyBonus`; 0 where the App's arrival order says nothing).
 */
export interface PairContext {
  block?: string | null
  reportsHolding?: (word: string) => number
  arrival?: number
}

/**
 * `decide` for a pair `veto` let through: the score against the (possibly raised) bars. Its reason says
 * the score, the bar it cleared and what the two reports share; a merge block turns a merge into a
 * suggestion and says which. A pair no signal corroborates merges at the arrival bar when it arrived
 * close to the other in an App whose duplicates come in bursts (`arrivalCorroborates`).
 */
export function decideOnScore(query: CandidateView['features'], candidate: CandidateView['features'], score: number, t: Thresholds = DEFAULT_THRESHOLDS, context: PairContext = {}): Verdict {
  const strong = barFor(query, candidate, t.strong)
  const moderate = barFor(query, candidate, t.moderate)
  const suggest = barFor(query, candidate, t.suggest)
  const s = score.toFixed(2)
  let merge: string | null = null
  if (score >= strong) merge = `similarity ${s} ≥ merge bar ${strong.toFixed(2)}`
  else if (score >= moderate) {
    const agree = corroboration(query, candidate, context.reportsHolding)
    const arrival = context.arrival ?? 0
    if (agree.length > 0) merge = `similarity ${s} ≥ ${moderate.toFixed(2)} with same ${agree.join(', ')}`
    else if (arrivalCorroborates(score, moderate, strong, arrival)) merge = `similarity ${s} ≥ ${arrivalBar(moderate, strong).toFixed(2)}, arrived close to it (+${arrival.toFixed(2)})`
  }
  if (merge) {
    const blocked = mergeBlock(query, candidate) ?? context.block ?? null
    if (!blocked) return { attach: true, reason: `${merge}; ${likeness(query, candidate)}; no veto` }
    return { attach: false, suggest: true, reason: `similarity ${s}; ${likeness(query, candidate)}; not merged: ${blocked}` }
  }
  if (score >= suggest) return { attach: false, suggest: true, reason: `similarity ${s} < merge bar ${strong.toFixed(2)}; ${likeness(query, candidate)}` }
  return { attach: false, reason: `similarity ${s} too low` }
}

/** Halfway between the corroborated bar and the merge bar: where arrival alone may corroborate. */
export const arrivalBar = (moderate: number, strong: number): number => (moderate + strong) / 2

/**
 * Whether the pair's arrival corroborates its score: at least `arrivalBar` and an arrival bonus of at
 * least `ARRIVAL_CORROBORATES` (arrival-locality.ts). Arrival is evidence independent of the text: a
 * bug appears with a release and its reports come in a burst. At the corroborated bar itself it doubled
 * the wrong attachments (a burst holds several bugs of one release); halfway to the merge bar, on the
 * real development corpora in filing order, suggestions there were 96-100 % right (bench/README.md).
 */
export function arrivalCorroborates(score: number, moderate: number, strong: number, arrival: number): boolean {
  return arrival >= ARRIVAL_CORROBORATES && score >= arrivalBar(moderate, strong)
}

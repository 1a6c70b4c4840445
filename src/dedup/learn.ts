/**
 * Learning an App's merge bars from the people who triage it (docs/triage.md "Learning from the people
 * who triage"). Pure: the stored decisions in, what they teach out; calibrate.ts applies it.
 *
 * - An unmerge of an automatic merge raises the App's bars at once: both merge bars go to at least that
 *   merge's score + `LEARNING.raiseAbove`, never down (a person said this score was not sure enough),
 *   and never above `LEARNING.highestRaise` (identical reports keep merging).
 * - The bars only go down when the decisions prove a lower bar: among the decisions scoring at least a
 *   candidate bar b, confirmed / (confirmed + rejected + unmerged) ≥ `LEARNING.precision`, with at least
 *   `LEARNING.minDecisions` of them, at b and at every candidate above it (read from the top down: the
 *   first candidate that fails stops the descent). Never below `LEARNING.lowestBar`.
 * - Rejected suggestions raise the App's suggestion floor, climbing from the lowest decided score: just
 *   above each run of `LEARNING.suggestMinBelow` decided suggestions of which fewer than
 *   `LEARNING.suggestConfirmedBelow` were confirmed (people read them and said no), until the first run
 *   that is not. Only ever up from the calibrated floor: nothing is suggested below the floor, so no
 *   decision can show a lower one.
 * - Nothing learned (a new App, or too few decisions): the calibrated bars, which start conservative.
 */
import type { Learned } from './calibrate'
import type { Thresholds } from './decide'

/** What a person decided about a pair clustering scored (the pair's score). */
export type DecisionKind = 'confirmed' | 'rejected' | 'unmerged'
export const DECISION_KINDS: readonly DecisionKind[] = ['confirmed', 'rejected', 'unmerged']

export interface Decision {
  kind: DecisionKind
  score: number
}

/** The learning rule's knobs (docs/triage.md explains each). */
export const LEARNING = {
  /** How far above an undone automatic merge's score the bars go. */
  raiseAbove: 0.02,
  /**
   * The highest an unmerge raises the bars. Below 1: one unmerge of an identical pair says that pair was
   * wrong (it is never merged again: an unmerged report is left alone), not that identity is no evidence;
   * a raise to 1.02 turned automatic merging off for the whole App.
   */
  highestRaise: 0.95,
  /**
   * The share of right decisions at or above a bar before automatic merges may start there. 0.95 let
   * wrong attachments past the 0.3 % bound: with a person answering every suggestion on the real
   * development corpora (`bun bench/cluster.ts --quality`, "with a triager"), Eclipse proved bars down to
   * 0.62 and 1.0 % of its reports went to another bug's lead; at 0.98 of at least 50 decisions the bars held (0.20-0.33 %, as without a triager).
   */
  precision: 0.98,
  /** Decisions needed at or above a bar before it counts as proven (98 % of 50: one may be wrong). */
  minDecisions: 50,
  /** The lowest merge bar decisions can bring an App to. */
  lowestBar: 0.5,
  /** The newest decisions per App that count (older ones describe an App that has moved on). */
  window: 500,
  /** The decided suggestions just below a score that judge whether the suggestion floor climbs to it. */
  suggestMinBelow: 10,
  /**
   * The confirmed share below which decided suggestions raise the floor: a suggestion is a hint a person
   * checks, worth showing while one in five is right; below that it is noise. A third was tried: with a
   * person answering every suggestion on the real development corpora (`bun bench/cluster.ts --quality`,
   * "with a triager"), near the calibrated floor about a third are right, so the floor climbed to
   * 0.52-0.56 and the suggestion hit rate halved (Eclipse 0.49 → 0.25) for suggestions 88 % right.
   */
  suggestConfirmedBelow: 0.2,
}

/** What an App's decisions teach, whatever its calibration is now (`learnedFor` applies it to the bars). */
export interface Lesson {
  /** Both merge bars at least this (0: no automatic merge was undone). */
  raiseTo: number
  /** The lowest proven bar, or null when the decisions prove none. */
  provenBar: number | null
  /** The suggestion floor at least this (rejected suggestions below it), or null: nothing raised it. */
  suggestFloor: number | null
  counts: Record<DecisionKind, number>
}

export const NO_LESSON: Lesson = { raiseTo: 0, provenBar: null, suggestFloor: null, counts: { confirmed: 0, rejected: 0, unmerged: 0 } }

const round = (n: number): number => Math.round(n * 1000) / 1000

/** A reset's counts (`kind`, `n` rows, any order) as one record per kind; unknown kinds are ignored. */
export function decisionCounts(rows: readonly { kind: string; n: number }[]): Record<DecisionKind, number> {
  const counts: Record<DecisionKind, number> = { confirmed: 0, rejected: 0, unmerged: 0 }
  for (const r of rows) if (r.kind in counts) counts[r.kind as DecisionKind] += r.n
  return counts
}

/** Both merge bars at least this after an automatic merge scoring `score` is undone (capped below 1). */
export function raiseAfterUnmerge(score: number): number {
  return Math.min(round(score + LEARNING.raiseAbove), LEARNING.highestRaise)
}

/** The lesson of an App's decisions (at most `LEARNING.window`, any order). */
export function lessonOf(decisions: readonly Decision[]): Lesson {
  const counts = { confirmed: 0, rejected: 0, unmerged: 0 }
  let raiseTo = 0
  const valid: Decision[] = []
  for (const d of decisions.slice(0, LEARNING.window)) {
    if (!Number.isFinite(d.score) || !(d.kind in counts)) continue
    counts[d.kind]++
    valid.push(d)
    if (d.kind === 'unmerged') raiseTo = Math.max(raiseTo, raiseAfterUnmerge(d.score))
  }
  // Best score first: each prefix is the set of decisions at or above its last score.
  valid.sort((a, b) => b.score - a.score)
  let provenBar: number | null = null
  let right = 0
  for (let i = 0; i < valid.length; i++) {
    if (valid[i].kind === 'confirmed') right++
    // Ties: a bar at this score takes every decision with it.
    if (i + 1 < valid.length && valid[i + 1].score === valid[i].score) continue
    const n = i + 1
    if (n < LEARNING.minDecisions) continue
    if (right / n < LEARNING.precision) break
    provenBar = round(valid[i].score)
  }
  return { raiseTo, provenBar, suggestFloor: suggestFloorOf(valid), counts }
}

/**
 * The suggestion floor the decided suggestions (confirmed, rejected) call for, or null. Read from the
 * lowest score up, as a person would raise the bar step by step: while the `suggestMinBelow` decisions
 * ending at a score were fewer than `suggestConfirmedBelow` confirmed, the floor goes just above that
 * score (`FLOOR_STEP`); the first window that is not mostly rejections stops the climb. The floor lands
 * just above what people rejected, never at a distant next decision.
 */
function suggestFloorOf(decisions: readonly Decision[]): number | null {
  // Ties: confirmations last, so the run ending at a score holds them, whatever order they came in.
  const decided = decisions.filter((d) => d.kind !== 'unmerged').sort((a, b) => a.score - b.score || (a.kind === 'confirmed' ? 1 : 0) - (b.kind === 'confirmed' ? 1 : 0))
  const w = LEARNING.suggestMinBelow
  let floor: number | null = null
  let confirmed = 0
  for (let i = 0; i < decided.length; i++) {
    if (decided[i].kind === 'confirmed') confirmed++
    if (i >= w && decided[i - w].kind === 'confirmed') confirmed--
    // Ties: the window ends with the last decision of its score (a floor never splits one score).
    if (i + 1 < w || (i + 1 < decided.length && decided[i + 1].score === decided[i].score)) continue
    if (confirmed / w >= LEARNING.suggestConfirmedBelow) break
    // Never above a confirmed suggestion ending the run: the floor goes just above rejections only.
    if (decided[i].kind === 'rejected') floor = round(decided[i].score + FLOOR_STEP)
  }
  return floor
}

/** How far above the highest rejected score of a window the learned suggestion floor goes. */
const FLOOR_STEP = 0.001

/**
 * How the App's calibrated bars (`plain`: calibrate without anything learned) move: raised to `raiseTo`,
 * then down to the proven bar when it is lower (never below `LEARNING.lowestBar`).
 */
export function learnedFor(lesson: Lesson, plain: Thresholds): Learned {
  const suggestFloor = lesson.suggestFloor ?? 0
  const raised = Math.max(plain.strong, lesson.raiseTo)
  if (lesson.provenBar === null || lesson.provenBar >= raised) return { mergeShift: 0, mergeFloor: lesson.raiseTo, suggestFloor }
  const lowered = Math.max(lesson.provenBar, LEARNING.lowestBar)
  if (lowered >= raised) return { mergeShift: 0, mergeFloor: lesson.raiseTo, suggestFloor }
  return { mergeShift: round(Math.min(0, lowered - plain.strong)), mergeFloor: Math.min(lesson.raiseTo, lowered), suggestFloor }
}

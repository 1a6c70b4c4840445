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
 * - Rejected suggestions raise the App's suggestion floor: it goes up to the highest score `b` below
 *   which at least `LEARNING.suggestMinBelow` suggestions were decided and fewer than
 *   `LEARNING.suggestConfirmedBelow` of them were confirmed (people read them and said no). Only ever up
 *   from the calibrated floor: nothing is suggested below the floor, so no decision can show a lower one.
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
  /** The share of right decisions at or above a bar before automatic merges may start there. */
  precision: 0.95,
  /** Decisions needed at or above a bar before it counts as proven. */
  minDecisions: 20,
  /** The lowest merge bar decisions can bring an App to. */
  lowestBar: 0.5,
  /** The newest decisions per App that count (older ones describe an App that has moved on). */
  window: 500,
  /** Decided suggestions below a score before they can raise the suggestion floor to it. */
  suggestMinBelow: 10,
  /**
   * The confirmed share below which decided suggestions raise the floor: a suggestion is a hint a person
   * checks, worth showing while about one in three is right; below that it is mostly noise.
   */
  suggestConfirmedBelow: 1 / 3,
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
 * lowest score up: a candidate floor `b` (a decision's score) qualifies when the decisions scoring below
 * it number at least `suggestMinBelow` and fewer than `suggestConfirmedBelow` of them were confirmed; the
 * highest qualifying `b` is the floor (more rejections raise it further).
 */
function suggestFloorOf(decisions: readonly Decision[]): number | null {
  const decided = decisions.filter((d) => d.kind !== 'unmerged').sort((a, b) => a.score - b.score)
  let floor: number | null = null
  let confirmed = 0
  for (let i = 0; i < decided.length; i++) {
    // `i` decisions score below decided[i] (ties: a floor at this score keeps them all above it).
    if (i >= LEARNING.suggestMinBelow && decided[i].score > decided[i - 1].score && confirmed / i < LEARNING.suggestConfirmedBelow) floor = round(decided[i].score)
    if (decided[i].kind === 'confirmed') confirmed++
  }
  return floor
}

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

/**
 * Learning an App's merge bars from people's decisions (src/dedup/learn.ts, applied by calibrate.ts):
 * table tests of the rule docs/triage.md "Learning from the people who triage" states, including its
 * worked example.
 */
import { describe, expect, test } from 'bun:test'
import { LEARNING, learnedFor, lessonOf, NO_LESSON, type Decision } from '../src/dedup/learn'
import { CALIBRATION, calibrate, NOTHING_LEARNED, ScoreHistory } from '../src/dedup/calibrate'
import { DEFAULT_THRESHOLDS, type Thresholds } from '../src/dedup/decide'

const many = (n: number, kind: Decision['kind'], from: number, step = 0.001): Decision[] => Array.from({ length: n }, (_, i) => ({ kind, score: from + i * step }))
const PLAIN: Thresholds = { strong: 0.75, moderate: 0.6, suggest: 0.3 }

describe('lessonOf: what the decisions teach', () => {
  const cases: [string, Decision[], { raiseTo: number; provenBar: number | null }][] = [
    ['nothing decided: nothing learned', [], { raiseTo: 0, provenBar: null }],
    ['one unmerge of an automatic merge at 0.81: bars at least 0.83', [{ kind: 'unmerged', score: 0.81 }], { raiseTo: 0.83, provenBar: null }],
    ['two unmerges: the higher one counts', [{ kind: 'unmerged', score: 0.7 }, { kind: 'unmerged', score: 0.9 }], { raiseTo: 0.92, provenBar: null }],
    ['49 confirmations: one short of proof', many(49, 'confirmed', 0.6), { raiseTo: 0, provenBar: null }],
    ['50 confirmations from 0.6: proven down to 0.6', many(50, 'confirmed', 0.6), { raiseTo: 0, provenBar: 0.6 }],
    ['50 right above 0.65, then a rejection at 0.62: 50 of 51 at 0.62 (98.0 %), still proven', [...many(50, 'confirmed', 0.65), { kind: 'rejected', score: 0.62 }], { raiseTo: 0, provenBar: 0.62 }],
    ['50 right above 0.65, then two rejections at 0.62 (96.2 %): the descent stops at 0.65', [...many(50, 'confirmed', 0.65), { kind: 'rejected', score: 0.62 }, { kind: 'rejected', score: 0.62 }], { raiseTo: 0, provenBar: 0.65 }],
    ['half rejected: nothing proven', [...many(50, 'confirmed', 0.6), ...many(50, 'rejected', 0.6)], { raiseTo: 0, provenBar: null }],
    ['an unmerge counts against the proof too', [...many(19, 'confirmed', 0.7), { kind: 'unmerged', score: 0.8 }, { kind: 'unmerged', score: 0.8 }], { raiseTo: 0.82, provenBar: null }],
    // issue 36 item 5: one unmerge of an identical pair says the pair was wrong, not that identity is no evidence
    ['an unmerge of an identical pair (1.00): bars at least LEARNING.highestRaise, never above 1', [{ kind: 'unmerged', score: 1 }], { raiseTo: LEARNING.highestRaise, provenBar: null }],
    ['an unmerge at 0.94: capped at LEARNING.highestRaise too', [{ kind: 'unmerged', score: 0.94 }], { raiseTo: LEARNING.highestRaise, provenBar: null }],
    ['scores that are not numbers are ignored', [{ kind: 'unmerged', score: NaN }, { kind: 'confirmed', score: Infinity }], { raiseTo: 0, provenBar: null }],
  ]
  for (const [name, decisions, want] of cases) {
    test(name, () => {
      const got = lessonOf(decisions)
      expect({ raiseTo: got.raiseTo, provenBar: got.provenBar }).toEqual(want)
    })
  }

  test('counts per kind; only the newest LEARNING.window decisions count', () => {
    const lesson = lessonOf([...many(3, 'confirmed', 0.5), ...many(2, 'rejected', 0.5), { kind: 'unmerged', score: 0.9 }])
    expect(lesson.counts).toEqual({ confirmed: 3, rejected: 2, unmerged: 1 })
    expect(lessonOf(many(LEARNING.window + 50, 'rejected', 0.5, 0)).counts.rejected).toBe(LEARNING.window)
  })
})

describe('learnedFor + calibrate: the App bars', () => {
  // A base whose calibration (a new App: no history) gives PLAIN, so the bars below are calibrate's own.
  const base: Thresholds = {
    strong: PLAIN.strong - CALIBRATION.learningRaise,
    moderate: PLAIN.moderate - CALIBRATION.learningRaise * CALIBRATION.corroboratedShare,
    suggest: PLAIN.suggest,
  }
  const history = new ScoreHistory()
  test('the base calibrates to the plain bars', () => {
    const plain = calibrate(base, history)
    expect(plain.strong).toBeCloseTo(PLAIN.strong, 9)
    expect(plain.moderate).toBeCloseTo(PLAIN.moderate, 9)
  })
  const bars = (lesson: ReturnType<typeof lessonOf>) => calibrate(base, history, learnedFor(lesson, calibrate(base, history)))
  const cases: [string, Decision[], { strong: number; moderate: number }][] = [
    ['nothing learned: the calibrated bars', [], { strong: 0.75, moderate: 0.6 }],
    ['an unmerge at 0.81 raises both bars to 0.83 at once', [{ kind: 'unmerged', score: 0.81 }], { strong: 0.83, moderate: 0.83 }],
    ['an unmerge below the bars (0.6, merged on corroboration) raises the corroborated bar only', [{ kind: 'unmerged', score: 0.6 }], { strong: 0.75, moderate: 0.62 }],
    ['proven at 0.65: both bars move down by 0.10', many(50, 'confirmed', 0.65), { strong: 0.65, moderate: 0.5 }],
    ['proven at 0.3: never below LEARNING.lowestBar', many(50, 'confirmed', 0.3), { strong: LEARNING.lowestBar, moderate: 0.35 }],
    ['proven at 0.9, above the bar: no change (proof never raises)', many(50, 'confirmed', 0.9), { strong: 0.75, moderate: 0.6 }],
    ['an unmerge of an identical pair: both bars 0.95, identical reports still merge', [{ kind: 'unmerged', score: 1 }], { strong: 0.95, moderate: 0.95 }],
    ['raised to 0.83, then 60 confirmations from 0.7 prove 0.7 (60 of 61): down to 0.7', [{ kind: 'unmerged', score: 0.81 }, ...many(60, 'confirmed', 0.7)], { strong: 0.7, moderate: 0.7 }],
  ]
  for (const [name, decisions, want] of cases) {
    test(name, () => {
      const got = bars(lessonOf(decisions))
      expect({ strong: Math.round(got.strong * 1000) / 1000, moderate: Math.round(got.moderate * 1000) / 1000 }).toEqual(want)
    })
  }

  test('after any number of unmerges, even of identical pairs, a score of 1 is above every merge bar', () => {
    const lesson = lessonOf([{ kind: 'unmerged', score: 1 }, { kind: 'unmerged', score: 0.999 }, { kind: 'unmerged', score: 0.97 }])
    const got = bars(lesson)
    expect(LEARNING.highestRaise).toBeLessThan(1)
    expect(got.strong).toBeLessThan(1)
    expect(got.moderate).toBeLessThan(1)
  })

  test('calibrate applies the shift and the floor to both merge bars; nothing learned changes nothing', () => {
    const history = new ScoreHistory()
    const plain = calibrate(DEFAULT_THRESHOLDS, history)
    expect(calibrate(DEFAULT_THRESHOLDS, history, NOTHING_LEARNED)).toEqual(plain)
    expect(calibrate(DEFAULT_THRESHOLDS, history, learnedFor(NO_LESSON, plain))).toEqual(plain)
    const raised = calibrate(DEFAULT_THRESHOLDS, history, { mergeShift: 0, mergeFloor: 0.95 })
    expect(raised.strong).toBe(0.95)
    expect(raised.moderate).toBe(0.95)
    const lowered = calibrate(DEFAULT_THRESHOLDS, history, { mergeShift: -0.05, mergeFloor: 0 })
    expect(lowered.strong).toBeCloseTo(plain.strong - 0.05, 6)
    expect(lowered.moderate).toBeCloseTo(plain.moderate - 0.05, 6)
  })
})

describe('rejected suggestions raise the suggestion floor (rule 4)', () => {
  const floor = (decisions: Decision[]) => lessonOf(decisions).suggestFloor
  const alternating = (n: number, from: number): Decision[] => Array.from({ length: n }, (_, i) => ({ kind: i % 2 ? 'rejected' : 'confirmed', score: from + i * 0.01 }))
  const cases: [string, Decision[], number | null][] = [
    ['nothing decided: not raised', [], null],
    ['nine rejections: one short of LEARNING.suggestMinBelow', many(9, 'rejected', 0.4, 0.01), null],
    ['ten rejections at 0.40-0.49: just above the highest, 0.491', many(10, 'rejected', 0.4, 0.01), 0.491],
    ['a confirmation above ten rejections stays above the floor', [...many(10, 'rejected', 0.4, 0.01), { kind: 'confirmed', score: 0.6 }], 0.491],
    ['2 of the 10 lowest confirmed (one in five): not noise, not raised', [...many(2, 'confirmed', 0.4, 0.01), ...many(8, 'rejected', 0.42, 0.01)], null],
    ["docs/triage.md's example: 12 rejected at 0.40-0.51, 3 confirmed at 0.55-0.57: from 0.511", [...many(12, 'rejected', 0.4, 0.01), ...many(3, 'confirmed', 0.55, 0.01)], 0.511],
    ['the climb stops at the first run that is not noise (2 of 10 confirmed), whatever lies above it', [...many(10, 'rejected', 0.3, 0.01), ...alternating(10, 0.4), ...many(10, 'rejected', 0.5, 0.01)], 0.411],
    ['mostly confirmed suggestions never raise it', many(30, 'confirmed', 0.35, 0.01), null],
    ['unmerges are not suggestions: they do not count here', [...many(10, 'unmerged', 0.8, 0.001), { kind: 'confirmed', score: 0.9 }], null],
    ['ties: a score with a confirmation never goes below the floor, whatever the order the decisions came in', [{ kind: 'confirmed', score: 0.45 }, ...many(10, 'rejected', 0.45, 0)], null],
    ['ties: eleven rejections at one score put the floor above it', many(11, 'rejected', 0.45, 0), 0.451],
  ]
  for (const [name, decisions, want] of cases) test(name, () => expect(floor(decisions)).toBe(want))

  test('calibrate: the floor raises the suggestion bar, never lowers it, never above the corroborated bar', () => {
    const history = new ScoreHistory()
    for (let i = 0; i < 40; i++) history.add(0.3)
    const plain = calibrate(DEFAULT_THRESHOLDS, history)
    const raised = calibrate(DEFAULT_THRESHOLDS, history, learnedFor(lessonOf([...many(10, 'rejected', 0.4, 0.01), { kind: 'confirmed', score: 0.52 }]), plain))
    expect(raised.suggest).toBe(0.491)
    expect(raised.strong).toBe(plain.strong)
    const low = calibrate(DEFAULT_THRESHOLDS, history, learnedFor(lessonOf([...many(10, 'rejected', 0.1, 0.001), { kind: 'confirmed', score: 0.12 }]), plain))
    expect(low.suggest).toBe(plain.suggest)
    const high = calibrate(DEFAULT_THRESHOLDS, history, learnedFor(lessonOf([...many(10, 'rejected', 0.6, 0.01), { kind: 'rejected', score: 0.74 }]), plain))
    expect(high.suggest).toBe(plain.moderate)
  })
})

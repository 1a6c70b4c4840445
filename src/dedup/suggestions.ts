/**
 * The rules of the second tier (docs/triage.md "Suggestions: the second tier"), shared by both storage
 * sides and by the API that serves them: what a stored suggestion points at now, when a merge by hand
 * confirms it, what an automatic merge records, and how an App's bars are shown.
 */
import type { MergeWhy, RootState } from './cluster-repo'
import { takesDuplicates, type Clusterer, type Verdict } from './clusterer'
import type { CalibrationSnapshot } from './calibrate'
import { arrivalBar, type Thresholds } from './decide'
import type { Lesson } from './learn'
import { corroboratingGap, LONG_AGO_LOCALITY, recencyBonus } from './arrival-locality'

/** What a merge by hand that confirmed no suggestion records: no score, no reason. */
export const MERGED_BY_HAND: MergeWhy = { score: null, reason: null }

/** What an automatic merge records on the duplicate: the verdict's score and reason. */
export const whyAutomatic = (v: Verdict): MergeWhy => ({ score: v.score ?? null, reason: v.reason })

/**
 * The lead a stored suggestion points at now, or null when it is no lead any more. A suggested lead
 * merged since into another lead is followed to that lead (duplicates never chain: one step); a lead
 * that no longer takes duplicates (archived, resolved, gone) is no suggestion.
 */
export function currentLeadOf(leadId: string, look: (id: string) => RootState | null): string | null {
  let id = leadId
  let state = look(id)
  if (state?.duplicate_of_id) {
    id = state.duplicate_of_id
    state = look(id)
  }
  if (!takesDuplicates(state)) return null
  return id
}

/** The suggestion as served for report `selfId` (null: none, or stale: see `currentLeadOf`; never the report itself). */
export function servedSuggestionLead(selfId: string, leadId: string | null, look: (id: string) => RootState | null): string | null {
  if (!leadId) return null
  const current = currentLeadOf(leadId, look)
  return current === selfId ? null : current
}

/** The stored suggestion's score when merging `r` into `leadId` confirms it, else null. */
export function confirmedSuggestion(
  r: { id: string; suggested_lead_id: string | null; suggested_score: number | null },
  leadId: string,
  look: (id: string) => RootState | null,
): { score: number } | null {
  if (r.suggested_score === null) return null
  return servedSuggestionLead(r.id, r.suggested_lead_id, look) === leadId ? { score: r.suggested_score } : null
}

/** An App's merge bars and what its people's decisions taught (GET /v1/apps/:id/triage, the dashboard). */
export interface TriageState {
  bars: { merge: number; corroboratedMerge: number; suggest: number }
  /**
   * Whether the App's duplicates come in bursts (arrival-locality.ts), and what that does: `mergeBar`,
   * the score from which a lead that arrived within `mergeWithin` (a share of the App's reports) of the
   * report takes it as an automatic merge (decide.ts `arrivalCorroborates`); both null where arrival is
   * too weak to corroborate one.
   */
  arrival: { locality: number; bonusAtMost: number; longAgoBlock: boolean; mergeBar: number | null; mergeWithin: number | null }
  learned: { raisedTo: number | null; provenBar: number | null; suggestRaisedTo: number | null; decisions: Lesson['counts'] }
  /** Asked with an automatic merge's score: the merge bars once that merge were undone. */
  afterUnmerge?: { merge: number; corroboratedMerge: number }
}

const round = (n: number): number => Math.round(n * 1000) / 1000

/** What the App's arrival order does to its ranking and merges (`TriageState.arrival`). */
function arrivalOf(t: Thresholds, locality: number): TriageState['arrival'] {
  const within = corroboratingGap(locality)
  return {
    locality,
    bonusAtMost: round(recencyBonus(0, locality)),
    longAgoBlock: locality >= LONG_AGO_LOCALITY,
    mergeBar: within === null ? null : round(arrivalBar(t.moderate, t.strong)),
    mergeWithin: within === null ? null : round(within),
  }
}

/**
 * THE App's bars as every reader shows them (API, dashboard, CLI): one function over the thresholds the
 * App's cluster service computes. `after`: the thresholds if an automatic merge were undone.
 */
export function triageStateOf(t: Thresholds, lesson: Lesson, locality: number, after?: Thresholds): TriageState {
  return {
    bars: { merge: round(t.strong), corroboratedMerge: round(t.moderate), suggest: round(t.suggest) },
    arrival: arrivalOf(t, locality),
    learned: { raisedTo: lesson.raiseTo > 0 ? lesson.raiseTo : null, provenBar: lesson.provenBar, suggestRaisedTo: lesson.suggestFloor, decisions: { ...lesson.counts } },
    ...(after ? { afterUnmerge: { merge: round(after.strong), corroboratedMerge: round(after.moderate) } } : {}),
  }
}

/**
 * The App's triage state as both clustering services serve it: its bars from the calibration the
 * clustering process stored (`stored`: every process and node shows the same bars), what its lesson
 * taught, and (`unmergeScore`) the bars once such an automatic merge were undone.
 */
export function appTriageState(
  core: Pick<Clusterer, 'shownThresholds' | 'shownLocality' | 'lessonFor' | 'thresholdsIfUnmerged'>,
  appId: string,
  stored: CalibrationSnapshot | null,
  unmergeScore?: number,
): TriageState {
  return triageStateOf(core.shownThresholds(appId, stored), core.lessonFor(appId), core.shownLocality(appId, stored), unmergeScore === undefined ? undefined : core.thresholdsIfUnmerged(appId, unmergeScore, stored))
}

/**
 * What a tracker's state means for the lead (docs/trackers.md "Pull"): the connection's state mapping
 * first (its keys are tracker state names, matched case-insensitively), then the state's category:
 * done → resolved, open → reopen (back to triage when the lead was resolved), canceled → ignore (a
 * "won't fix" is no fix: nothing moves, the state is shown; map its name to `resolved` to change that).
 */
import type { TrackerState } from '../../trackers/adapter'
import type { NewsAction } from './repo'

export const MAPPED_ACTIONS = ['resolved', 'reopen', 'ignore'] as const
export type StateMap = Record<string, NewsAction>

export function actionFor(state: TrackerState, stateMap: StateMap): NewsAction {
  const mapped = Object.hasOwn(stateMap, state.name.toLowerCase()) ? stateMap[state.name.toLowerCase()] : undefined
  if (mapped) return mapped
  return state.category === 'done' ? 'resolved' : state.category === 'open' ? 'reopen' : 'ignore'
}

/** The suggestions of a page of reports as served now (the API, the CLI, the dashboard read the same). */
import { servedSuggestionLead } from '../../dedup/suggestions'
import type { FeedbackRepo, ListRow } from './repo'

/**
 * The suggested lead each row shows now (src/dedup/suggestions.ts): its stored lead, followed to that
 * lead's lead when it was merged since; null when it no longer takes duplicates. At most two reads per
 * page, none when no row carries a suggestion.
 */
export async function suggestedLeadsOf(
  repo: Pick<FeedbackRepo, 'leadStates'>,
  orgId: string,
  rows: Pick<ListRow, 'id' | 'duplicateOfId' | 'suggestedLeadId'>[],
): Promise<Map<string, string | null>> {
  const out = new Map<string, string | null>()
  const stored = rows.filter((r) => r.suggestedLeadId && !r.duplicateOfId)
  if (stored.length === 0) return out
  const states = await repo.leadStates(orgId, [...new Set(stored.map((r) => r.suggestedLeadId!))])
  const roots = [...new Set([...states.values()].flatMap((s) => (s.duplicate_of_id && !states.has(s.duplicate_of_id) ? [s.duplicate_of_id] : [])))]
  if (roots.length > 0) for (const [id, state] of await repo.leadStates(orgId, roots)) states.set(id, state)
  for (const r of stored) out.set(r.id, servedSuggestionLead(r.id, r.suggestedLeadId, (id) => states.get(id) ?? null))
  return out
}

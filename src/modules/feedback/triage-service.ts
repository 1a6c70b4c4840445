/**
 * Triage by hand: similar reports, merge into a lead, unmerge. The tenant checks and the rules of what
 * may be merged live here; the clustering itself (and its events) is src/dedup/service.ts.
 */
import { ApiError } from '../../core/errors'
import type { ClusterPort } from '../../dedup/port'
import { MERGEABLE_STATUSES } from '../../dedup/steps'
import type { FeedbackRepo, FeedbackRow } from './repo'
import { isSanitized } from '../../sanitize/servable'
import type { AppsRepo } from '../apps/repo'
import type { TriageState } from '../../dedup/suggestions'
import type { DecisionKind } from '../../dedup/learn'
import { auditEntry, type ActedBy } from '../audit/entry'


/**
 * `feedback`: the process's feedback repository (services.ts), read here for the tenant and state checks;
 * `apps`: for an App's merge bars (its Org checked).
 */
export function createTriageService(feedback: FeedbackRepo, cluster: ClusterPort, apps: AppsRepo) {
  const repo = feedback

  /**
   * The report in the Org, its App's similarity index ready; 404 for another Org's id. A report the
   * worker has not sanitized yet is 409 not_yet_sanitized: nothing may read its text into another
   * report (a lead's duplicates and consolidated text, /similar, the agent's task) or move it by hand
   * into a cluster before its raw values are gone.
   */
  async function load(orgId: string, id: string): Promise<FeedbackRow> {
    const row = await repo.get(orgId, id)
    if (!row) throw new ApiError('not_found')
    requireSanitized(row)
    await cluster.prepare(row.appId)
    return row
  }

  function requireSanitized(row: FeedbackRow): void {
    if (!isSanitized(row)) throw new ApiError('not_yet_sanitized', { feedbackId: row.id, status: row.status }).withHeaders({ 'retry-after': '1' })
  }

  return {
    /** Reports of the same App most similar to `id`, best first. */
    async similar(orgId: string, id: string, limit: number) {
      await load(orgId, id)
      return await cluster.similar(id, limit)
    },

    /** Makes `id` (and its duplicates) duplicates of `leadId`, a lead of the same App. */
    async merge(orgId: string, id: string, leadId: string): Promise<void> {
      const r = await load(orgId, id)
      if (id === leadId) throw new ApiError('invalid_body', { issues: [{ path: '/leadId', message: 'cannot merge a report into itself' }] })
      const lead = await repo.get(orgId, leadId)
      if (!lead) throw new ApiError('not_found')
      requireSanitized(lead)
      if (lead.appId !== r.appId) throw new ApiError('invalid_body', { issues: [{ path: '/leadId', message: 'the lead belongs to another App' }] })
      if (lead.duplicateOfId) throw new ApiError('invalid_target', { leadFeedbackId: lead.duplicateOfId })
      if (!MERGEABLE_STATUSES.has(r.status)) throw new ApiError('invalid_transition', { from: r.status, to: 'duplicate' })
      if (lead.status === 'received' || lead.status === 'sanitizing') throw new ApiError('invalid_transition', { from: lead.status, to: 'lead' })
      const refusal = await cluster.merge(id, leadId)
      // A report changed after the checks above (a request racing this one): the same answers they give.
      if (refusal?.kind === 'duplicateOf') throw new ApiError('invalid_target', { leadFeedbackId: refusal.leadFeedbackId })
      if (refusal?.kind === 'status') throw new ApiError('invalid_transition', { from: refusal.from, to: 'duplicate' })
      if (refusal?.kind === 'gone') throw new ApiError('not_found')
    },

    /**
     * Rejects the report's suggested lead: the suggestion is cleared and that lead is never suggested for
     * it again; the decision teaches the App's bars (learn.ts). Without a suggestion nothing changes (a
     * repeated click answers the same item).
     */
    async rejectSuggestion(orgId: string, id: string): Promise<void> {
      const r = await load(orgId, id)
      if (!r.suggestedLeadId) return
      await cluster.rejectSuggestion(id)
    },

    /** The App's merge bars now and what its people's decisions taught; 404 app_not_found for another Org's App. */
    async triageState(orgId: string, appId: string, unmergeScore?: number): Promise<TriageState> {
      if (!(await apps.getForOrg(orgId, appId))) throw new ApiError('app_not_found')
      await cluster.prepare(appId)
      return await cluster.triageState(appId, unmergeScore)
    },

    /**
     * Forgets what the App's bars learned from its people (docs/triage.md "Resetting what an App
     * learned"): its decisions are deleted, audited as `app.triage_reset` with the counts removed; the
     * bars are the calibrated ones from the next verdict on. 404 app_not_found for another Org's App.
     */
    async resetLearning(orgId: string, appId: string, by: ActedBy | undefined): Promise<{ removed: Record<DecisionKind, number>; state: TriageState }> {
      if (!(await apps.getForOrg(orgId, appId))) throw new ApiError('app_not_found')
      await cluster.prepare(appId)
      const removed = await cluster.resetLearning(appId, auditEntry(by, orgId, 'app.triage_reset', appId))
      return { removed, state: await cluster.triageState(appId) }
    },

    /** Makes a duplicate a lead of its own again; it resumes its lifecycle as a lead. Its former lead's id. */
    async unmerge(orgId: string, id: string): Promise<string> {
      const r = await load(orgId, id)
      if (!r.duplicateOfId) throw new ApiError('not_a_duplicate')
      await cluster.unmerge(id)
      return r.duplicateOfId
    },
  }
}
export type TriageService = ReturnType<typeof createTriageService>

/**
 * Triage by hand (additive, sk; CONTRACT.md): similar reports, merge into a lead, unmerge. A dashboard
 * session's merges and unmerges are audited (`feedback.merged`, `feedback.unmerged`: who, which report,
 * which lead); an `sk_` key's are its backend's everyday traffic and are not (like token mints).
 */
import { Elysia, t } from 'elysia'
import { actedBy, orgAuth, type AuthDeps, type OrgCaller } from '../../http/auth'
import type { AuditLog } from '../audit/index'
import { BEARER_SK, errorSchemas, ORG_AUTH_ERRORS } from '../../http/error-docs'
import { ID_PATTERN } from '../../core/ids'
import type { TriageService } from './triage-service'
import { FullFeedbackItem, IdParams } from './model'
import type { FeedbackService } from './service'
import { baseUrlOf } from '../uploads/index'
import { readIntQuery, readNumberQuery } from '../../http/query'

export const SimilarQuery = t.Object(
  { limit: t.Optional(t.Numeric({ minimum: 1, maximum: 50, multipleOf: 1, description: 'Default 5, at most 50' })) },
  { additionalProperties: false },
)
export const SimilarList = t.Object(
  {
    data: t.Array(
      t.Object(
        {
          id: t.String({ pattern: ID_PATTERN }),
          score: t.Number({ minimum: 0, maximum: 1 }),
          text: t.String(),
          duplicateOfId: t.Union([t.String({ pattern: ID_PATTERN }), t.Null()]),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
)
export const MergeBody = t.Object({ leadId: t.String({ pattern: ID_PATTERN }) }, { additionalProperties: false })

const Bar = t.Number({ minimum: 0 })
const DecisionCounts = t.Object({ confirmed: t.Integer(), rejected: t.Integer(), unmerged: t.Integer() }, { additionalProperties: false })
const TriageQuery = t.Object(
  // Read (and range-checked, naming /unmergeScore) by readNumberQuery; the schema only documents it.
  { unmergeScore: t.Optional(t.String({ maxLength: 64, description: "An automatic merge's score, a number from 0 to 1: the answer adds `afterUnmerge`" })) },
  { additionalProperties: false },
)
export const AppTriageState = t.Object(
  {
    bars: t.Object(
      {
        merge: t.Number({ description: 'Merged automatically at this score or above' }),
        corroboratedMerge: t.Number({ description: 'Merged at this score or above when another signal agrees: the same component, console error, stack trace, (near) title, or a specific file, path or setting named in both titles' }),
        suggest: t.Number({ description: 'Below the merge bars and at least this score: the lead is suggested instead' }),
      },
      { additionalProperties: false },
    ),
    arrival: t.Object(
      {
        locality: t.Number({
          minimum: 0,
          maximum: 1,
          description: "Whether the App's duplicates come in bursts, learned from its clusters: 0 (arrival order says nothing), up to 1 (a duplicate arrives close to the report it duplicates)",
        }),
        bonusAtMost: t.Number({ minimum: 0, description: 'The most arrival adds to a /similar score or a suggestion score (a report that arrived right beside); the scores an automatic merge compares are not changed' }),
        longAgoBlock: t.Boolean({ description: 'True: a report that would merge into a cluster last reported more than half of the App\'s reports ago is suggested instead' }),
        mergeBar: t.Union([Bar, t.Null()], {
          description: 'Merged automatically at this score or above (halfway between the corroborated and the merge bar) when the lead arrived within `mergeWithin` of the report; null: arrival too weak to corroborate a merge',
        }),
        mergeWithin: t.Union([t.Number({ minimum: 0 }), t.Null()], {
          description: "How close in arrival, as a share of the App's reports, a lead must have arrived for `mergeBar` (0.13: within 13 % of them); null with `mergeBar`",
        }),
      },
      { additionalProperties: false, description: 'Arrival (docs/triage.md "Arrival")' },
    ),
    learned: t.Object(
      {
        raisedTo: t.Union([Bar, t.Null()], { description: 'Both merge bars at least this, after an automatic merge was undone; null: none was' }),
        provenBar: t.Union([Bar, t.Null()], { description: 'The lowest bar the decisions prove ≥ 98 % right (at least 50 of them); null: not proven yet' }),
        suggestRaisedTo: t.Union([Bar, t.Null()], { description: 'The suggestion floor at least this: people rejected most suggestions scoring below it; null: not raised' }),
        decisions: DecisionCounts,
      },
      { additionalProperties: false },
    ),
    afterUnmerge: t.Optional(
      t.Object(
        { merge: t.Number(), corroboratedMerge: t.Number() },
        { additionalProperties: false, description: 'With ?unmergeScore: the merge bars once an automatic merge of that score were undone' },
      ),
    ),
    spam: t.Object(
      {
        inFolder: t.Integer({ description: "Reports in the App's spam folder (counted up to 100,000)" }),
        notSpam: t.Integer({ description: 'Reports people marked "not spam"' }),
        markedSpam: t.Integer({ description: 'Reports people marked spam by hand' }),
        factors: t.Record(t.String(), t.Number(), { description: 'What the decisions taught: reason → weight factor (absent: 1)' }),
      },
      { additionalProperties: false, description: 'The abuse defence (docs/api.md "Spam classification")' },
    ),
  },
  { additionalProperties: false },
)

export function triageRoutes(auth: AuthDeps, triage: TriageService, feedback: FeedbackService, publicUrl: string | undefined, audit: AuditLog) {
  /** Audits a dashboard session's cluster change (after it is made: the cluster service commits it on its own thread). */
  const audited = async (org: OrgCaller, request: Request, server: Parameters<typeof actedBy>[3], action: string, id: string, leadId: string) => {
    if (org.grant === 'api_key') return
    const by = actedBy(auth, org, request, server)
    await audit.record({ orgId: org.orgId, actor: by.actor, ip: by.ip, action, targetId: id, data: { leadId } })
  }
  return new Elysia({ name: 'feedback-triage' })
    .use(orgAuth(auth))
    .get(
      '/v1/feedback/:id/similar',
      async ({ org, params, request }) => ({ data: await triage.similar(org.orgId, params.id, readIntQuery(request, 'limit', { min: 1, max: 50 }, 5)) }),
      {
      access: 'org.read',
      params: IdParams,
      query: SimilarQuery,
      response: { 200: SimilarList, ...errorSchemas(...ORG_AUTH_ERRORS, 'invalid_id', 'invalid_body', 'not_found', 'not_yet_sanitized') },
      detail: {
        summary: 'Reports of the same App most similar to this one, best first',
        description: 'Candidates are leads and duplicates alike; score is 0..1.',
        tags: ['triage'],
        security: BEARER_SK,
      },
      },
    )
    .post(
      '/v1/feedback/:id/merge',
      async ({ org, params, body, request, server }) => {
        await triage.merge(org.orgId, params.id, body.leadId)
        await audited(org, request, server, 'feedback.merged', params.id, body.leadId)
        return feedback.get(org.orgId, params.id, baseUrlOf(request, publicUrl))
      },
      {
        access: 'reports.triage',
        params: IdParams,
        body: MergeBody,
        parse: 'json',
        response: { 200: FullFeedbackItem, ...errorSchemas(...ORG_AUTH_ERRORS, 'invalid_id', 'invalid_body', 'not_found', 'invalid_target', 'invalid_transition', 'not_yet_sanitized') },
        detail: {
          summary: 'Merge this report into a lead (its own duplicates move along)',
          description:
            'leadId must be a lead of the same App (409 invalid_target with leadFeedbackId when it is a duplicate). Automatic clustering leaves merged rows alone afterwards. With leadId = the report\'s suggestedDuplicateOf.id the merge confirms the suggestion (a decision the App\'s merge bars learn from).',
          tags: ['triage'],
          security: BEARER_SK,
        },
      },
    )
    .get(
      '/v1/apps/:id/triage',
      async ({ org, params, request }) => ({
        ...(await triage.triageState(org.orgId, params.id, readNumberQuery(request, 'unmergeScore', { min: 0, max: 1 }))),
        spam: await feedback.spamState(params.id),
      }),
      {
        access: 'org.read',
        params: IdParams,
        query: TriageQuery,
        response: { 200: AppTriageState, ...errorSchemas(...ORG_AUTH_ERRORS, 'invalid_id', 'invalid_body', 'app_not_found') },
        detail: {
          summary: 'The App\'s merge bars now, and what its people\'s triage decisions taught',
          description:
            'docs/triage.md "Learning from the people who triage": the counts are of the newest 500 decisions. With ?unmergeScore=S (an automatic merge\'s score, 0-1), `afterUnmerge` says what the merge bars would be once that merge were undone (the dashboard says it at the Unmerge button).',
          tags: ['triage'],
          security: BEARER_SK,
        },
      },
    )
    .post(
      '/v1/apps/:id/triage/reset',
      async ({ org, params, request, server }) => {
        const { removed, state } = await triage.resetLearning(org.orgId, params.id, actedBy(auth, org, request, server))
        return { removed, ...state, spam: await feedback.spamState(params.id) }
      },
      {
        // Whoever may unmerge (which raises the bars) may reset them.
        access: 'reports.triage',
        params: IdParams,
        response: { 200: t.Composite([t.Object({ removed: DecisionCounts }), AppTriageState], { additionalProperties: false }), ...errorSchemas(...ORG_AUTH_ERRORS, 'invalid_body', 'invalid_id', 'app_not_found') },
        detail: {
          summary: 'Forget what the App\'s merge bars learned from its people',
          description:
            'Deletes the App\'s triage decisions (confirmed, rejected, unmerged): its bars are the calibrated ones again, at once. Audited (`app.triage_reset`, with the counts removed). Answers the counts removed and the App\'s triage state after the reset. docs/triage.md "Resetting what an App learned".',
          tags: ['triage'],
          security: BEARER_SK,
        },
      },
    )
    .post(
      '/v1/feedback/:id/reject-suggestion',
      async ({ org, params, request }) => {
        await triage.rejectSuggestion(org.orgId, params.id)
        return feedback.get(org.orgId, params.id, baseUrlOf(request, publicUrl))
      },
      {
        access: 'reports.triage',
        params: IdParams,
        response: { 200: FullFeedbackItem, ...errorSchemas(...ORG_AUTH_ERRORS, 'invalid_body', 'invalid_id', 'not_found', 'not_yet_sanitized') },
        detail: {
          summary: 'Reject this report\'s suggested lead (suggestedDuplicateOf)',
          description:
            'Answers the updated item, with suggestedDuplicateOf null. That lead is never suggested (nor merged automatically) for this report again, and the decision moves the App\'s merge bars (docs/triage.md "Learning from the people who triage"). A report without a suggestion is answered unchanged (idempotent).',
          tags: ['triage'],
          security: BEARER_SK,
        },
      },
    )
    .post(
      '/v1/feedback/:id/unmerge',
      async ({ org, params, request, server }) => {
        const formerLead = await triage.unmerge(org.orgId, params.id)
        await audited(org, request, server, 'feedback.unmerged', params.id, formerLead)
        return feedback.get(org.orgId, params.id, baseUrlOf(request, publicUrl))
      },
      {
        access: 'reports.triage',
        params: IdParams,
        response: { 200: FullFeedbackItem, ...errorSchemas(...ORG_AUTH_ERRORS, 'invalid_body', 'invalid_id', 'not_found', 'not_a_duplicate', 'not_yet_sanitized') },
        detail: {
          summary: 'Make a duplicate a lead of its own again',
          description: 'The report resumes its lifecycle as a lead (e.g. to awaiting_manual) and is not clustered automatically again.',
          tags: ['triage'],
          security: BEARER_SK,
        },
      },
    )
}

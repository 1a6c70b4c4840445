/**
 * GET /v1/agent-runs/:id (sk): a run id returns that run; a feedback id returns that report's latest
 * run (the typed client calls it with a feedback id; spec 4.7 leaves it open). Another Org's ids: 404.
 * GET /v1/feedback/:id/agent-runs (sk): every run of a report, newest first.
 */
import { Elysia } from 'elysia'
import { orgAuth, type AuthDeps } from '../../http/auth'
import { BEARER_SK, errorSchemas, ORG_AUTH_ERRORS } from '../../http/error-docs'
import { IdParams } from '../feedback/model'
import { AgentRun, AgentRunList } from './model'
import type { AgentRunsService } from './service'

export function agentRunRoutes(auth: AuthDeps, runs: AgentRunsService) {
  return new Elysia({ name: 'agent-runs' })
    .use(orgAuth(auth))
    .get(
      '/v1/agent-runs/:id',
      ({ org, params }) => runs.get(org.orgId, params.id),
      {
        access: 'org.read',
        params: IdParams,
        response: { 200: AgentRun, ...errorSchemas(...ORG_AUTH_ERRORS, 'invalid_id', 'not_found') },
        detail: {
          summary: 'Read an agent run',
          description: 'The id may be a run id (that run) or a feedback id (the latest run for that report).',
          tags: ['agent runs'],
          security: BEARER_SK,
        },
      },
    )
    .get(
      '/v1/feedback/:id/agent-runs',
      ({ org, params }) => runs.listFor(org.orgId, params.id),
      {
        access: 'org.read',
        params: IdParams,
        response: { 200: AgentRunList, ...errorSchemas(...ORG_AUTH_ERRORS, 'invalid_id', 'not_found') },
        detail: { summary: "A report's agent runs, newest first, and the reviews waiting for an iteration", tags: ['agent runs'], security: BEARER_SK },
      },
    )
}

/**
 * GET /v1/agent-runs/:id (sk): a run id returns that run; a feedback id returns that report's latest
 * run (the typed client calls it with a feedback id; spec 4.7 leaves it open). Another Org's ids: 404.
 * GET /v1/feedback/:id/agent-runs (sk): every run of a report, newest first.
 */
import { Elysia } from 'elysia'
import type { Database } from 'bun:sqlite'
import { ApiError } from '../../core/errors'
import { isoUtc } from '../../core/clock'
import { orgAuth, type AuthDeps } from '../../http/auth'
import { BEARER_SK, errorSchemas, ORG_AUTH_ERRORS } from '../../http/error-docs'
import { IdParams } from '../feedback/model'
import { AgentRun, AgentRunList } from './model'

interface RunRow {
  id: string
  org_id: string
  app_id: string
  feedback_id: string
  provider: string
  model: string | null
  status: string
  tokens_in: number
  tokens_out: number
  cost_usd: number
  pr_url: string | null
  branch: string
  guardrail_reason: string | null
  error: string | null
  timings: string
  summary: string | null
  output_tail: string | null
  started_at: number | null
  ended_at: number | null
  created_at: number
}

function present(r: RunRow): typeof AgentRun.static {
  return {
    id: r.id,
    appId: r.app_id,
    feedbackId: r.feedback_id,
    provider: r.provider,
    model: r.model,
    status: r.status as typeof AgentRun.static.status,
    tokensIn: r.tokens_in,
    tokensOut: r.tokens_out,
    costUsd: r.cost_usd,
    prUrl: r.pr_url,
    branch: r.branch,
    guardrailReason: r.guardrail_reason,
    error: r.error,
    timings: JSON.parse(r.timings),
    summary: r.summary,
    outputTail: r.output_tail,
    startedAt: r.started_at === null ? null : isoUtc(r.started_at),
    endedAt: r.ended_at === null ? null : isoUtc(r.ended_at),
    createdAt: isoUtc(r.created_at),
  }
}

export function agentRunRoutes(auth: AuthDeps, sqlite: Database) {
  const byId = sqlite.query('SELECT * FROM agent_runs WHERE id = ? AND org_id = ?')
  const latestFor = sqlite.query('SELECT * FROM agent_runs WHERE feedback_id = ? AND org_id = ? ORDER BY id DESC LIMIT 1')
  const allFor = sqlite.query('SELECT * FROM agent_runs WHERE feedback_id = ? AND org_id = ? ORDER BY id DESC LIMIT 200')
  const feedbackInOrg = sqlite.query('SELECT 1 FROM feedback WHERE id = ? AND org_id = ?')

  return new Elysia({ name: 'agent-runs' })
    .use(orgAuth(auth))
    .get(
      '/v1/agent-runs/:id',
      ({ org, params }) => {
        const row = (byId.get(params.id, org.orgId) ?? latestFor.get(params.id, org.orgId)) as RunRow | null
        if (!row) throw new ApiError('not_found')
        return present(row)
      },
      {
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
      ({ org, params }) => {
        if (!feedbackInOrg.get(params.id, org.orgId)) throw new ApiError('not_found')
        return { data: (allFor.all(params.id, org.orgId) as RunRow[]).map(present) }
      },
      {
        params: IdParams,
        response: { 200: AgentRunList, ...errorSchemas(...ORG_AUTH_ERRORS, 'invalid_id', 'not_found') },
        detail: { summary: "A report's agent runs, newest first", tags: ['agent runs'], security: BEARER_SK },
      },
    )
}

/** Agent runs as the API shows them: one run (by run id, or a report's latest), or a report's runs. */
import { ApiError } from '../../core/errors'
import { isoUtc } from '../../core/clock'
import type { AgentRun, AgentRunList } from './model'
import type { AgentRunsRepo, RunRow } from './repo'

function present(r: RunRow): typeof AgentRun.static {
  return {
    id: r.id,
    appId: r.app_id,
    feedbackId: r.feedback_id,
    provider: r.provider,
    model: r.model ?? '',
    status: r.status as typeof AgentRun.static.status,
    tokensIn: r.tokens_in,
    tokensOut: r.tokens_out,
    costUsd: r.cost_usd,
    prUrl: r.pr_url,
    branch: r.branch,
    guardrailReason: r.guardrail_reason,
    error: r.error,
    timings: JSON.parse(r.timings),
    trigger: r.trigger === 'review' ? 'review' : 'report',
    summary: r.summary,
    outputTail: r.output_tail,
    startedAt: r.started_at === null ? null : isoUtc(r.started_at),
    endedAt: r.ended_at === null ? null : isoUtc(r.ended_at),
    createdAt: isoUtc(r.created_at),
  }
}

export function createAgentRunsService(repo: AgentRunsRepo) {
  return {
    /** A run id returns that run; a feedback id returns that report's latest run; 404 otherwise. */
    async get(orgId: string, id: string): Promise<typeof AgentRun.static> {
      const row = (await repo.byId(orgId, id)) ?? (await repo.latestFor(orgId, id))
      if (!row) throw new ApiError('not_found')
      return present(row)
    },
    /** Every run of a report, newest first (at most 200); 404 when the report is not in the Org. */
    async listFor(orgId: string, feedbackId: string): Promise<typeof AgentRunList.static> {
      if (!(await repo.feedbackInOrg(orgId, feedbackId))) throw new ApiError('not_found')
      const [runs, waiting] = await Promise.all([repo.allFor(orgId, feedbackId), repo.pendingReviewsFor(orgId, feedbackId)])
      return { data: runs.map(present), pendingReviews: waiting.map((w) => ({ author: w.author, receivedAt: isoUtc(Number(w.receivedAt)) })) }
    },
  }
}
export type AgentRunsService = ReturnType<typeof createAgentRunsService>

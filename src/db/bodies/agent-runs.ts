/**
 * The agent runner's transactions, written once for both dialects (src/db/tx-body.ts): a run's start
 * (the report's move to `agent_running`, the run's row, the reviews it takes, its event) and its end
 * (the row, the report's move, the shared pull request URL, the event, then the news of the pull request
 * held while it ran: src/db/bodies/pr-changes.ts). Each dialect's repository (src/db/sqlite/agent-runs.ts,
 * src/db/pg/agent-runs.ts) runs them in a transaction and keeps its reads and its way of naming the
 * unique violation of "one running run per App".
 */
import type { RunEvent, RunOutcome, RunPhaseEvent, RunRowEnd, RunRowInsert, RunScope } from '../../modules/agent-runs/repo'
import { run, sql, type Body } from '../tx-body'
import type { LifecycleBodies } from './lifecycle'
import { prChangeBodies } from './pr-changes'

const INSERT_RUN = sql(
  `INSERT INTO agent_runs (id, org_id, app_id, feedback_id, provider, model, status, branch, timings, started_at, created_at, node_id, trigger, review_text)
   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
)
const UPDATE_RUN = sql(
  `UPDATE agent_runs SET status = ?2, model = COALESCE(?3, model), tokens_in = ?4, tokens_out = ?5, cost_usd = ?6,
     pr_url = ?7, guardrail_reason = ?8, error = ?9, timings = ?10, summary = ?11, output_tail = ?12, ended_at = ?13
   WHERE id = ?1`,
)
const SHARE_URL = sql('UPDATE feedback SET merge_request_url = ?, version = version + 1, updated_at = ? WHERE duplicate_of_id = ?')
const DROP_PENDING = sql('DELETE FROM pending_reviews WHERE id = ?')
// The row lock (PostgreSQL) settles two reclaims of one run: the second finds it no longer `running`.
const FAIL_INTERRUPTED = sql("UPDATE agent_runs SET status = 'failed', error = ?, ended_at = ? WHERE id = ? AND status = 'running'")
// Only while the run runs: a run failed as interrupted meanwhile keeps its end, and gets no phase after it.
const PHASE_TIMINGS = sql("UPDATE agent_runs SET timings = ? WHERE id = ? AND status = 'running'")

/** The run's row: every column named (trigger and review text default for a report's run). */
const insertRun = (r: RunRowInsert) =>
  run(INSERT_RUN, r.id, r.orgId, r.appId, r.feedbackId, r.provider, r.model, r.status, r.branch, r.timings, r.startedAt, r.createdAt, r.nodeId, r.trigger ?? 'report', r.reviewText ?? null)
const updateRun = (e: RunRowEnd) =>
  run(UPDATE_RUN, e.id, e.status, e.model, e.tokensIn, e.tokensOut, e.costUsd, e.prUrl, e.guardrailReason, e.error, e.timings, e.summary, e.outputTail, e.endedAt)

export function agentRunBodies(lifecycle: LifecycleBodies) {
  const prChanges = prChangeBodies(lifecycle)

  /**
   * The report's move, the shared URL and the event of a run's end, then the pull request's news that
   * came during the run (merged, closed: held by the webhook while the report was `agent_running`),
   * applied or dropped.
   */
  function* settle(scope: RunScope, outcome: RunOutcome, now: number): Body<void> {
    yield* lifecycle.move(scope.feedbackId, outcome.move.to, outcome.move.cause)
    // Reports in the cluster point at the same pull request.
    if (outcome.shareUrl) yield* run(SHARE_URL, outcome.shareUrl, now, scope.feedbackId)
    yield* lifecycle.record({ orgId: scope.orgId, appId: scope.appId }, outcome.event.type, outcome.event.data)
    yield* prChanges.applyDeferred(scope.feedbackId, now)
  }

  return {
    /**
     * A run starts: the report `from` → `agent_running`, its row, the reviews it takes (`consumed`) and
     * its event; false (nothing written) when the report is no longer `from`. The unique index on one
     * running run per App throws out of it (the repository answers 'app_busy').
     */
    *start(r: RunRowInsert, event: RunEvent, from: 'queued' | 'pr_opened', consumed: string[] = []): Body<boolean> {
      if (!(yield* lifecycle.move(r.feedbackId, 'agent_running', { by: 'system', from }))) return false
      yield* insertRun(r)
      for (const id of consumed) yield* run(DROP_PENDING, id)
      yield* lifecycle.record({ orgId: r.orgId, appId: r.appId }, event.type, event.data)
      return true
    },

    /** A run that ends before it starts: its row, ended, and the outcome. */
    *recordFailedStart(r: RunRowInsert, end: RunRowEnd, outcome: RunOutcome): Body<void> {
      yield* insertRun(r)
      yield* updateRun(end)
      yield* settle({ feedbackId: r.feedbackId, orgId: r.orgId, appId: r.appId }, outcome, end.endedAt)
    },

    /**
     * A run ended: its row and the outcome (`settle`); false, nothing written, when the row is gone (its
     * report was removed while it ran: no move of a report that is not there, no event naming it).
     */
    *finishRun(scope: RunScope, end: RunRowEnd, outcome: RunOutcome): Body<boolean> {
      if ((yield* updateRun(end)) !== 1) return false
      yield* settle(scope, outcome, end.endedAt)
      return true
    },

    /** A phase of a running run ended: its timings so far and the event; false when the run no longer runs. */
    *phase(scope: RunScope, runId: string, timings: string, event: RunPhaseEvent): Body<boolean> {
      if ((yield* run(PHASE_TIMINGS, timings, runId)) !== 1) return false
      yield* lifecycle.record({ orgId: scope.orgId, appId: scope.appId }, event.type, event.data)
      return true
    },

    /** A run left `running` by a process that is gone: failed, and the outcome; false when another reclaim was first. */
    *failInterrupted(r: { id: string; feedback_id: string; org_id: string; app_id: string }, error: string, endedAt: number, outcome: RunOutcome): Body<boolean> {
      if ((yield* run(FAIL_INTERRUPTED, error, endedAt, r.id)) !== 1) return false
      yield* settle({ feedbackId: r.feedback_id, orgId: r.org_id, appId: r.app_id }, outcome, endedAt)
      return true
    },
  }
}

/**
 * PostgreSQL side of modules/agent-runs/repo.ts: the same rows, moves and events as
 * src/db/sqlite/agent-runs.ts. Moves and events join the lifecycle's PostgreSQL side in the run's
 * transaction (the report's row is read FOR UPDATE there, so a start racing a customer's archive waits
 * for it and then finds the report no longer `queued`).
 *
 * Single node for now: "one run per App at a time" is checked by the runner (its in-process slots plus
 * `runningCount`), and at start every `running` row is taken as left by a dead process. Cluster mode
 * (issue 23) replaces both with node heartbeats: a run is reclaimed when its node stopped beating, and
 * a start takes the App's slot in the database.
 */
import { PENDING_REVIEWS_MAX } from '../../modules/git-hooks/repo'
import type { AgentRunsRepo, PendingReview, InterruptedRun, RunEvent, RunFeedbackRow, RunOutcome, RunRow, RunRowEnd, RunRowInsert, RunScope } from '../../modules/agent-runs/repo'
import { RUN_LIST_LIMIT } from '../../modules/agent-runs/repo'
import type { PgLifecycle, PgTx } from './lifecycle'
import { prChangeBodies } from '../bodies/pr-changes'
import { runPg } from './tx-body'
import { exec, isUniqueViolation, many, one, type PgQueryable, type PgStorage } from './storage'

const GET_FEEDBACK =
  'SELECT id, org_id, app_id, status, version, text, url, theme, consolidated_text, duplicate_count, duplicate_of_id, console_logs, component_target, attachments, redactions FROM feedback WHERE id = $1'
const SHARE_URL = 'UPDATE feedback SET merge_request_url = $1, version = version + 1, updated_at = $2 WHERE duplicate_of_id = $3'
const INSERT_RUN = `INSERT INTO agent_runs (id, org_id, app_id, feedback_id, provider, model, status, branch, timings, started_at, created_at, node_id, trigger, review_text)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`
const REVIEW_RUNS = "SELECT COUNT(*) AS n FROM agent_runs WHERE feedback_id = $1 AND trigger = 'review'"
const UPDATE_RUN = `UPDATE agent_runs SET status = $2, model = $3, tokens_in = $4, tokens_out = $5, cost_usd = $6,
    pr_url = $7, guardrail_reason = $8, error = $9, timings = $10, summary = $11, output_tail = $12, ended_at = $13
  WHERE id = $1`
const RUNNING_FOR_APP = "SELECT COUNT(*) AS n FROM agent_runs WHERE app_id = $1 AND status = 'running'"
const RUNS_SINCE = 'SELECT COUNT(*) AS n FROM agent_runs WHERE app_id = $1 AND created_at >= $2'
const COST_SINCE = 'SELECT COALESCE(SUM(cost_usd), 0) AS usd FROM agent_runs WHERE app_id = $1 AND created_at >= $2'
const INTERRUPTED = "SELECT id, org_id, app_id, feedback_id, sandbox_pid, sandbox_start, trigger FROM agent_runs WHERE status = 'running' ORDER BY id"
const INTERRUPTED_UNCLAIMED = "SELECT id, org_id, app_id, feedback_id, sandbox_pid, sandbox_start, trigger FROM agent_runs WHERE status = 'running' AND node_id IS NULL ORDER BY id"
const INTERRUPTED_OF = "SELECT id, org_id, app_id, feedback_id, sandbox_pid, sandbox_start, trigger FROM agent_runs WHERE status = 'running' AND node_id = ANY($1::text[]) ORDER BY id"
const SET_SANDBOX = 'UPDATE agent_runs SET sandbox_pid = $1, sandbox_start = $2 WHERE id = $3'
const FAIL_INTERRUPTED = "UPDATE agent_runs SET status = 'failed', error = $1, ended_at = $2 WHERE id = $3 AND status = 'running'"

const DROP_PENDING = 'DELETE FROM pending_reviews WHERE id = ANY($1::text[])'

const RUN = 'SELECT * FROM agent_runs WHERE id = $1 AND org_id = $2'
const LATEST = 'SELECT * FROM agent_runs WHERE feedback_id = $1 AND org_id = $2 ORDER BY id DESC LIMIT 1'
const REPORT = 'SELECT 1 FROM feedback WHERE id = $1 AND org_id = $2'

const insertRun = (q: PgQueryable, r: RunRowInsert) =>
  exec(q, INSERT_RUN, [r.id, r.orgId, r.appId, r.feedbackId, r.provider, r.model, r.status, r.branch, r.timings, r.startedAt, r.createdAt, r.nodeId, r.trigger ?? 'report', r.reviewText ?? null])
const updateRun = (q: PgQueryable, e: RunRowEnd) =>
  exec(q, UPDATE_RUN, [e.id, e.status, e.model, e.tokensIn, e.tokensOut, e.costUsd, e.prUrl, e.guardrailReason, e.error, e.timings, e.summary, e.outputTail, e.endedAt])

export function createPgAgentRunsRepo(storage: PgStorage, side: PgLifecycle): AgentRunsRepo {
  const { pool } = storage
  // Built here, not at load: the limit comes from the interface's module, which imports this one.
  const PENDING = `SELECT id, pr_url, text, author, received_at FROM pending_reviews WHERE feedback_id = $1 ORDER BY id LIMIT ${PENDING_REVIEWS_MAX}`
  const PENDING_FOR = `SELECT author, received_at AS "receivedAt" FROM pending_reviews WHERE feedback_id = $1 AND org_id = $2 ORDER BY id LIMIT ${PENDING_REVIEWS_MAX}`
  const ALL = `SELECT * FROM agent_runs WHERE feedback_id = $1 AND org_id = $2 ORDER BY id DESC LIMIT ${RUN_LIST_LIMIT}`
  const tx = <T>(work: (t: PgTx) => Promise<T>) => storage.tx((client, _db, onCommit) => work({ client, onCommit }))
  const count = async (text: string, params: unknown[]) => (await one<{ n: number }>(pool, text, params))!.n
  const prChanges = prChangeBodies(side.bodies)

  /** As src/db/sqlite/agent-runs.ts `settle`: the run's move, shared URL and event, then the news held during the run. */
  async function settle(t: PgTx, scope: RunScope, outcome: RunOutcome, now: number): Promise<void> {
    await side.move(t, scope.feedbackId, outcome.move.to, outcome.move.cause)
    // Reports in the cluster point at the same pull request.
    if (outcome.shareUrl) await exec(t.client, SHARE_URL, [outcome.shareUrl, now, scope.feedbackId])
    await side.record(t, { orgId: scope.orgId, appId: scope.appId }, outcome.event.type, outcome.event.data)
    await runPg(t, prChanges.applyDeferred(scope.feedbackId, now))
  }

  function start(r: RunRowInsert, event: RunEvent, from: 'queued' | 'pr_opened', consumed: string[] = []): Promise<boolean | 'app_busy'> {
    return tx(async (t): Promise<boolean | 'app_busy'> => {
      if (!(await side.move(t, r.feedbackId, 'agent_running', { by: 'system', from }))) return false
      await insertRun(t.client, r)
      if (consumed.length > 0) await exec(t.client, DROP_PENDING, [consumed])
      await side.record(t, { orgId: r.orgId, appId: r.appId }, event.type, event.data)
      return true
    }).catch((e) => {
      // One `running` run per App (agent_runs_one_running_per_app_uq), whichever node started the other.
      if (isUniqueViolation(e, 'agent_runs_one_running_per_app_uq')) return 'app_busy' as const
      throw e
    })
  }

  return {
    feedback: async (id) => (await one<RunFeedbackRow>(pool, GET_FEEDBACK, [id])) ?? null,
    runningCount: (appId) => count(RUNNING_FOR_APP, [appId]),
    runsSince: (appId, since) => count(RUNS_SINCE, [appId, since]),
    costSince: async (appId, since) => (await one<{ usd: number }>(pool, COST_SINCE, [appId, since]))!.usd,

    startRun: (r, event) => start(r, event, 'queued'),
    startReviewRun: (r, event, consumed) => start({ ...r, trigger: 'review' }, event, 'pr_opened', consumed),
    pendingReviews: (feedbackId) => many<PendingReview>(pool, PENDING, [feedbackId]),
    dropPendingReviews: async (ids) => void (await exec(pool, DROP_PENDING, [ids])),
    pendingReviewsFor: (orgId, feedbackId) => many<{ author: string | null; receivedAt: number }>(pool, PENDING_FOR, [feedbackId, orgId]),
    reviewRuns: (feedbackId) => count(REVIEW_RUNS, [feedbackId]),

    recordFailedStart: (r, end, outcome) =>
      tx(async (t) => {
        await insertRun(t.client, r)
        await updateRun(t.client, end)
        await settle(t, { feedbackId: r.feedbackId, orgId: r.orgId, appId: r.appId }, outcome, end.endedAt)
      }),

    finishRun: (scope, end, outcome) =>
      tx(async (t) => {
        await updateRun(t.client, end)
        await settle(t, scope, outcome, end.endedAt)
      }),

    setSandbox: async (id, pid, identity) => void (await exec(pool, SET_SANDBOX, [pid, identity, id])),
    interrupted: (nodes) =>
      nodes === undefined ? many<InterruptedRun>(pool, INTERRUPTED) : nodes === null ? many<InterruptedRun>(pool, INTERRUPTED_UNCLAIMED) : many<InterruptedRun>(pool, INTERRUPTED_OF, [nodes]),

    failInterrupted: (r, error, endedAt, outcome) =>
      tx(async (t) => {
        // The row lock settles two reclaims of one run: the second finds it no longer `running`.
        if ((await exec(t.client, FAIL_INTERRUPTED, [error, endedAt, r.id])) !== 1) return false
        await settle(t, { feedbackId: r.feedback_id, orgId: r.org_id, appId: r.app_id }, outcome, endedAt)
        return true
      }),

    byId: async (orgId, id) => (await one<RunRow>(pool, RUN, [id, orgId])) ?? null,
    latestFor: async (orgId, feedbackId) => (await one<RunRow>(pool, LATEST, [feedbackId, orgId])) ?? null,
    allFor: (orgId, feedbackId) => many<RunRow>(pool, ALL, [feedbackId, orgId]),
    feedbackInOrg: async (orgId, feedbackId) => (await one(pool, REPORT, [feedbackId, orgId])) !== undefined,
  }
}

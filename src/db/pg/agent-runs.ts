/**
 * PostgreSQL side of modules/agent-runs/repo.ts: the runner's and the API's reads; a run's start and end
 * are written once for both dialects (src/db/bodies/agent-runs.ts) and awaited here, one transaction
 * each (the report's row is read FOR UPDATE by the lifecycle's move, so a start racing a customer's
 * archive waits for it and then finds the report no longer `queued`).
 *
 * Single node for now: "one run per App at a time" is checked by the runner (its in-process slots plus
 * `runningCount`), and at start every `running` row is taken as left by a dead process. Cluster mode
 * (issue 23) replaces both with node heartbeats: a run is reclaimed when its node stopped beating, and
 * a start takes the App's slot in the database.
 */
import { PENDING_REVIEWS_MAX } from '../../modules/git-hooks/repo'
import type { AgentRunsRepo, PendingReview, InterruptedRun, RunDuplicateMedia, RunEvent, RunFeedbackRow, RunRow, RunRowInsert } from '../../modules/agent-runs/repo'
import { RUN_DUPLICATES_MEDIA_MAX, RUN_LIST_LIMIT } from '../../modules/agent-runs/repo'
import type { PgLifecycle, PgTx } from './lifecycle'
import { agentRunBodies } from '../bodies/agent-runs'
import { runPg } from './tx-body'
import { exec, isUniqueViolation, many, one, type PgStorage } from './storage'
import { reportRunsSql, UNCLAIMED_RUNS_SQL } from '../sql/agent-runs'

const GET_FEEDBACK =
  'SELECT id, org_id, app_id, status, version, text, url, theme, consolidated_text, duplicate_count, duplicate_of_id, console_logs, component_target, attachments, redactions FROM feedback WHERE id = $1'
const REVIEW_RUNS = "SELECT COUNT(*) AS n FROM agent_runs WHERE feedback_id = $1 AND trigger = 'review'"
const RUNNING_FOR_APP = "SELECT COUNT(*) AS n FROM agent_runs WHERE app_id = $1 AND status = 'running'"
const RUNS_SINCE = 'SELECT COUNT(*) AS n FROM agent_runs WHERE app_id = $1 AND created_at >= $2'
const COST_SINCE = 'SELECT COALESCE(SUM(cost_usd), 0) AS usd FROM agent_runs WHERE app_id = $1 AND created_at >= $2'
const INTERRUPTED = "SELECT id, org_id, app_id, feedback_id, sandbox_pid, sandbox_start, trigger FROM agent_runs WHERE status = 'running' ORDER BY id"
const INTERRUPTED_OF = "SELECT id, org_id, app_id, feedback_id, sandbox_pid, sandbox_start, trigger FROM agent_runs WHERE status = 'running' AND node_id = ANY($1::text[]) ORDER BY id"
const SET_SANDBOX = 'UPDATE agent_runs SET sandbox_pid = $1, sandbox_start = $2 WHERE id = $3'
const RUN_EXISTS = 'SELECT 1 AS one FROM agent_runs WHERE id = $1'
const DROP_PENDING = 'DELETE FROM pending_reviews WHERE id = ANY($1::text[])'

const RUN = 'SELECT * FROM agent_runs WHERE id = $1 AND org_id = $2'
const LATEST = reportRunsSql('$1', '$2', 1)
const REPORT = 'SELECT 1 FROM feedback WHERE id = $1 AND org_id = $2'

export function createPgAgentRunsRepo(storage: PgStorage, side: PgLifecycle): AgentRunsRepo {
  const { pool } = storage
  // Built here, not at load: the limit comes from the interface's module, which imports this one.
  const PENDING = `SELECT id, pr_url, text, author, received_at FROM pending_reviews WHERE feedback_id = $1 ORDER BY id LIMIT ${PENDING_REVIEWS_MAX}`
  const PENDING_FOR = `SELECT author, received_at AS "receivedAt" FROM pending_reviews WHERE feedback_id = $1 AND org_id = $2 ORDER BY id LIMIT ${PENDING_REVIEWS_MAX}`
  const DUPLICATES_MEDIA = `SELECT id, attachments, component_target, redactions FROM feedback WHERE duplicate_of_id = $1 AND spam_marked_at IS NULL AND (attachments IS NOT NULL OR component_target IS NOT NULL) ORDER BY id DESC LIMIT ${RUN_DUPLICATES_MEDIA_MAX}`
  const ALL = reportRunsSql('$1', '$2', RUN_LIST_LIMIT)
  const tx = <T>(work: (t: PgTx) => Promise<T>) => storage.tx((client, _db, onCommit) => work({ client, onCommit }))
  const count = async (text: string, params: unknown[]) => (await one<{ n: number }>(pool, text, params))!.n
  const bodies = agentRunBodies(side.bodies)

  function start(r: RunRowInsert, event: RunEvent, from: 'queued' | 'pr_opened', consumed: string[] = []): Promise<boolean | 'app_busy'> {
    return tx((t): Promise<boolean | 'app_busy'> => runPg(t, bodies.start(r, event, from, consumed))).catch((e) => {
      // One `running` run per App (agent_runs_one_running_per_app_uq), whichever node started the other.
      if (isUniqueViolation(e, 'agent_runs_one_running_per_app_uq')) return 'app_busy' as const
      throw e
    })
  }

  return {
    feedback: async (id) => (await one<RunFeedbackRow>(pool, GET_FEEDBACK, [id])) ?? null,
    duplicatesMedia: (leadId) => many<RunDuplicateMedia>(pool, DUPLICATES_MEDIA, [leadId]),
    runningCount: (appId) => count(RUNNING_FOR_APP, [appId]),
    runsSince: (appId, since) => count(RUNS_SINCE, [appId, since]),
    costSince: async (appId, since) => (await one<{ usd: number }>(pool, COST_SINCE, [appId, since]))!.usd,

    startRun: (r, event) => start(r, event, 'queued'),
    startReviewRun: (r, event, consumed) => start({ ...r, trigger: 'review' }, event, 'pr_opened', consumed),
    pendingReviews: (feedbackId) => many<PendingReview>(pool, PENDING, [feedbackId]),
    dropPendingReviews: async (ids) => void (await exec(pool, DROP_PENDING, [ids])),
    pendingReviewsFor: (orgId, feedbackId) => many<{ author: string | null; receivedAt: number }>(pool, PENDING_FOR, [feedbackId, orgId]),
    reviewRuns: (feedbackId) => count(REVIEW_RUNS, [feedbackId]),

    recordFailedStart: (r, end, outcome) => tx((t) => runPg(t, bodies.recordFailedStart(r, end, outcome))),
    finishRun: (scope, end, outcome) => tx((t) => runPg(t, bodies.finishRun(scope, end, outcome))),

    recordPhase: (scope, runId, timings, event) => tx((t) => runPg(t, bodies.phase(scope, runId, timings, event))),
    setSandbox: async (id, pid, identity) => void (await exec(pool, SET_SANDBOX, [pid, identity, id])),
    runExists: async (id) => (await one(pool, RUN_EXISTS, [id])) !== undefined,
    interrupted: (nodes) =>
      nodes === undefined ? many<InterruptedRun>(pool, INTERRUPTED) : nodes === null ? many<InterruptedRun>(pool, UNCLAIMED_RUNS_SQL) : many<InterruptedRun>(pool, INTERRUPTED_OF, [nodes]),

    failInterrupted: (r, error, endedAt, outcome) => tx((t) => runPg(t, bodies.failInterrupted(r, error, endedAt, outcome))),

    byId: async (orgId, id) => (await one<RunRow>(pool, RUN, [id, orgId])) ?? null,
    latestFor: async (orgId, feedbackId) => (await one<RunRow>(pool, LATEST, [feedbackId, orgId])) ?? null,
    allFor: (orgId, feedbackId) => many<RunRow>(pool, ALL, [feedbackId, orgId]),
    feedbackInOrg: async (orgId, feedbackId) => (await one(pool, REPORT, [feedbackId, orgId])) !== undefined,
  }
}

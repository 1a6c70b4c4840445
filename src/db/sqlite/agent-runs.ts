/**
 * SQLite side of modules/agent-runs/repo.ts: the runner's reads (the report a run works on, the
 * `agent_runs` rows, the per-App caps) and the API's. A run's start and end are written once for both
 * dialects (src/db/bodies/agent-runs.ts) and run here synchronously, in one IMMEDIATE transaction each.
 */
import type { Statement } from 'bun:sqlite'
import type { SqliteLifecycle } from './lifecycle'
import { PENDING_REVIEWS_MAX } from '../../modules/git-hooks/repo'
import type { AgentRunsRepo, PendingReview, InterruptedRun, RunDuplicateMedia, RunEvent, RunFeedbackRow, RunRow, RunRowInsert } from '../../modules/agent-runs/repo'
import { RUN_DUPLICATES_MEDIA_MAX, RUN_LIST_LIMIT } from '../../modules/agent-runs/repo'
import { agentRunBodies } from '../bodies/agent-runs'
import type { SqliteStorage } from './storage'
import { isSqliteUniqueViolation } from './errors'
import { reportRunsSql, UNCLAIMED_RUNS_SQL } from '../sql/agent-runs'

export function createSqliteAgentRunsRepo({ sqlite }: SqliteStorage, side: SqliteLifecycle): AgentRunsRepo {

  const getFeedback: Statement = sqlite.query(
    'SELECT id, org_id, app_id, status, version, text, url, theme, consolidated_text, duplicate_count, duplicate_of_id, console_logs, component_target, attachments, redactions FROM feedback WHERE id = ?',
  )
  const duplicatesMedia: Statement = sqlite.query(
    `SELECT id, attachments, component_target, redactions FROM feedback WHERE duplicate_of_id = ? AND spam_marked_at IS NULL AND (attachments IS NOT NULL OR component_target IS NOT NULL) ORDER BY id DESC LIMIT ${RUN_DUPLICATES_MEDIA_MAX}`,
  )
  const reviewRuns: Statement = sqlite.query("SELECT COUNT(*) AS n FROM agent_runs WHERE feedback_id = ? AND trigger = 'review'")
  const runningForApp: Statement = sqlite.query("SELECT COUNT(*) AS n FROM agent_runs WHERE app_id = ? AND status = 'running'")
  const runsSince: Statement = sqlite.query('SELECT COUNT(*) AS n FROM agent_runs WHERE app_id = ? AND created_at >= ?')
  const costSince: Statement = sqlite.query('SELECT COALESCE(SUM(cost_usd), 0) AS usd FROM agent_runs WHERE app_id = ? AND created_at >= ?')
  const interrupted: Statement = sqlite.query("SELECT id, org_id, app_id, feedback_id, sandbox_pid, sandbox_start, node_id, trigger FROM agent_runs WHERE status = 'running' ORDER BY id")
  const unclaimed: Statement = sqlite.query(UNCLAIMED_RUNS_SQL)
  const setSandbox: Statement = sqlite.query('UPDATE agent_runs SET sandbox_pid = ?, sandbox_start = ? WHERE id = ?')
  const runExists: Statement = sqlite.query('SELECT 1 AS one FROM agent_runs WHERE id = ?')

  const pending: Statement = sqlite.query(`SELECT id, pr_url, text, author, received_at FROM pending_reviews WHERE feedback_id = ? ORDER BY id LIMIT ${PENDING_REVIEWS_MAX}`)
  const dropPending: Statement = sqlite.query('DELETE FROM pending_reviews WHERE id = ?')
  const pendingFor: Statement = sqlite.query(`SELECT author, received_at AS receivedAt FROM pending_reviews WHERE feedback_id = ? AND org_id = ? ORDER BY id LIMIT ${PENDING_REVIEWS_MAX}`)

  // The API's reads: every one takes the Org.
  const run: Statement = sqlite.query('SELECT * FROM agent_runs WHERE id = ? AND org_id = ?')
  const latest: Statement = sqlite.query(reportRunsSql('?1', '?2', 1))
  const all: Statement = sqlite.query(reportRunsSql('?1', '?2', RUN_LIST_LIMIT))
  const report: Statement = sqlite.query('SELECT 1 FROM feedback WHERE id = ? AND org_id = ?')
  const bodies = agentRunBodies(side.bodies)
  const { driver } = side

  function start(r: RunRowInsert, event: RunEvent, from: 'queued' | 'pr_opened', consumed: string[] = []): boolean | 'app_busy' {
    try {
      return driver.transaction(bodies.start(r, event, from, consumed))
    } catch (e) {
      // One `running` run per App (agent_runs_one_running_per_app_uq): the whole start rolled back.
      if (isSqliteUniqueViolation(e, 'agent_runs.app_id')) return 'app_busy'
      throw e
    }
  }

  return {
    feedback: async (id) => getFeedback.get(id) as RunFeedbackRow | null,
    duplicatesMedia: async (leadId) => duplicatesMedia.all(leadId) as RunDuplicateMedia[],
    runningCount: async (appId) => (runningForApp.get(appId) as { n: number }).n,
    runsSince: async (appId, since) => (runsSince.get(appId, since) as { n: number }).n,
    costSince: async (appId, since) => (costSince.get(appId, since) as { usd: number }).usd,

    startRun: async (r, event) => start(r, event, 'queued'),
    startReviewRun: async (r, event, consumed) => start({ ...r, trigger: 'review' }, event, 'pr_opened', consumed),
    pendingReviews: async (feedbackId) => pending.all(feedbackId) as PendingReview[],
    dropPendingReviews: async (ids) => sqlite.transaction(() => ids.forEach((id) => dropPending.run(id)))(),
    pendingReviewsFor: async (orgId, feedbackId) => pendingFor.all(feedbackId, orgId) as { author: string | null; receivedAt: number }[],
    reviewRuns: async (feedbackId) => (reviewRuns.get(feedbackId) as { n: number }).n,

    recordFailedStart: async (r, end, outcome) => driver.transaction(bodies.recordFailedStart(r, end, outcome)),
    finishRun: async (scope, end, outcome) => driver.transaction(bodies.finishRun(scope, end, outcome)),

    recordPhase: async (scope, runId, timings, event) => driver.transaction(bodies.phase(scope, runId, timings, event)),
    setSandbox: async (id, pid, identity) => void setSandbox.run(pid, identity, id),
    runExists: async (id) => runExists.get(id) != null,
    interrupted: async (nodes) => {
      if (nodes === null) return unclaimed.all() as InterruptedRun[]
      const all = interrupted.all() as (InterruptedRun & { node_id: string | null })[]
      const pick = nodes === undefined ? all : all.filter((r) => r.node_id !== null && nodes.includes(r.node_id))
      return pick.map(({ node_id: _n, ...r }) => r)
    },

    failInterrupted: async (r, error, endedAt, outcome) => driver.transaction(bodies.failInterrupted(r, error, endedAt, outcome)),

    byId: async (orgId, id) => run.get(id, orgId) as RunRow | null,
    latestFor: async (orgId, feedbackId) => latest.get(feedbackId, orgId) as RunRow | null,
    allFor: async (orgId, feedbackId) => all.all(feedbackId, orgId) as RunRow[],
    feedbackInOrg: async (orgId, feedbackId) => report.get(feedbackId, orgId) !== null,
  }
}

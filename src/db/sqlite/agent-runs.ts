/**
 * SQLite side of modules/agent-runs/repo.ts: the runner's queries (the report a run works on, the
 * `agent_runs` rows, the per-App caps, sharing a pull request's URL with the lead's duplicates) and the
 * API's reads. Status moves and events join the lifecycle's SQLite side, nested in the run's transaction.
 */
import type { Statement } from 'bun:sqlite'
import type { SqliteLifecycle } from './lifecycle'
import { PENDING_REVIEWS_MAX } from '../../modules/git-hooks/repo'
import type { AgentRunsRepo, PendingReview, InterruptedRun, RunEvent, RunFeedbackRow, RunOutcome, RunRow, RunRowInsert, RunScope } from '../../modules/agent-runs/repo'
import { RUN_LIST_LIMIT } from '../../modules/agent-runs/repo'
import { prChangeBodies } from '../bodies/pr-changes'
import type { SqliteStorage } from './storage'
import { isSqliteUniqueViolation } from './errors'

export function createSqliteAgentRunsRepo({ sqlite }: SqliteStorage, side: SqliteLifecycle): AgentRunsRepo {

  const getFeedback: Statement = sqlite.query(
    'SELECT id, org_id, app_id, status, version, text, url, theme, consolidated_text, duplicate_count, duplicate_of_id, console_logs, component_target, attachments, redactions FROM feedback WHERE id = ?',
  )
  const shareUrl: Statement = sqlite.query('UPDATE feedback SET merge_request_url = ?, version = version + 1, updated_at = ? WHERE duplicate_of_id = ?')
  const insertRun: Statement = sqlite.query(
    `INSERT INTO agent_runs (id, org_id, app_id, feedback_id, provider, model, status, branch, timings, started_at, created_at, node_id, trigger, review_text)
     VALUES ($id, $orgId, $appId, $feedbackId, $provider, $model, $status, $branch, $timings, $startedAt, $createdAt, $nodeId, $trigger, $reviewText)`,
  )
  const updateRun: Statement = sqlite.query(
    `UPDATE agent_runs SET status = $status, model = $model, tokens_in = $tokensIn, tokens_out = $tokensOut, cost_usd = $costUsd,
       pr_url = $prUrl, guardrail_reason = $guardrailReason, error = $error, timings = $timings, summary = $summary,
       output_tail = $outputTail, ended_at = $endedAt WHERE id = $id`,
  )
  const reviewRuns: Statement = sqlite.query("SELECT COUNT(*) AS n FROM agent_runs WHERE feedback_id = ? AND trigger = 'review'")
  const runningForApp: Statement = sqlite.query("SELECT COUNT(*) AS n FROM agent_runs WHERE app_id = ? AND status = 'running'")
  const runsSince: Statement = sqlite.query('SELECT COUNT(*) AS n FROM agent_runs WHERE app_id = ? AND created_at >= ?')
  const costSince: Statement = sqlite.query('SELECT COALESCE(SUM(cost_usd), 0) AS usd FROM agent_runs WHERE app_id = ? AND created_at >= ?')
  const interrupted: Statement = sqlite.query("SELECT id, org_id, app_id, feedback_id, sandbox_pid, sandbox_start, node_id, trigger FROM agent_runs WHERE status = 'running' ORDER BY id")
  const setSandbox: Statement = sqlite.query('UPDATE agent_runs SET sandbox_pid = ?, sandbox_start = ? WHERE id = ?')
  const failInterrupted: Statement = sqlite.query("UPDATE agent_runs SET status = 'failed', error = ?, ended_at = ? WHERE id = ? AND status = 'running'")

  const pending: Statement = sqlite.query(`SELECT id, pr_url, text, author, received_at FROM pending_reviews WHERE feedback_id = ? ORDER BY id LIMIT ${PENDING_REVIEWS_MAX}`)
  const dropPending: Statement = sqlite.query('DELETE FROM pending_reviews WHERE id = ?')
  const pendingFor: Statement = sqlite.query(`SELECT author, received_at AS receivedAt FROM pending_reviews WHERE feedback_id = ? AND org_id = ? ORDER BY id LIMIT ${PENDING_REVIEWS_MAX}`)

  // The API's reads: every one takes the Org.
  const run: Statement = sqlite.query('SELECT * FROM agent_runs WHERE id = ? AND org_id = ?')
  const latest: Statement = sqlite.query('SELECT * FROM agent_runs WHERE feedback_id = ? AND org_id = ? ORDER BY id DESC LIMIT 1')
  const all: Statement = sqlite.query(`SELECT * FROM agent_runs WHERE feedback_id = ? AND org_id = ? ORDER BY id DESC LIMIT ${RUN_LIST_LIMIT}`)
  const report: Statement = sqlite.query('SELECT 1 FROM feedback WHERE id = ? AND org_id = ?')
  const prChanges = prChangeBodies(side.bodies)

  /**
   * The report's move, the shared URL and the event of a run's end, then the pull request's news that
   * came during the run (merged, closed: held by the webhook while the report was `agent_running`),
   * applied or dropped; in the caller's transaction.
   */
  function settle(scope: RunScope, outcome: RunOutcome, now: number): void {
    side.move(sqlite, scope.feedbackId, outcome.move.to, outcome.move.cause)
    // Reports in the cluster point at the same pull request.
    if (outcome.shareUrl) shareUrl.run(outcome.shareUrl, now, scope.feedbackId)
    side.record({ orgId: scope.orgId, appId: scope.appId }, outcome.event.type, outcome.event.data)
    side.driver.run(prChanges.applyDeferred(scope.feedbackId, now))
  }

  /** The insert's parameters: every column named (trigger and review text default for a report's run). */
  const row = (r: RunRowInsert) => ({ ...r, trigger: r.trigger ?? 'report', reviewText: r.reviewText ?? null })

  function start(r: RunRowInsert, event: RunEvent, from: 'queued' | 'pr_opened', consumed: string[] = []): boolean | 'app_busy' {
    try {
      return sqlite
        .transaction(() => {
          if (!side.move(sqlite, r.feedbackId, 'agent_running', { by: 'system', from })) return false
          insertRun.run(row(r))
          for (const id of consumed) dropPending.run(id)
          side.record({ orgId: r.orgId, appId: r.appId }, event.type, event.data)
          return true
        })
        .immediate()
    } catch (e) {
      // One `running` run per App (agent_runs_one_running_per_app_uq): the whole start rolled back.
      if (isSqliteUniqueViolation(e, 'agent_runs.app_id')) return 'app_busy'
      throw e
    }
  }

  return {
    feedback: async (id) => getFeedback.get(id) as RunFeedbackRow | null,
    runningCount: async (appId) => (runningForApp.get(appId) as { n: number }).n,
    runsSince: async (appId, since) => (runsSince.get(appId, since) as { n: number }).n,
    costSince: async (appId, since) => (costSince.get(appId, since) as { usd: number }).usd,

    startRun: async (r, event) => start(r, event, 'queued'),
    startReviewRun: async (r, event, consumed) => start({ ...r, trigger: 'review' }, event, 'pr_opened', consumed),
    pendingReviews: async (feedbackId) => pending.all(feedbackId) as PendingReview[],
    dropPendingReviews: async (ids) => sqlite.transaction(() => ids.forEach((id) => dropPending.run(id)))(),
    pendingReviewsFor: async (orgId, feedbackId) => pendingFor.all(feedbackId, orgId) as { author: string | null; receivedAt: number }[],
    reviewRuns: async (feedbackId) => (reviewRuns.get(feedbackId) as { n: number }).n,

    async recordFailedStart(r, end, outcome) {
      sqlite.transaction(() => {
        insertRun.run(row(r))
        updateRun.run({ ...end })
        settle({ feedbackId: r.feedbackId, orgId: r.orgId, appId: r.appId }, outcome, end.endedAt)
      })()
    },

    async finishRun(scope, end, outcome) {
      sqlite.transaction(() => {
        updateRun.run({ ...end })
        settle(scope, outcome, end.endedAt)
      })()
    },

    setSandbox: async (id, pid, identity) => void setSandbox.run(pid, identity, id),
    interrupted: async (nodes) => {
      const all = interrupted.all() as (InterruptedRun & { node_id: string | null })[]
      const pick = nodes === undefined ? all : nodes === null ? all.filter((r) => r.node_id === null) : all.filter((r) => r.node_id !== null && nodes.includes(r.node_id))
      return pick.map(({ node_id: _n, ...r }) => r)
    },

    async failInterrupted(r, error, endedAt, outcome) {
      return sqlite.transaction(() => {
        if (failInterrupted.run(error, endedAt, r.id).changes !== 1) return false
        settle({ feedbackId: r.feedback_id, orgId: r.org_id, appId: r.app_id }, outcome, endedAt)
        return true
      })()
    },

    byId: async (orgId, id) => run.get(id, orgId) as RunRow | null,
    latestFor: async (orgId, feedbackId) => latest.get(feedbackId, orgId) as RunRow | null,
    allFor: async (orgId, feedbackId) => all.all(feedbackId, orgId) as RunRow[],
    feedbackInOrg: async (orgId, feedbackId) => report.get(feedbackId, orgId) !== null,
  }
}

/**
 * The agent runner's queries: the report a run works on, the `agent_runs` rows, the per-App caps, and
 * sharing a pull request's URL with the lead's duplicates. Status moves go through the lifecycle.
 */
import type { Database, Statement } from 'bun:sqlite'
import type { FeedbackCoreColumns } from '../db/feedback-row'

/** A report as a run reads it: what the task file and the PR are built from. */
export interface RunFeedbackRow extends FeedbackCoreColumns {
  theme: string | null
  consolidated_text: string | null
  duplicate_count: number
  console_logs: string | null
  component_target: string | null
  attachments: string | null
  /** Null until sanitized: the task then carries no text (src/sanitize/servable.ts). */
  redactions: string | null
}

export interface RunRowInsert {
  id: string
  orgId: string
  appId: string
  feedbackId: string
  provider: string
  model: string | null
  status: 'running' | 'failed'
  branch: string
  timings: string
  startedAt: number
  createdAt: number
}

export interface RunRowEnd {
  id: string
  status: 'succeeded' | 'failed' | 'guardrailed'
  model: string | null
  tokensIn: number
  tokensOut: number
  costUsd: number
  prUrl: string | null
  guardrailReason: string | null
  error: string | null
  timings: string
  summary: string | null
  outputTail: string | null
  endedAt: number
}

export function createRunsRepo(sqlite: Database) {
  const getFeedback: Statement = sqlite.query(
    'SELECT id, org_id, app_id, status, version, text, url, theme, consolidated_text, duplicate_count, duplicate_of_id, console_logs, component_target, attachments, redactions FROM feedback WHERE id = ?',
  )
  const shareUrl: Statement = sqlite.query('UPDATE feedback SET merge_request_url = ?, version = version + 1, updated_at = ? WHERE duplicate_of_id = ?')
  const insertRun: Statement = sqlite.query(
    `INSERT INTO agent_runs (id, org_id, app_id, feedback_id, provider, model, status, branch, timings, started_at, created_at)
     VALUES ($id, $orgId, $appId, $feedbackId, $provider, $model, $status, $branch, $timings, $startedAt, $createdAt)`,
  )
  const updateRun: Statement = sqlite.query(
    `UPDATE agent_runs SET status = $status, model = $model, tokens_in = $tokensIn, tokens_out = $tokensOut, cost_usd = $costUsd,
       pr_url = $prUrl, guardrail_reason = $guardrailReason, error = $error, timings = $timings, summary = $summary,
       output_tail = $outputTail, ended_at = $endedAt WHERE id = $id`,
  )
  const runningForApp: Statement = sqlite.query("SELECT COUNT(*) AS n FROM agent_runs WHERE app_id = ? AND status = 'running'")
  const runsSince: Statement = sqlite.query('SELECT COUNT(*) AS n FROM agent_runs WHERE app_id = ? AND created_at >= ?')
  const costSince: Statement = sqlite.query('SELECT COALESCE(SUM(cost_usd), 0) AS usd FROM agent_runs WHERE app_id = ? AND created_at >= ?')
  const interrupted: Statement = sqlite.query("SELECT id, org_id, app_id, feedback_id, sandbox_pid, sandbox_start FROM agent_runs WHERE status = 'running'")
  const setSandbox: Statement = sqlite.query('UPDATE agent_runs SET sandbox_pid = ?, sandbox_start = ? WHERE id = ?')
  const failInterrupted: Statement = sqlite.query("UPDATE agent_runs SET status = 'failed', error = ?, ended_at = ? WHERE id = ? AND status = 'running'")

  return {
    /** The report a run works on (raw columns), or null. */
    feedback: (id: string): RunFeedbackRow | null => getFeedback.get(id) as RunFeedbackRow | null,
    /** Points every duplicate of a lead at the lead's pull request. */
    shareUrl: (leadId: string, prUrl: string, now: number) => shareUrl.run(prUrl, now, leadId),
    insertRun: (r: RunRowInsert) => insertRun.run({ ...r }),
    endRun: (r: RunRowEnd) => updateRun.run({ ...r }),
    runningCount: (appId: string): number => (runningForApp.get(appId) as { n: number }).n,
    runsSince: (appId: string, since: number): number => (runsSince.get(appId, since) as { n: number }).n,
    costSince: (appId: string, since: number): number => (costSince.get(appId, since) as { usd: number }).usd,
    /** Runs left `running` by a crash or restart. */
    interrupted: () => interrupted.all() as { id: string; org_id: string; app_id: string; feedback_id: string; sandbox_pid: number | null; sandbox_start: string | null }[],
    /** Records the running sandbox's PID and identity (cleared with null when it ended). */
    setSandbox: (id: string, pid: number | null, identity: string | null) => setSandbox.run(pid, identity, id),
    failInterrupted: (id: string, error: string, now: number): boolean => failInterrupted.run(error, now, id).changes === 1,
  }
}

/** Agent-run reads for the API. Every query takes the Org, so another Org's ids find nothing. */
import type { Database, Statement } from 'bun:sqlite'

export interface RunRow {
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

export function createAgentRunsRepo(sqlite: Database) {
  const byId: Statement = sqlite.query('SELECT * FROM agent_runs WHERE id = ? AND org_id = ?')
  const latestFor: Statement = sqlite.query('SELECT * FROM agent_runs WHERE feedback_id = ? AND org_id = ? ORDER BY id DESC LIMIT 1')
  const allFor: Statement = sqlite.query('SELECT * FROM agent_runs WHERE feedback_id = ? AND org_id = ? ORDER BY id DESC LIMIT 200')
  const feedbackInOrg: Statement = sqlite.query('SELECT 1 FROM feedback WHERE id = ? AND org_id = ?')
  return {
    byId: (orgId: string, id: string): RunRow | null => byId.get(id, orgId) as RunRow | null,
    latestFor: (orgId: string, feedbackId: string): RunRow | null => latestFor.get(feedbackId, orgId) as RunRow | null,
    allFor: (orgId: string, feedbackId: string): RunRow[] => allFor.all(feedbackId, orgId) as RunRow[],
    feedbackInOrg: (orgId: string, feedbackId: string): boolean => feedbackInOrg.get(feedbackId, orgId) !== null,
  }
}

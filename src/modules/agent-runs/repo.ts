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

/** Agent-run reads for the API, prepared once. */
export class AgentRunsRepo {
  private readonly run: Statement
  private readonly latest: Statement
  private readonly all: Statement
  private readonly report: Statement

  constructor(sqlite: Database) {
    this.run = sqlite.query('SELECT * FROM agent_runs WHERE id = ? AND org_id = ?')
    this.latest = sqlite.query('SELECT * FROM agent_runs WHERE feedback_id = ? AND org_id = ? ORDER BY id DESC LIMIT 1')
    this.all = sqlite.query('SELECT * FROM agent_runs WHERE feedback_id = ? AND org_id = ? ORDER BY id DESC LIMIT 200')
    this.report = sqlite.query('SELECT 1 FROM feedback WHERE id = ? AND org_id = ?')
  }

  byId(orgId: string, id: string): RunRow | null {
    return this.run.get(id, orgId) as RunRow | null
  }

  /** The report's latest run. */
  latestFor(orgId: string, feedbackId: string): RunRow | null {
    return this.latest.get(feedbackId, orgId) as RunRow | null
  }

  /** The report's runs, newest first (at most 200). */
  allFor(orgId: string, feedbackId: string): RunRow[] {
    return this.all.all(feedbackId, orgId) as RunRow[]
  }

  feedbackInOrg(orgId: string, feedbackId: string): boolean {
    return this.report.get(feedbackId, orgId) !== null
  }
}

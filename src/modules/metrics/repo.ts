/**
 * Instance-wide figures for GET /metrics, read at scrape time (operators' view of the whole instance, so
 * deliberately not scoped to one Org; the route is protected by FIXLOOP_METRICS_TOKEN, not an Org key).
 */
import type { Database } from 'bun:sqlite'

export interface StoreSnapshot {
  reportsByStatus: { status: string; n: number }[]
  /** `dueSince`: when the longest-waiting due job of the kind became due (null when none is due yet). */
  jobsByKind: { kind: string; n: number; dueSince: number | null }[]
  runsByStatus: { status: string; n: number; cost: number }[]
  /** Empty when the webhooks table does not exist (an older schema). */
  deliveriesByStatus: { status: string; n: number }[]
}

export function createMetricsRepo(sqlite: Database) {
  const reports = sqlite.query('SELECT status, COUNT(*) AS n FROM feedback GROUP BY status')
  // Only due work has an age: the recurring uploads_gc job waits for its hour by design, and a job retried
  // later (backoff) waits from its new due time. A job is due from run_after (never before it was created).
  const jobs = sqlite.query('SELECT kind, COUNT(*) AS n, MIN(CASE WHEN run_after <= ?1 THEN MAX(run_after, created_at) END) AS dueSince FROM jobs GROUP BY kind')
  const runs = sqlite.query('SELECT status, COUNT(*) AS n, COALESCE(SUM(cost_usd), 0) AS cost FROM agent_runs GROUP BY status')
  const hasDeliveries = !!sqlite.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'webhook_deliveries'").get()
  const deliveries = hasDeliveries ? sqlite.query('SELECT status, COUNT(*) AS n FROM webhook_deliveries GROUP BY status') : undefined
  return {
    snapshot: (now: number): StoreSnapshot => ({
      reportsByStatus: reports.all() as StoreSnapshot['reportsByStatus'],
      jobsByKind: jobs.all(now) as StoreSnapshot['jobsByKind'],
      runsByStatus: runs.all() as StoreSnapshot['runsByStatus'],
      deliveriesByStatus: (deliveries?.all() ?? []) as StoreSnapshot['deliveriesByStatus'],
    }),
  }
}

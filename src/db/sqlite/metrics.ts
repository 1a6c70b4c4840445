/** SQLite side of modules/metrics/repo.ts. */
import type { MetricsRepo, StoreSnapshot } from '../../modules/metrics/repo'
import type { SqliteStorage } from './storage'

export function createSqliteMetricsRepo({ sqlite }: SqliteStorage): MetricsRepo {
  const reports = sqlite.query('SELECT status, COUNT(*) AS n FROM feedback GROUP BY status ORDER BY status')
  // Only due work has an age: the recurring uploads_gc job waits for its hour by design, and a job retried
  // later (backoff) waits from its new due time. A job is due from run_after (never before it was created).
  const jobs = sqlite.query('SELECT kind, COUNT(*) AS n, MIN(CASE WHEN run_after <= ?1 THEN MAX(run_after, created_at) END) AS dueSince FROM jobs GROUP BY kind ORDER BY kind')
  const runs = sqlite.query('SELECT status, COUNT(*) AS n, COALESCE(SUM(cost_usd), 0) AS cost FROM agent_runs GROUP BY status ORDER BY status')
  const hasDeliveries = !!sqlite.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'webhook_deliveries'").get()
  const deliveries = hasDeliveries ? sqlite.query('SELECT status, COUNT(*) AS n FROM webhook_deliveries GROUP BY status ORDER BY status') : undefined
  return {
    snapshot: async (now) => ({
      reportsByStatus: reports.all() as StoreSnapshot['reportsByStatus'],
      jobsByKind: jobs.all(now) as StoreSnapshot['jobsByKind'],
      runsByStatus: runs.all() as StoreSnapshot['runsByStatus'],
      deliveriesByStatus: (deliveries?.all() ?? []) as StoreSnapshot['deliveriesByStatus'],
    }),
  }
}

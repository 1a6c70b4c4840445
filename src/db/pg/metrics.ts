/** PostgreSQL side of modules/metrics/repo.ts. */
import type { MetricsRepo, StoreSnapshot } from '../../modules/metrics/repo'
import { many, type PgStorage } from './storage'

export function createPgMetricsRepo({ pool }: PgStorage): MetricsRepo {
  return {
    snapshot: async (now) => {
      // Four reads at once on the pool (a scrape is not a transaction: each figure is of its own moment,
      // as on SQLite, where each statement reads its own snapshot).
      const [reportsByStatus, jobsByKind, runsByStatus, deliveriesByStatus] = await Promise.all([
        many<StoreSnapshot['reportsByStatus'][number]>(pool, 'SELECT status, COUNT(*)::int AS n FROM feedback GROUP BY status ORDER BY status'),
        // Only due work has an age (see the SQLite side).
        many<StoreSnapshot['jobsByKind'][number]>(
          pool,
          'SELECT kind, COUNT(*)::int AS n, MIN(CASE WHEN run_after <= $1 THEN GREATEST(run_after, created_at) END) AS "dueSince" FROM jobs GROUP BY kind ORDER BY kind',
          [now],
        ),
        many<StoreSnapshot['runsByStatus'][number]>(pool, 'SELECT status, COUNT(*)::int AS n, COALESCE(SUM(cost_usd), 0)::float8 AS cost FROM agent_runs GROUP BY status ORDER BY status'),
        many<StoreSnapshot['deliveriesByStatus'][number]>(pool, 'SELECT status, COUNT(*)::int AS n FROM webhook_deliveries GROUP BY status ORDER BY status'),
      ])
      return { reportsByStatus, jobsByKind, runsByStatus, deliveriesByStatus }
    },
  }
}

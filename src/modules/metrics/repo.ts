/**
 * Instance-wide figures for GET /metrics, read at scrape time (operators' view of the whole instance, so
 * deliberately not scoped to one Org; the route is protected by FIXLOOP_METRICS_TOKEN, not an Org key).
 *
 * The port: one interface, a SQLite (src/db/sqlite/metrics.ts) and a PostgreSQL (src/db/pg/metrics.ts)
 * implementation, both held to test/repos/metrics.test.ts.
 */

export interface StoreSnapshot {
  reportsByStatus: { status: string; n: number }[]
  /** `dueSince`: when the longest-waiting due job of the kind became due (null when none is due yet). */
  jobsByKind: { kind: string; n: number; dueSince: number | null }[]
  runsByStatus: { status: string; n: number; cost: number }[]
  /** Empty when the webhooks table does not exist (an older SQLite schema). */
  deliveriesByStatus: { status: string; n: number }[]
}

export interface MetricsRepo {
  /** Every list ordered by its label (status or kind). */
  snapshot(now: number): Promise<StoreSnapshot>
}


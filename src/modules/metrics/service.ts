/**
 * Builds the instance's metrics registry: request counts and latency (fed by the foundation plugin),
 * reports by status, job backlog and oldest job age, agent runs and cost by outcome, WAL size and process
 * figures. Other modules add collectors to the returned registry (see docs/operations.md, "Metrics").
 */
import { statSync } from 'node:fs'
import type { Clock } from '../../core/clock'
import type { MetricsRepo } from './repo'
import { MetricsRegistry, type MetricFamily } from './registry'
import { RequestMetrics } from './request-metrics'

function walBytes(walFile: string): number {
  try {
    return statSync(walFile).size
  } catch {
    return 0
  }
}

/**
 * `databaseWide`: whether this process reports the database-wide gauges (reports, jobs, agent runs,
 * deliveries). In cluster mode only the `maintenance` holder does: N nodes scraped would otherwise read
 * the same figures from the database N times.
 */
export function createMetrics(repo: MetricsRepo, clock: Clock, databaseWide: () => boolean = () => true, walFile?: string) {
  const requests = new RequestMetrics()
  const registry = new MetricsRegistry()
  const startedAt = Date.now()
  registry.add(() => requests.collect())
  // This process's own figures: a collector of their own, so a scrape has them while the database is away.
  registry.add((): MetricFamily[] => [
    { name: 'fixloop_process_resident_memory_bytes', help: 'Resident set size of the server process.', type: 'gauge', samples: [{ value: process.memoryUsage.rss() }] },
    { name: 'fixloop_process_uptime_seconds', help: 'Seconds since the server started.', type: 'gauge', samples: [{ value: (Date.now() - startedAt) / 1000 }] },
    // The write-ahead log is SQLite's; PostgreSQL's is the server's own business (pg_stat_wal).
    ...(walFile ? [{ name: 'fixloop_wal_bytes', help: 'Size of the SQLite write-ahead log file.', type: 'gauge' as const, samples: [{ value: walBytes(walFile) }] }] : []),
  ])
  registry.add(async (): Promise<MetricFamily[]> => {
    const now = clock.now()
    if (!databaseWide()) return []
    const s = await repo.snapshot(now)
    const oldest = s.jobsByKind.reduce((m, j) => Math.min(m, j.dueSince ?? Infinity), Infinity)
    return [
      { name: 'fixloop_reports', help: 'Feedback reports stored, by status.', type: 'gauge', samples: s.reportsByStatus.map((r) => ({ labels: { status: r.status }, value: r.n })) },
      { name: 'fixloop_jobs_backlog', help: 'Jobs waiting or running in the durable queue, by kind.', type: 'gauge', samples: s.jobsByKind.map((j) => ({ labels: { kind: j.kind }, value: j.n })) },
      { name: 'fixloop_jobs_oldest_age_seconds', help: 'Seconds the longest-waiting due job has been due (0 when no job is due).', type: 'gauge', samples: [{ value: oldest === Infinity ? 0 : Math.max(0, (now - oldest) / 1000) }] },
      { name: 'fixloop_agent_runs', help: 'Agent runs, by outcome (status).', type: 'gauge', samples: s.runsByStatus.map((r) => ({ labels: { outcome: r.status }, value: r.n })) },
      { name: 'fixloop_agent_cost_usd', help: 'Agent cost reported by runs, in US dollars, by outcome.', type: 'gauge', samples: s.runsByStatus.map((r) => ({ labels: { outcome: r.status }, value: r.cost })) },
      { name: 'fixloop_webhook_deliveries', help: 'Webhook deliveries, by outcome (status).', type: 'gauge', samples: s.deliveriesByStatus.map((r) => ({ labels: { outcome: r.status }, value: r.n })) },
    ]
  })
  return { registry, requests }
}
export type Metrics = ReturnType<typeof createMetrics>

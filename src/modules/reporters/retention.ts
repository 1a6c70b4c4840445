/**
 * The report retention (CONTRACT "Retention": `--retention-days N`, the App's `retentionDays`, default 0:
 * kept forever): a background sweep deletes the reports created more than N days ago, with their
 * attachments and blobs (any upload kind: screenshots, attachments, replays) and every record that holds
 * their text or identity (ReportersRepo.removeReports, the same removal as a reporter's erasure); events
 * stay, holding ids and states only. Bounded: at most the store's `eraseBatch` reports per transaction, smaller
 * batches and pauses while intake is busy (./age-sweep.ts: intake never waits behind a sweep), at most
 * RETENTION_PER_RUN per App and run, the rest at the next run. An expiring lead hands its cluster to its oldest surviving duplicate
 * (duplicates older than the limit expire with it). One node sweeps (the `maintenance` role in cluster
 * mode, as the spam sweep); a second sweep would find nothing to delete.
 *
 * Each run that deletes anything writes one audit row per App (`reports.expired`, actor `system`, with how
 * many) and a log line; `fixloop_reports_expired_total` counts this process's deletions.
 */
import type { Logger } from '../../core/logger'
import type { ReportersRepo } from './repo'
import { createAgeSweep, startAgeSweep, type AgeSweepDeps } from './age-sweep'

export const RETENTION_SWEEP_EVERY_MS = 10 * 60_000
/** Reports per App and run; the rest go at the next run. */
export const RETENTION_PER_RUN = 10_000

export interface ReportRetentionDeps extends AgeSweepDeps {
  repo: Pick<ReportersRepo, 'retainingApps' | 'expiredIds' | 'removeReports' | 'eraseBatch'>
}

export function createReportRetention(deps: ReportRetentionDeps) {
  const { repo } = deps
  return createAgeSweep(
    {
      apps: () => repo.retainingApps(),
      async deleteBatch(app, before, limit) {
        const ids = await repo.expiredIds(app, before, limit)
        if (ids.length === 0) return { deleted: 0, uploadKeys: [] }
        const out = await repo.removeReports(app.orgId, ids)
        return { deleted: out.removed, uploadKeys: out.uploadKeys }
      },
      // The erasure's batch (ReportersRepo.eraseBatch): the same removal, so the same trade-off per dialect
      // (200 on SQLite, whose one write lock holds intake back; 1,000 on PostgreSQL, row locks only).
      batch: repo.eraseBatch,
      maxBatches: Math.ceil(RETENTION_PER_RUN / repo.eraseBatch),
      auditAction: 'reports.expired',
      logMessage: 'report retention: deleted expired reports',
    },
    deps,
  )
}
export type ReportRetention = ReturnType<typeof createReportRetention>

/** Sweeps a minute after start and then every RETENTION_SWEEP_EVERY_MS while `mine()` (the `maintenance` role); returns the stop function. */
export function startReportRetention(retention: ReportRetention, log: Logger, mine: () => boolean = () => true): () => void {
  return startAgeSweep(retention, 'report retention', RETENTION_SWEEP_EVERY_MS, log, mine)
}

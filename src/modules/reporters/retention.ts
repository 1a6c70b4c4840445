/**
 * The report retention (CONTRACT "Retention": `--retention-days N`, the App's `retentionDays`, default 0:
 * kept forever): a background sweep deletes the reports created more than N days ago, with their
 * attachments and blobs (any upload kind: screenshots, attachments, replays) and every record that holds
 * their text or identity (ReportersRepo.removeReports, the same removal as a reporter's erasure); events
 * stay, holding ids and states only. Bounded: RETENTION_BATCH reports per transaction, a yield to the
 * event loop between batches (intake never waits behind a sweep), at most RETENTION_MAX_BATCHES per App
 * and run, the rest at the next run. An expiring lead hands its cluster to its oldest surviving duplicate
 * (duplicates older than the limit expire with it). One node sweeps (the `maintenance` role in cluster
 * mode, as the spam sweep); a second sweep would find nothing to delete.
 *
 * Each run that deletes anything writes one audit row per App (`reports.expired`, actor `system`, with how
 * many) and a log line; `fixloop_reports_expired_total` counts this process's deletions.
 */
import type { Clock } from '../../core/clock'
import type { Logger } from '../../core/logger'
import type { AuditEntry } from '../audit/entry'
import type { ReportersRepo } from './repo'

const DAY_MS = 24 * 3600_000
export const RETENTION_SWEEP_EVERY_MS = 10 * 60_000
export const RETENTION_BATCH = 200
export const RETENTION_MAX_BATCHES = 50

export interface ReportRetentionDeps {
  repo: Pick<ReportersRepo, 'retainingApps' | 'expiredIds' | 'removeReports'>
  /** Removes detached uploads' objects now (src/modules/uploads/service.ts `discard`). */
  uploads: { discard(keys: readonly string[]): Promise<number> }
  audit: { record(e: AuditEntry): Promise<unknown> }
  clock: Clock
  log: Logger
}

/** Lets queued work (intake requests, the group commit) run between two batches. */
const yieldToOthers = () => new Promise<void>((resolve) => setTimeout(resolve, 0))

export function createReportRetention(deps: ReportRetentionDeps) {
  const { repo, uploads, audit, clock, log } = deps
  let deletedTotal = 0
  let running: Promise<number> | null = null

  async function sweepApp(app: { id: string; orgId: string; days: number }): Promise<number> {
    const before = clock.now() - app.days * DAY_MS
    let deleted = 0
    let files = 0
    for (let batch = 0; batch < RETENTION_MAX_BATCHES; batch++) {
      const ids = await repo.expiredIds(app, before, RETENTION_BATCH)
      if (ids.length === 0) break
      const out = await repo.removeReports(app.orgId, ids)
      deleted += out.removed
      deletedTotal += out.removed
      if (out.uploadKeys.length > 0) files += await uploads.discard(out.uploadKeys)
      if (ids.length < RETENTION_BATCH) break
      await yieldToOthers()
    }
    if (deleted > 0) {
      await audit.record({ orgId: app.orgId, actor: 'system', action: 'reports.expired', targetId: app.id, data: { deleted, attachments: files, retentionDays: app.days } })
      log.info('report retention: deleted expired reports', { appId: app.id, deleted, attachments: files, retentionDays: app.days })
    }
    return deleted
  }

  async function run(): Promise<number> {
    let deleted = 0
    for (const app of await repo.retainingApps()) deleted += await sweepApp(app)
    return deleted
  }

  return {
    /** One pass over every App with a retention; how many reports it deleted. Runs never overlap. */
    sweep(): Promise<number> {
      running ??= run().finally(() => (running = null))
      return running
    },
    /** Reports this process deleted since it started (the metric). */
    deletedTotal: () => deletedTotal,
  }
}
export type ReportRetention = ReturnType<typeof createReportRetention>

/** Sweeps a minute after start and then every RETENTION_SWEEP_EVERY_MS while `mine()` (the `maintenance` role); returns the stop function. */
export function startReportRetention(retention: ReportRetention, log: Logger, mine: () => boolean = () => true): () => void {
  const run = async () => {
    if (!mine()) return
    try {
      await retention.sweep()
    } catch (e) {
      log.warn('report retention sweep failed; retried at the next run', { error: e instanceof Error ? e.message : String(e) })
    }
  }
  const first = setTimeout(() => void run(), 60_000)
  const timer = setInterval(() => void run(), RETENTION_SWEEP_EVERY_MS)
  return () => {
    clearTimeout(first)
    clearInterval(timer)
  }
}

/**
 * The spam folder's retention (CONTRACT "Retention": `--spam-retention-days N`, the App's
 * `spamRetentionDays`, default 30, 0 keeps spam forever): a background sweep deletes the reports that
 * have been in an App's spam folder longer than that (counted from `spam_marked_at`: classified at intake
 * or marked by hand), with their attachments and blobs, in bounded batches (AbuseRepo.deleteExpiredSpam:
 * SPAM_SWEEP_BATCH reports per transaction, at most SPAM_SWEEP_MAX_BATCHES per App and run, the rest at
 * the next run). One node sweeps (the `maintenance` role in cluster mode, as the event retention does);
 * a second sweep would only find nothing to delete.
 *
 * Each run that deletes anything writes one audit row per App (`spam.deleted`, actor `system`, with how
 * many) and a log line; `fixloop_spam_deleted_total` counts this process's deletions (docs/operations.md).
 */
import type { Clock } from '../core/clock'
import type { Logger } from '../core/logger'
import type { AuditEntry } from '../modules/audit/entry'
import type { AbuseRepo } from './abuse-repo'

const DAY_MS = 24 * 3600_000
export const SPAM_SWEEP_EVERY_MS = 10 * 60_000
export const SPAM_SWEEP_BATCH = 200
export const SPAM_SWEEP_MAX_BATCHES = 50

export interface SpamSweepDeps {
  repo: Pick<AbuseRepo, 'spamRetainingApps' | 'deleteExpiredSpam'>
  /** Removes detached uploads' objects now (src/modules/uploads/service.ts `discard`). */
  uploads: { discard(keys: readonly string[]): Promise<number> }
  audit: { record(e: AuditEntry): Promise<unknown> }
  clock: Clock
  log: Logger
}

export function createSpamSweep(deps: SpamSweepDeps) {
  const { repo, uploads, audit, clock, log } = deps
  let deletedTotal = 0
  let running: Promise<number> | null = null

  async function sweepApp(app: { id: string; orgId: string; days: number }): Promise<number> {
    const before = clock.now() - app.days * DAY_MS
    let deleted = 0
    let files = 0
    for (let batch = 0; batch < SPAM_SWEEP_MAX_BATCHES; batch++) {
      const out = await repo.deleteExpiredSpam(app, before, SPAM_SWEEP_BATCH)
      deleted += out.deleted
      deletedTotal += out.deleted
      if (out.uploadKeys.length > 0) files += await uploads.discard(out.uploadKeys)
      if (out.deleted < SPAM_SWEEP_BATCH) break
    }
    if (deleted > 0) {
      await audit.record({ orgId: app.orgId, actor: 'system', action: 'spam.deleted', targetId: app.id, data: { deleted, attachments: files, retentionDays: app.days } })
      log.info('spam retention: deleted reports from the spam folder', { appId: app.id, deleted, attachments: files, retentionDays: app.days })
    }
    return deleted
  }

  async function run(): Promise<number> {
    let deleted = 0
    for (const app of await repo.spamRetainingApps()) deleted += await sweepApp(app)
    return deleted
  }

  return {
    /** One pass over every App with a spam retention; how many reports it deleted. Runs never overlap. */
    sweep(): Promise<number> {
      running ??= run().finally(() => (running = null))
      return running
    },
    /** Reports this process deleted since it started (the metric). */
    deletedTotal: () => deletedTotal,
  }
}
export type SpamSweep = ReturnType<typeof createSpamSweep>

/**
 * Sweeps a minute after start and then every SPAM_SWEEP_EVERY_MS while `mine()` (the `maintenance` role);
 * returns the function that stops it.
 */
export function startSpamSweep(sweep: SpamSweep, log: Logger, mine: () => boolean = () => true): () => void {
  const run = async () => {
    if (!mine()) return
    try {
      await sweep.sweep()
    } catch (e) {
      log.warn('spam retention sweep failed; retried at the next run', { error: e instanceof Error ? e.message : String(e) })
    }
  }
  const first = setTimeout(() => void run(), 60_000)
  const timer = setInterval(() => void run(), SPAM_SWEEP_EVERY_MS)
  return () => {
    clearTimeout(first)
    clearInterval(timer)
  }
}

/**
 * The spam folder's retention (CONTRACT "Retention": `--spam-retention-days N`, the App's
 * `spamRetentionDays`, default 30, 0 keeps spam forever): a background sweep deletes the reports that
 * have been in an App's spam folder longer than that (counted from `spam_marked_at`: classified at intake
 * or marked by hand), with their attachments and blobs, in bounded batches (AbuseRepo.deleteExpiredSpam:
 * SPAM_SWEEP_BATCH reports per transaction, at most SPAM_SWEEP_MAX_BATCHES per App and run, the rest at
 * the next run; the sweep itself: src/modules/reporters/age-sweep.ts). One node sweeps (the `maintenance` role in cluster mode, as the event retention does);
 * a second sweep would only find nothing to delete.
 *
 * Each run that deletes anything writes one audit row per App (`spam.deleted`, actor `system`, with how
 * many) and a log line; `fixloop_spam_deleted_total` counts this process's deletions (docs/operations.md).
 */
import type { Logger } from '../core/logger'
import type { AbuseRepo } from './abuse-repo'
import { createAgeSweep, startAgeSweep, type AgeSweepDeps } from '../modules/reporters/age-sweep'

export const SPAM_SWEEP_EVERY_MS = 10 * 60_000
export const SPAM_SWEEP_BATCH = 200
export const SPAM_SWEEP_MAX_BATCHES = 50

export interface SpamSweepDeps extends AgeSweepDeps {
  repo: Pick<AbuseRepo, 'spamRetainingApps' | 'deleteExpiredSpam'>
}

export function createSpamSweep(deps: SpamSweepDeps) {
  const { repo } = deps
  return createAgeSweep(
    {
      apps: () => repo.spamRetainingApps(),
      deleteBatch: (app, before, limit) => repo.deleteExpiredSpam(app, before, limit),
      batch: SPAM_SWEEP_BATCH,
      maxBatches: SPAM_SWEEP_MAX_BATCHES,
      auditAction: 'spam.deleted',
      logMessage: 'spam retention: deleted reports from the spam folder',
    },
    deps,
  )
}
export type SpamSweep = ReturnType<typeof createSpamSweep>

/**
 * Sweeps a minute after start and then every SPAM_SWEEP_EVERY_MS while `mine()` (the `maintenance` role);
 * returns the function that stops it.
 */
export function startSpamSweep(sweep: SpamSweep, log: Logger, mine: () => boolean = () => true): () => void {
  return startAgeSweep(sweep, 'spam retention', SPAM_SWEEP_EVERY_MS, log, mine)
}

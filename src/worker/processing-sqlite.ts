/**
 * The embedded processing engine: one SQLite transaction per batch of reports, synchronous from the
 * first read to the commit, on the processing thread's own connection (thread-entry.ts). It differs on
 * purpose from the PostgreSQL engine (processing-pg.ts): one writer holds SQLite's lock, so a batch
 * yields it to intake (`intake.yieldWhen`) instead of running beside other nodes.
 */
import type { Clock } from '../core/clock'
import type { SqliteStore } from '../db/sqlite/store'
import { createClusterService } from '../dedup/service'
import { DEFAULT_THRESHOLDS } from '../dedup/decide'
import type { JobStep } from './loop'
import { createBatchWindows } from './steps/release-batch'
import { createProcessFeedbackStep } from './steps/process-feedback'
import { localClusterPort, PROCESSING_KINDS, type Processing, type ProcessingKind } from './processing'

/**
 * `intake` (the processing thread's view of the HTTP thread, db/sqlite/write-turns.ts): `yieldWhen` is
 * true while intake is active (a batch of reports then commits early), `mayBatch` once it has been quiet a while.
 */
export function createSqliteProcessingEngine(
  store: SqliteStore,
  clock: Clock,
  intake?: { yieldWhen: () => boolean; mayBatch: () => boolean },
  batchBudgetMs?: number,
): Processing {
  const batches = createBatchWindows(store.processing, clock, store.lifecycle)
  const cluster = createClusterService(store.sides, clock, DEFAULT_THRESHOLDS)
  // The job row is deleted inside the batch's transaction, with the report's changes.
  const finishJob = store.sides.jobs(PROCESSING_KINDS).finish
  const steps: Record<ProcessingKind, JobStep> = {
    process: createProcessFeedbackStep(store.sides.processing, clock, { cluster, batches, finishJob, batchBudgetMs, ...intake }),
    batch_release: batches.step,
  }
  return { steps, port: localClusterPort(cluster) }
}

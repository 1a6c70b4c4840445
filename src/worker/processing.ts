/**
 * The processing side of the worker: sanitize, cluster and route reports (`process` jobs) and release
 * batch windows (`batch_release`), with the App similarity indexes they need. Built once per process:
 * on SQLite on the processing thread in a server (thread-entry.ts), or in the HTTP thread when tests
 * drive the worker with an injected clock (src/services.ts); on PostgreSQL in the main thread, whose
 * worker runs every job kind (one node for now). Agent runs and upload collection stay on the HTTP
 * thread either way: they mostly wait on child processes and the blob store.
 */
import type { Clock } from '../core/clock'
import type { Storage } from '../db/storage'
import type { Lifecycle } from '../lifecycle/lifecycle'
import type { JobKind } from '../lifecycle/jobs'
import { createClusterService } from '../dedup/service'
import { createPgClusterService } from '../dedup/pg-service'
import { DEFAULT_THRESHOLDS } from '../dedup/decide'
import { localClusterPort, type ClusterPort } from '../dedup/port'
import type { JobStep } from './loop'
import type { JobsRepo } from './jobs-repo'
import type { WriteTurns } from '../db/sqlite/write-turns'
import { createBatchWindows } from './steps/release-batch'
import { createProcessFeedbackStep } from './steps/process-feedback'
import { createPgProcessFeedbackStep } from './steps/process-feedback-pg'

/** The job kinds the processing thread runs; the HTTP thread's worker runs the others. */
export const PROCESSING_KINDS = ['process', 'batch_release'] as const satisfies readonly JobKind[]
export type ProcessingKind = (typeof PROCESSING_KINDS)[number]
export const isProcessingKind = (kind: JobKind): kind is ProcessingKind => (PROCESSING_KINDS as readonly JobKind[]).includes(kind)

/**
 * The worker's pacing (loop.ts `busy`, `saturated`), read from intake's commit times (write-turns.ts):
 * a commit in the last 20 ms means intake is busy; a full batch in the last 50 ms means it saturates its core.
 */
export function intakePacing(turns: WriteTurns): { busy: () => boolean; saturated: () => boolean } {
  return { busy: () => turns.msSinceIntakeCommit() < 20, saturated: () => turns.msSinceIntakeCommit(true) < 50 }
}

export interface Processing {
  steps: Record<ProcessingKind, JobStep>
  port: ClusterPort
}

/**
 * `intake` (SQLite: the processing thread's view of the HTTP thread, db/sqlite/write-turns.ts): `yieldWhen` is
 * true while intake is active (a batch of reports then commits early), `mayBatch` once it has been quiet a while.
 */
export function createProcessing(
  storage: Storage,
  clock: Clock,
  lifecycle: Lifecycle,
  jobs: JobsRepo,
  intake?: { yieldWhen: () => boolean; mayBatch: () => boolean },
  batchBudgetMs?: number,
): Processing {
  const batches = createBatchWindows(storage, clock, lifecycle)
  if (storage.dialect === 'pg') {
    const cluster = createPgClusterService(storage, clock, DEFAULT_THRESHOLDS, lifecycle)
    const steps: Record<ProcessingKind, JobStep> = {
      process: createPgProcessFeedbackStep(storage, clock, { cluster, batches, lifecycle }),
      batch_release: batches.step,
    }
    return { steps, port: localClusterPort(cluster) }
  }
  const cluster = createClusterService(storage, clock, DEFAULT_THRESHOLDS, lifecycle)
  const finishJob = jobs.sqlite?.finish
  const steps: Record<ProcessingKind, JobStep> = {
    process: createProcessFeedbackStep(storage, clock, { cluster, batches, lifecycle, finishJob, batchBudgetMs, ...intake }),
    batch_release: batches.step,
  }
  return { steps, port: localClusterPort(cluster) }
}

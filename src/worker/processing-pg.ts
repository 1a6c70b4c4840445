/**
 * The PostgreSQL processing engine, run on every node for the partitions of Apps it holds
 * (src/nodes/partitions.ts): verdicts are computed from a snapshot read before the transaction, then
 * written in a PgTx (a batch's, or each report's own). It
 * differs on purpose from the embedded engine (processing-sqlite.ts): PostgreSQL has no single write
 * lock to yield, and the App indexes live in this node's memory.
 */
import type { Clock } from '../core/clock'
import type { PgStore } from '../db/pg/store'
import { createPgClusterService } from '../dedup/pg-service'
import { DEFAULT_THRESHOLDS } from '../dedup/decide'
import type { JobStep } from './loop'
import { createBatchWindows } from './steps/release-batch'
import { createPgProcessFeedbackStep } from './steps/process-feedback-pg'
import { localClusterPort, type Processing, type ProcessingKind } from './processing'

/** How long this node's intake must have been quiet before the engine takes batches. */
const QUIET_BEFORE_BATCH_MS = 250

export function createPgProcessingEngine(store: PgStore, clock: Clock): Processing {
  const batches = createBatchWindows(store.processing, clock, store.lifecycle)
  const cluster = createPgClusterService(store.sides, clock, DEFAULT_THRESHOLDS)
  const steps: Record<ProcessingKind, JobStep> = {
    // Batches only once this node's intake has been quiet a while (as the embedded engine, thread-entry.ts):
    // a batch holds this thread for its planning (~0.5 ms a report), which submissions must not wait for.
    process: createPgProcessFeedbackStep(store.sides.processing, clock, { cluster, batches, mayBatch: () => store.turns.msSinceIntakeCommit() >= QUIET_BEFORE_BATCH_MS }),
    batch_release: batches.step,
  }
  return { steps, port: localClusterPort(cluster), indexes: { apps: () => cluster.indexedApps(), forget: (appId) => cluster.forget(appId) } }
}

/**
 * The PostgreSQL processing engine, run by the node holding the `processing` role: each report's
 * verdict is computed from a snapshot read before its transaction, then written in a PgTx of its own. It
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

export function createPgProcessingEngine(store: PgStore, clock: Clock): Processing {
  const batches = createBatchWindows(store.processing, clock, store.lifecycle)
  const cluster = createPgClusterService(store.sides, clock, DEFAULT_THRESHOLDS)
  const steps: Record<ProcessingKind, JobStep> = {
    process: createPgProcessFeedbackStep(store.sides.processing, clock, { cluster, batches }),
    batch_release: batches.step,
  }
  return { steps, port: localClusterPort(cluster) }
}

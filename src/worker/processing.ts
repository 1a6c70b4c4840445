/**
 * The processing side of the worker: sanitize, cluster and route reports (`process` jobs) and release
 * batch windows (`batch_release`), with the App similarity indexes they need. Two engines, one per
 * dialect (processing-sqlite.ts, processing-pg.ts), built once per process by the composition root:
 * on SQLite on the processing thread in a server (thread-entry.ts), or in the HTTP thread when tests
 * drive the worker with an injected clock; on PostgreSQL on the node holding the `processing` role.
 * Agent runs and upload collection stay on the HTTP thread either way: they mostly wait on child
 * processes and the blob store.
 */
import type { JobKind } from '../lifecycle/jobs'
import type { ClusterPort } from '../dedup/port'
import type { ClusterService } from '../dedup/service'
import type { PgClusterService } from '../dedup/pg-service'
import type { JobStep } from './loop'
import type { IntakeTurns } from '../db/intake-turns'

/** The job kinds the processing thread runs; the HTTP thread's worker runs the others. */
export const PROCESSING_KINDS = ['process', 'batch_release'] as const satisfies readonly JobKind[]
export type ProcessingKind = (typeof PROCESSING_KINDS)[number]
export const isProcessingKind = (kind: JobKind): kind is ProcessingKind => (PROCESSING_KINDS as readonly JobKind[]).includes(kind)

/**
 * The worker's pacing (loop.ts `busy`, `saturated`), read from intake's commit times (write-turns.ts):
 * a commit in the last 20 ms means intake is busy; a full batch in the last 50 ms means it saturates its core.
 */
export function intakePacing(turns: IntakeTurns): { busy: () => boolean; saturated: () => boolean } {
  return { busy: () => turns.msSinceIntakeCommit() < 20, saturated: () => turns.msSinceIntakeCommit(true) < 50 }
}

export interface Processing {
  steps: Record<ProcessingKind, JobStep>
  port: ClusterPort
  /** Cluster mode: the Apps indexed on this node, and dropping one's index (src/nodes/partitions.ts). */
  indexes?: { apps(): string[]; forget(appId: string): void }
}

/** The port over a cluster service in this thread (either dialect). */
export function localClusterPort<Tx>(cluster: ClusterService | PgClusterService<Tx>): ClusterPort {
  return {
    prepare: (appId) => cluster.prepare(appId),
    similar: async (id, limit) => cluster.similar(id, limit),
    merge: async (id, leadId) => cluster.merge(id, leadId),
    // One commit: an unmerged report is never left without the job that moves it on as a lead.
    unmerge: async (id) => cluster.unmerge(id, true),
    rejectSuggestion: async (id) => cluster.rejectSuggestion(id),
    triageState: async (appId, unmergeScore) => cluster.triageState(appId, unmergeScore),
    resetLearning: async (appId, audit) => cluster.resetLearning(appId, audit),
    forgetRemoved: async (ids) => cluster.forgetRemoved(ids),
  }
}

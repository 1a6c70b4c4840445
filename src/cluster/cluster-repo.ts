/**
 * The rows of near-duplicate clustering (src/cluster/service.ts), as both storage sides return them:
 * src/db/sqlite/cluster.ts (synchronous statements, joined by the SQLite processing transaction) and
 * src/db/pg/cluster.ts (a PgTx per change). Status is only read there; moves go through the lifecycle.
 */
import type { FeedbackCoreColumns } from '../db/feedback-row'

export interface ClusterRow extends FeedbackCoreColumns {
  created_at: number
  component_target: string | null
  console_logs: string | null
  merge_locked: number
  /** Null until the worker has sanitized the row: such a row is never indexed, consolidated or served. */
  redactions: string | null
}

/** A candidate of a ranking: a row without the columns only features are built from. */
export type CandidateRow = Omit<ClusterRow, 'console_logs' | 'component_target' | 'created_at'>

/** What decides whether a report can take duplicates now (read fresh: another connection may archive it). */
export interface RootState {
  status: ClusterRow['status']
  duplicate_of_id: string | null
}

export interface LeadSummary {
  duplicateCount: number
  lastDuplicateAt: number | null
  theme: string
  consolidatedText: string
}


/**
 * The rows of near-duplicate clustering (src/dedup/service.ts), as both storage sides return them:
 * src/db/sqlite/dedup.ts (synchronous statements, joined by the SQLite processing transaction) and
 * src/db/pg/dedup.ts (a PgTx per change). Status is only read there; moves go through the lifecycle.
 */
import type { FeedbackCoreColumns } from '../db/feedback-row'
import type { DecisionKind } from './learn'

export interface ClusterRow extends FeedbackCoreColumns {
  created_at: number
  component_target: string | null
  console_logs: string | null
  merge_locked: number
  /** Null until the worker has sanitized the row: such a row is never indexed, consolidated or served. */
  redactions: string | null
  /** Leads a person rejected as this report's suggestion (JSON array of ids), never offered or merged again. */
  rejected_lead_ids: string | null
  /** The suggestion on the row (a lead), and its score. */
  suggested_lead_id: string | null
  suggested_score: number | null
  /** On an automatic duplicate: its merge's score (what an unmerge teaches the App's bars from). */
  merge_score: number | null
  /** Set when the report was marked spam (read where a lead's state is decided; absent on SQLite's rows). */
  spam_marked_at?: number | null
}

/** The columns of a row about suggestions and decisions (not read for a ranking's candidates). */
type TriageColumns = 'rejected_lead_ids' | 'suggested_lead_id' | 'suggested_score' | 'merge_score'

/** A candidate of a ranking: a row without the columns only features are built from. */
export type CandidateRow = Omit<ClusterRow, 'console_logs' | 'component_target' | 'created_at' | TriageColumns>

/** What decides whether a report can take duplicates now (read fresh: another connection may archive it). */
export interface RootState {
  status: ClusterRow['status']
  duplicate_of_id: string | null
  /** Set when a person marked the lead spam (issue 27): it takes no duplicates while it is. */
  spam_marked_at?: number | null
}

/** Why a report became a duplicate: the merge's score and reason (both null for a merge by hand). */
export interface MergeWhy {
  score: number | null
  reason: string | null
}

/** A person's decision about a pair clustering scored (stored in triage_decisions; learn.ts reads them). */
export interface StoredDecision {
  feedbackId: string
  leadId: string
  kind: DecisionKind
  score: number
}

export interface LeadSummary {
  duplicateCount: number
  lastDuplicateAt: number | null
  theme: string
  consolidatedText: string
}


/**
 * What the two clustering services (service.ts on the embedded store, pg-service.ts on PostgreSQL) are
 * given by their processing engine: the clustering queries of its store and the audit writer that joins
 * their transactions. The store's dialect folder implements them (src/db/sqlite/dedup.ts,
 * src/db/pg/dedup.ts), so neither service names a dialect. Status is only read here; moves go through
 * the lifecycle, and a cluster change's events are recorded in the caller's transaction.
 */
import type { AuditEntry } from '../modules/audit/entry'
import type { EventPayloads } from '../lifecycle/event-types'
import type { CandidateRow, ClusterRow, LeadSummary, MergeWhy, RootState, StoredDecision } from './cluster-repo'
import type { Suggestion } from './clusterer'
import type { Decision } from './learn'
import type { CalibrationSnapshot } from './calibrate'

type Scope = { orgId: string; appId: string }

/** The embedded store's clustering queries: synchronous, joined by the caller's SQLite transaction. */
export interface SyncClusterRepo {
  get(id: string): ClusterRow | null
  /** A lead-to-be's status and link, or null when the report is gone. */
  rootState(id: string): RootState | null
  /** A ranking's candidates in one statement, by id (without their largest columns); missing ids are absent. */
  getCandidates(ids: string[]): Map<string, CandidateRow>
  /** The App's newest `limit` sanitized reports, oldest first, streamed. */
  iterateApp(appId: string, limit: number): IterableIterator<ClusterRow>
  allOfApp(appId: string, limit: number): ClusterRow[]
  duplicateIds(leadId: string): string[]
  /** The newest sanitized duplicates (at most 200), newest first: ids and texts in step. */
  duplicateTexts(leadId: string): { ids: string[]; texts: string[] }
  /** How many duplicates the lead has, the newest one's time and the greatest duplicate id (from the index alone). */
  duplicateStats(leadId: string): { n: number; last: number | null; maxId: string | null }
  /** True when a duplicate of the lead is not sanitized yet (one merged raw before 0006). */
  hasRawDuplicate(leadId: string): boolean
  saveLead(leadId: string, s: LeadSummary, now: number): void
  /** Makes `id` a duplicate of `leadId` (its own summary and suggestion are cleared); `locked` keeps clustering off it. */
  setDuplicate(id: string, leadId: string, locked: boolean, why: MergeWhy, now: number): void
  setSuggestion(id: string, s: Suggestion | null, now: number): void
  /** Clears the report's suggestion and remembers `leadId` (its lead as served) as rejected; false when it had none. */
  rejectSuggestion(id: string, leadId: string, now: number): boolean
  recordDecision(scope: Scope, d: StoredDecision, now: number): void
  decisions(appId: string, limit: number): Decision[]
  calibration(appId: string): CalibrationSnapshot | null
  saveCalibration(appId: string, s: CalibrationSnapshot, now: number): void
  /** Deletes every decision of the App, in the caller's transaction; how many of each kind went. */
  clearDecisions(appId: string): { kind: string; n: number }[]
  moveDuplicates(fromLeadId: string, toLeadId: string, now: number): void
  /** Makes a duplicate a lead again, locked against automatic clustering. */
  setUnmerged(id: string, now: number): void
  /** One IMMEDIATE transaction, or a savepoint of the caller's (a processing transaction, a batch). */
  transaction<T>(work: () => T): T
  recordAttached(scope: Scope, data: EventPayloads['feedback.duplicate_attached']): void
  recordSuggested(scope: Scope, data: EventPayloads['feedback.duplicate_suggested']): void
  recordUnmerged(scope: Scope, data: EventPayloads['feedback.unmerged']): void
  /** Queues the report's `process` job in the caller's transaction (an unmerged report moves on as a lead). */
  enqueueProcess(feedbackId: string): void
}

/** The embedded engine's clustering sides: its queries and an audit row in the caller's transaction. */
export interface SyncClusterSides {
  readonly dedup: SyncClusterRepo
  writeAudit(e: AuditEntry): string
}

/**
 * PostgreSQL's clustering queries: reads from the pool (or in `tx`), every change in the caller's
 * transaction `Tx` (the store's PgTx; opaque here).
 */
export interface TxClusterRepo<Tx> {
  /** The row, read in `tx` when given (not locked), else from the pool. */
  get(id: string, tx?: Tx): Promise<ClusterRow | null>
  /** Full rows by id, in one statement; missing ids are absent. */
  rows(ids: string[]): Promise<Map<string, ClusterRow>>
  /** The App's newest `limit` clustered reports, oldest first. */
  loadApp(appId: string, limit: number): Promise<ClusterRow[]>
  /** A report's row, locked until the transaction ends (a concurrent change of its cluster waits). */
  lock(tx: Tx, id: string): Promise<ClusterRow | null>
  /** A lead-to-be's status and link, locked: it cannot be archived or merged away before this commit. */
  lockRoot(tx: Tx, id: string): Promise<RootState | null>
  /**
   * Locks, in id order, every row a merge of `id` into `leadId` (or an unmerge of `id`: no `leadId`)
   * writes: the reports, `id`'s duplicates (moved along) and its lead (re-summarised), after waiting for
   * any other merge or unmerge by hand of the App to commit. Racing merges in opposite directions, or an
   * unmerge and a merge of its lead, each locked their own report first and deadlocked on the other's.
   */
  lockForTriage(tx: Tx, id: string, leadId?: string): Promise<void>
  duplicateIds(tx: Tx, leadId: string): Promise<string[]>
  duplicateTexts(tx: Tx, leadId: string): Promise<string[]>
  duplicateStats(tx: Tx, leadId: string): Promise<{ n: number; last: number | null }>
  saveLead(tx: Tx, leadId: string, s: LeadSummary, now: number): Promise<unknown>
  setDuplicate(tx: Tx, id: string, leadId: string, locked: boolean, why: MergeWhy, now: number): Promise<unknown>
  setSuggestion(tx: Tx, id: string, s: Suggestion | null, now: number): Promise<unknown>
  rejectSuggestion(tx: Tx, id: string, leadId: string, now: number): Promise<boolean>
  recordDecision(tx: Tx, scope: Scope, d: StoredDecision, now: number): Promise<unknown>
  calibration(appId: string): Promise<CalibrationSnapshot | null>
  saveCalibration(tx: Tx, appId: string, s: CalibrationSnapshot, now: number): Promise<unknown>
  clearDecisions(tx: Tx, appId: string): Promise<{ kind: string; n: number }[]>
  /** The App's newest decisions, from the pool: read before a verdict when the App's lesson is stale. */
  decisions(appId: string, limit: number): Promise<Decision[]>
  recordSuggested(tx: Tx, scope: Scope, data: EventPayloads['feedback.duplicate_suggested']): Promise<unknown>
  moveDuplicates(tx: Tx, fromLeadId: string, toLeadId: string, now: number): Promise<unknown>
  setUnmerged(tx: Tx, id: string, now: number): Promise<unknown>
  recordAttached(tx: Tx, scope: Scope, data: EventPayloads['feedback.duplicate_attached']): Promise<unknown>
  recordUnmerged(tx: Tx, scope: Scope, data: EventPayloads['feedback.unmerged']): Promise<unknown>
  enqueueProcess(tx: Tx, feedbackId: string): Promise<void>
  /** Several leads' states for their summaries (as duplicateStats and duplicateTexts), in one statement. */
  leadStates(tx: Tx, leadIds: string[]): Promise<Map<string, LeadState>>
  /** Several leads' summaries, in one statement. */
  saveLeads(tx: Tx, leads: { id: string; summary: LeadSummary }[], now: number): Promise<void>
  /** One transaction of a cluster change. */
  transaction<T>(work: (tx: Tx) => Promise<T>): Promise<T>
}

/** What a lead's summary is built from: its text, its duplicates' count and newest time, their newest sanitized texts. */
export interface LeadState {
  appId: string
  text: string
  /** False while the lead is not sanitized: no summary is built from raw text. */
  sanitized: boolean
  n: number
  last: number | null
  /** The distinct texts of its newest sanitized duplicates (at most 200), newest first, and how many those were. */
  distinct: string[]
  windowLength: number
}

/** The PostgreSQL engine's clustering sides: its queries and an audit row in the caller's transaction. */
export interface TxClusterSides<Tx> {
  readonly dedup: TxClusterRepo<Tx>
  writeAudit(tx: Tx, e: AuditEntry): Promise<string>
}

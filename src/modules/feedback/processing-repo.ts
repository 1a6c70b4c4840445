/**
 * The queries of the `process` and `batch_release` jobs: the columns a report is sanitized from, the
 * App's routing settings, the leads waiting in a batch window, and the in-place overwrite of every
 * free-text field with its sanitized value. Status moves go through the lifecycle, joined on each side:
 * src/db/sqlite/processing.ts (synchronous, in the processing step's SQLite transaction) and
 * src/db/pg/processing.ts (a PgTx).
 */
import type { FeedbackStatus } from '../../core/fsm'
import type { StoredReport } from '../../sanitize/report'
import type { ScrubbedColumns } from '../../lifecycle/rules'
import type { OutboxEvent } from '../../lifecycle/event-types'
import type { JobRow } from '../../lifecycle/jobs'

/** A report as the `process` job reads it (raw columns, snake_case as stored). */
export interface ProcessRow {
  id: string
  app_id: string
  status: FeedbackStatus
  version: number
  text: string
  url: string | null
  user_agent: string | null
  console_logs: string | null
  metadata: string | null
  component_target: string | null
  email: string | null
  submitter_name: string | null
  external_user_id: string | null
  duplicate_of_id: string | null
  redactions: string | null
}

/** An App's settings that decide where its sanitized leads go. */
export interface RoutingRow {
  processingMode: string
  batchEnabled: boolean
  batchWindowHours: number
}

export interface ProcessingRepo {
  get(id: string): Promise<ProcessRow | null>
  /** The report's App, or null when the report is gone. */
  appOf(id: string): Promise<string | null>
  routing(appId: string): Promise<RoutingRow | null>
  /** The App's sanitized leads waiting for its batch window to close, oldest first. */
  waitingLeads(appId: string): Promise<{ id: string; version: number }[]>
  /** Every waiting lead of the App moves on to `to` in one transaction; a lead moved meanwhile is skipped. Returns how many moved. */
  releaseWaitingLeads(appId: string, to: FeedbackStatus): Promise<number>
  /** A report whose processing gave up: `failed` with the cause, if still at `version`. */
  fail(id: string, version: number, reason: string): Promise<boolean>
}


/**
 * The processing engine's side on the embedded store (src/db/sqlite/processing.ts): synchronous, every
 * write joined by the caller's SQLite transaction (one per report, or one per batch with a savepoint each).
 */
export interface SyncProcessingSide {
  get(id: string): ProcessRow | null
  appOf(id: string): string | null
  routing(appId: string): RoutingRow | null
  /**
   * Overwrites the free-text columns with their sanitized values (compare-and-set on the version).
   * `processed`: on the report's way to `sanitized` (the move follows in the same transaction and bumps
   * the version); otherwise it is scrubbed where it stands and the version is bumped here.
   */
  saveScrubbed(id: string, version: number, columns: StoredReport, redactions: string, now: number, processed: boolean): boolean
  waitingLeads(appId: string): { id: string; version: number }[]
  /** A system move of the report from the status it was read in (the lifecycle's move), in the caller's transaction. */
  move(id: string, to: FeedbackStatus, from: FeedbackStatus): boolean
  /** received|sanitizing → sanitized with the sanitized columns, in the caller's transaction. */
  moveToSanitized(id: string, version: number, columns: ScrubbedColumns, redactions: string): boolean
  /**
   * Stamps processed_at on a report clustered now that was `sanitized` without it (an earlier version's
   * sanitize-ahead thread moved reports to `sanitized` before their job clustered them); a report that has
   * one keeps it. In the caller's transaction, with the verdict: processedAt set means the verdict is in.
   */
  markProcessed(id: string, now: number): void
  fail(id: string, version: number, reason: string): boolean
  /** Makes sure the App has an open batch window (a `batch_release` job); returns when it closes (epoch ms). */
  ensureWindow(appId: string, closesAt: number): number
  releaseWaitingLeads(appId: string, to: FeedbackStatus): number
  /** Runs `work` in one IMMEDIATE transaction (it reads before it writes); `nested`: a savepoint inside the caller's. */
  transaction<T>(work: () => T, nested?: boolean): T
}

/**
 * The processing engine's side on PostgreSQL (src/db/pg/processing.ts): reads from the pool, every write
 * in the caller's transaction `Tx` (the store's PgTx; opaque here, so the engine's steps name no dialect).
 */
export interface TxProcessingSide<Tx> {
  get(id: string): Promise<ProcessRow | null>
  /** Several reports' rows in one statement (a batch); missing ids are absent. */
  getMany(ids: string[]): Promise<Map<string, ProcessRow>>
  /** Several Apps' routing in one statement; missing Apps are absent. */
  routingMany(appIds: string[]): Promise<Map<string, RoutingRow>>
  /**
   * A batch's rows (its reports and the leads they join) locked `FOR UPDATE` in one statement, in id
   * order (every batch locks in the same order); missing ids are absent.
   */
  lockBatch(tx: Tx, ids: string[]): Promise<Map<string, BatchLockedRow>>
  /**
   * A batch's processed reports written in the caller's transaction, a statement per kind of write: the
   * rows (compare-and-set on each version), the events in order, the jobs deleted, the agent runs queued.
   * Answers how many rows were written (the caller rolls back unless all of them were).
   */
  writeProcessed(tx: Tx, batch: ProcessedBatch): Promise<number>
  /** Events of any Orgs appended in order in the caller's transaction, in one statement. */
  appendEvents(tx: Tx, events: OutboxEvent[]): Promise<void>
  /** The row read `FOR UPDATE` in the caller's transaction: a concurrent writer of it waits for this one's commit. */
  lock(tx: Tx, id: string): Promise<ProcessRow | null>
  appOf(id: string): Promise<string | null>
  routing(appId: string): Promise<RoutingRow | null>
  waitingLeads(appId: string): Promise<{ id: string; version: number }[]>
  /** As the embedded side's `saveScrubbed`, in the caller's transaction. */
  saveScrubbed(tx: Tx, id: string, version: number, columns: StoredReport, redactions: string, now: number, processed: boolean): Promise<boolean>
  /** Makes sure the App has an open batch window in the caller's transaction; returns when it closes. */
  ensureWindow(tx: Tx, appId: string, closesAt: number): Promise<number>
  releaseWaitingLeads(appId: string, to: FeedbackStatus): Promise<number>
  move(tx: Tx, id: string, to: FeedbackStatus, from: FeedbackStatus): Promise<boolean>
  moveToSanitized(tx: Tx, id: string, version: number, columns: ScrubbedColumns, redactions: string): Promise<boolean>
  /** As the embedded side's `markProcessed`, in the caller's transaction. */
  markProcessed(tx: Tx, id: string, now: number): Promise<void>
  /**
   * Deletes the job in the caller's transaction: it is done exactly when the report's changes commit. Only
   * while its lease is still the claim's (`job.lease_owner`): otherwise throws LeaseLost (jobs-repo.ts), and
   * the caller's transaction rolls back (a node that stalled past its lease writes nothing it planned).
   */
  finishJob(tx: Tx, job: LeasedJob): Promise<void>
  /** One report's processing: one transaction. */
  transaction<T>(work: (tx: Tx) => Promise<T>): Promise<T>
  fail(id: string, version: number, reason: string): Promise<boolean>
}

/** A row of a batch as locked for its write: what decides whether each plan still holds. */
export interface BatchLockedRow {
  id: string
  org_id: string
  app_id: string
  status: FeedbackStatus
  version: number
  duplicate_of_id: string | null
  /** 1 when a person locked it against automatic clustering. */
  merge_locked: number
  spam_marked_at: number | null
  /** The report has duplicates of its own (they would move with it: the one-at-a-time path handles that). */
  has_duplicates: boolean
}

/** One report of a batch as it is written: its row at `version` (locked) becomes `status` at `version + bump`. */
export interface ProcessedWrite {
  id: string
  version: number
  status: FeedbackStatus
  bump: number
  /**
   * Its sanitized columns, when it is sanitized in this batch. A report that leaves `received` is clustered
   * in this write and gets processed_at (unless it has one); one only scrubbed ahead (sanitize-anywhere.ts)
   * stays `received`, and its `process` job stamps it when it clusters it.
   */
  sanitized: { columns: ScrubbedColumns; redactions: string } | null
  /** It becomes an automatic duplicate of `leadId` (its own summary and suggestion cleared). */
  duplicate: { leadId: string; score: number | null; reason: string | null } | null
  /** It stays a lead with this suggestion. */
  suggestion: { leadId: string; score: number; reason: string } | null
}

/** A job as claimed: its id and the owner its lease was taken for. */
export type LeasedJob = Pick<JobRow, 'id' | 'lease_owner'>

/** What a batch writes besides its events and lead summaries: rows, jobs done, agent runs to queue. */
export interface ProcessedBatch {
  reports: ProcessedWrite[]
  /** Deleted only while each is still leased to the claim's owner; else LeaseLost, as `finishJob`. */
  jobsDone: LeasedJob[]
  agentRuns: string[]
  now: number
}

/** A raw report with its queued `process` job's id. */
export type QueuedRaw = ProcessRow & { org_id: string; job_id: number }

/** Sanitizing on any node's side of the store (src/worker/sanitize-anywhere.ts, src/db/pg/sanitize-ahead.ts); `Tx` is its transaction handle. */
export interface TxSanitizeAheadSide<Tx> {
  /** The id of the last of the first `gap` `process` jobs (0 for no gap), or null when no job is queued past them. */
  headEnd(gap: number): Promise<number | null>
  /** Up to `limit` raw reports whose unleased `process` job comes after `afterJobId`, in queue order, locked (SKIP LOCKED) in `tx`. */
  claimRaw(tx: Tx, afterJobId: number, limit: number, now: number): Promise<QueuedRaw[]>
}

/**
 * The queries of the `process` and `batch_release` jobs: the columns a report is sanitized from, the
 * App's routing settings, the leads waiting in a batch window, and the in-place overwrite of every
 * free-text field with its sanitized value. Status moves go through the lifecycle, joined on each side:
 * src/db/sqlite/processing.ts (synchronous, in the processing step's SQLite transaction) and
 * src/db/pg/processing.ts (a PgTx).
 */
import type { FeedbackStatus } from '../../core/fsm'

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


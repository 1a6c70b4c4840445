/**
 * The queries of the `process` and `batch_release` jobs: the columns a report is sanitized from, the
 * App's routing settings, the leads waiting in a batch window, and the in-place overwrite of every
 * free-text field with its sanitized value. Status moves go through the lifecycle, joined on each side:
 * src/db/sqlite/processing.ts (synchronous, in the processing step's SQLite transaction) and
 * src/db/pg/processing.ts (a PgTx).
 */
import type { FeedbackStatus } from '../../core/fsm'
import type { Storage } from '../../db/storage'
import type { Lifecycle } from '../../lifecycle/lifecycle'
import { createSqliteProcessing, type SqliteProcessing } from '../../db/sqlite/processing'
import { createPgProcessing, type PgProcessing } from '../../db/pg/processing'

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
  /** The SQLite side (synchronous, joins the caller's SQLite transaction); undefined on PostgreSQL. */
  readonly sqlite: SqliteProcessing | undefined
  /** The PostgreSQL side (joins a PgTx); undefined on SQLite. */
  readonly pg: PgProcessing | undefined
}

export function createProcessingRepo(storage: Storage, lifecycle: Lifecycle): ProcessingRepo {
  if (storage.dialect === 'sqlite') {
    if (!lifecycle.sqlite) throw new Error('a SQLite processing repo needs the lifecycle of the same store')
    const s = createSqliteProcessing(storage.sqlite, lifecycle.sqlite)
    return {
      get: async (id) => s.get(id),
      appOf: async (id) => s.appOf(id),
      routing: async (appId) => s.routing(appId),
      waitingLeads: async (appId) => s.waitingLeads(appId),
      releaseWaitingLeads: async (appId, to) => s.releaseWaitingLeads(appId, to),
      fail: async (id, version, reason) => s.fail(id, version, reason),
      sqlite: s,
      pg: undefined,
    }
  }
  if (!lifecycle.pg) throw new Error('a PostgreSQL processing repo needs the lifecycle of the same store')
  const p = createPgProcessing(storage, lifecycle.pg)
  return {
    get: p.get,
    appOf: p.appOf,
    routing: p.routing,
    waitingLeads: p.waitingLeads,
    releaseWaitingLeads: p.releaseWaitingLeads,
    fail: p.fail,
    sqlite: undefined,
    pg: p,
  }
}

/** The SQLite side alone, for the SQLite processing step (its transactions are synchronous). */
export function sqliteProcessingSide(storage: Storage, lifecycle: Lifecycle): SqliteProcessing {
  const side = createProcessingRepo(storage, lifecycle).sqlite
  if (!side) throw new Error('the SQLite processing step needs a SQLite store')
  return side
}

/** The PostgreSQL side alone, for the PostgreSQL processing step. */
export function pgProcessingSide(storage: Storage, lifecycle: Lifecycle): PgProcessing {
  const side = createProcessingRepo(storage, lifecycle).pg
  if (!side) throw new Error('the PostgreSQL processing step needs a PostgreSQL store')
  return side
}

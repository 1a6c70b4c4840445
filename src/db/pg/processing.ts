/**
 * The PostgreSQL side of the `process` and `batch_release` jobs' queries (the port:
 * src/modules/feedback/processing-repo.ts). Reads go to the pool; the writes of one report's processing
 * join the caller's transaction (a PgTx) with the lifecycle's PostgreSQL side, so a report's sanitizing,
 * clustering, routing and its job's deletion commit together.
 */
import type { StoredReport } from '../../sanitize/report'
import type { LeasedJob, ProcessedBatch, ProcessRow, RoutingRow, TxProcessingSide } from '../../modules/feedback/processing-repo'
import type { PgLifecycle, PgTx } from './lifecycle'
import type { FeedbackStatus } from '../../core/fsm'
import type { ScrubbedColumns } from '../../lifecycle/rules'
import { exec, many, one, type PgStorage } from './storage'
import type { Clock } from '../../core/clock'
import type { WakeSignal } from '../../lifecycle/wake'
import { createPgProcessedBatch, finishJobsOf } from './lifecycle-batch'

const GET = `SELECT id, app_id, status, version, text, url, user_agent, console_logs, metadata, component_target,
    email, submitter_name, external_user_id, duplicate_of_id, redactions FROM feedback WHERE id = $1`
const SCRUB = `UPDATE feedback SET version = version + (1 - $3::int), updated_at = $4, processed_at = CASE WHEN $3::int = 1 THEN $4 ELSE processed_at END,
    text = $5, url = $6, user_agent = $7, console_logs = $8, metadata = $9, component_target = $10, redactions = $11
  WHERE id = $1 AND version = $2`
const WAITING = "SELECT id, version FROM feedback WHERE app_id = $1 AND status = 'sanitized' AND duplicate_of_id IS NULL ORDER BY id"

const GET_MANY = `SELECT id, app_id, status, version, text, url, user_agent, console_logs, metadata, component_target,
    email, submitter_name, external_user_id, duplicate_of_id, redactions FROM feedback WHERE id = ANY($1::text[])`
const ROUTING_MANY = `SELECT id, processing_mode AS "processingMode", batch_enabled AS "batchEnabled", batch_window_hours AS "batchWindowHours"
  FROM apps WHERE id = ANY($1::text[])`

export function createPgProcessing(storage: PgStorage, lifecycle: PgLifecycle, clock: Clock, wake?: WakeSignal): TxProcessingSide<PgTx> {
  const { pool } = storage
  const batch = createPgProcessedBatch(clock, wake)
  return {
    get: async (id: string): Promise<ProcessRow | null> => (await one<ProcessRow>(pool, GET, [id])) ?? null,
    async getMany(ids: string[]): Promise<Map<string, ProcessRow>> {
      const out = new Map<string, ProcessRow>()
      if (ids.length > 0) for (const r of await many<ProcessRow>(pool, GET_MANY, [ids])) out.set(r.id, r)
      return out
    },
    async routingMany(appIds: string[]): Promise<Map<string, RoutingRow>> {
      const out = new Map<string, RoutingRow>()
      if (appIds.length > 0) for (const { id, ...r } of await many<RoutingRow & { id: string }>(pool, ROUTING_MANY, [appIds])) out.set(id, r)
      return out
    },
    lockBatch: (tx: PgTx, ids: string[]) => batch.lock(tx, ids),
    writeProcessed: (tx: PgTx, b: ProcessedBatch) => batch.write(tx, b),
    appendEvents: (tx: PgTx, events) => batch.appendEvents(tx, events),
    /** The row read `FOR UPDATE` in the caller's transaction: a concurrent writer of it waits for this one's commit. */
    lock: async (tx: PgTx, id: string): Promise<ProcessRow | null> => (await one<ProcessRow>(tx.client, `${GET} FOR UPDATE`, [id])) ?? null,
    appOf: async (id: string): Promise<string | null> => (await one<{ app_id: string }>(pool, 'SELECT app_id FROM feedback WHERE id = $1', [id]))?.app_id ?? null,
    routing: async (appId: string): Promise<RoutingRow | null> =>
      (await one<RoutingRow>(
        pool,
        'SELECT processing_mode AS "processingMode", batch_enabled AS "batchEnabled", batch_window_hours AS "batchWindowHours" FROM apps WHERE id = $1',
        [appId],
      )) ?? null,
    waitingLeads: (appId: string): Promise<{ id: string; version: number }[]> => many(pool, WAITING, [appId]),
    /** As the SQLite side's `saveScrubbed`, in the caller's transaction. */
    async saveScrubbed(tx: PgTx, id: string, version: number, c: StoredReport, redactions: string, now: number, processed: boolean): Promise<boolean> {
      return (await exec(tx.client, SCRUB, [id, version, processed ? 1 : 0, now, c.text, c.url, c.userAgent, c.consoleLogs, c.metadata, c.componentTarget, redactions])) === 1
    },
    /** Makes sure the App has an open batch window in the caller's transaction; returns when it closes. */
    async ensureWindow(tx: PgTx, appId: string, closesAt: number): Promise<number> {
      // One window per App even when two reports open it at once: the App's row is the lock.
      await tx.client.query('SELECT 1 FROM apps WHERE id = $1 FOR UPDATE', [appId])
      const existing = await one<{ run_after: number }>(tx.client, "SELECT run_after FROM jobs WHERE kind = 'batch_release' AND app_id = $1 ORDER BY run_after, id LIMIT 1", [appId])
      if (existing) return existing.run_after
      await lifecycle.enqueue(tx, 'batch_release', { appId }, closesAt)
      return closesAt
    },
    /** Every waiting lead of the App moves on to `to`, in one transaction; a lead moved meanwhile is skipped. */
    releaseWaitingLeads(appId: string, to: FeedbackStatus): Promise<number> {
      return storage.tx(async (client, _db, onCommit) => {
        const tx = { client, onCommit }
        let n = 0
        for (const lead of await many<{ id: string; version: number }>(client, WAITING, [appId])) {
          if (await lifecycle.move(tx, lead.id, to, { by: 'system', from: 'sanitized', version: lead.version })) n++
        }
        return n
      })
    },
    /** A system move of the report from the status it was read in (lifecycle.move), in the caller's transaction. */
    move: (tx: PgTx, id: string, to: FeedbackStatus, from: FeedbackStatus): Promise<boolean> => lifecycle.move(tx, id, to, { by: 'system', from }),
    /** received|sanitizing → sanitized with the sanitized columns (lifecycle.moveToSanitized), in the caller's transaction. */
    moveToSanitized: (tx: PgTx, id: string, version: number, columns: ScrubbedColumns, redactions: string): Promise<boolean> =>
      lifecycle.moveToSanitized(tx, id, version, columns, redactions),
    /** Stamps processed_at on a report clustered now that was sanitized ahead without it (see processing-repo.ts). */
    markProcessed: async (tx: PgTx, id: string, now: number): Promise<void> =>
      void (await exec(tx.client, 'UPDATE feedback SET processed_at = $2 WHERE id = $1 AND processed_at IS NULL', [id, now])),
    /** Deletes the job in the caller's transaction: it is done exactly when the report's changes commit. */
    finishJob: (tx: PgTx, job: LeasedJob): Promise<void> => finishJobsOf(tx, [job]),
    /** One report's processing: one transaction. */
    transaction: <T>(work: (tx: PgTx) => Promise<T>): Promise<T> => storage.tx((client, _db, onCommit) => work({ client, onCommit })),
    /** A report whose processing gave up: `failed` with the cause, if still at `version`. */
    fail: (id: string, version: number, reason: string): Promise<boolean> =>
      storage.tx((client, _db, onCommit) => lifecycle.move({ client, onCommit }, id, 'failed', { by: 'system', version, reason })),
  }
}
export type PgProcessing = TxProcessingSide<PgTx>

/**
 * The SQLite side of the `process` and `batch_release` jobs' queries (the port:
 * src/modules/feedback/processing-repo.ts): the columns a report is sanitized from, the App's routing
 * settings, the leads waiting in a batch window, the in-place overwrite of every free-text field with its
 * sanitized value, and the lifecycle writes of processing, joined synchronously to the caller's SQLite
 * transaction (the processing step writes a report's every step in one transaction, a batch many).
 */
import type { Database, Statement } from 'bun:sqlite'
import type { FeedbackStatus } from '../../core/fsm'
import type { StoredReport } from '../../sanitize/report'
import type { ProcessRow, RoutingRow, SyncProcessingSide } from '../../modules/feedback/processing-repo'
import type { SqliteLifecycle } from './lifecycle'
import type { ScrubbedColumns } from '../../lifecycle/rules'

export function createSqliteProcessing(sqlite: Database, lifecycle: SqliteLifecycle): SyncProcessingSide {
  const get: Statement = sqlite.query(
    `SELECT id, app_id, status, version, text, url, user_agent, console_logs, metadata, component_target,
       email, submitter_name, external_user_id, duplicate_of_id, redactions FROM feedback WHERE id = ?`,
  )
  const appOf: Statement = sqlite.query('SELECT app_id FROM feedback WHERE id = ?')
  const routing: Statement = sqlite.query(
    'SELECT processing_mode AS processingMode, batch_enabled AS batchEnabled, batch_window_hours AS batchWindowHours FROM apps WHERE id = ?',
  )
  const scrub: Statement = sqlite.query(
    `UPDATE feedback SET version = version + (1 - $processed), updated_at = $now, processed_at = CASE WHEN $processed THEN $now ELSE processed_at END,
       text = $text, url = $url, user_agent = $userAgent, console_logs = $consoleLogs, metadata = $metadata,
       component_target = $componentTarget, redactions = $redactions
     WHERE id = $id AND version = $version`,
  )
  const waiting: Statement = sqlite.query(
    "SELECT id, version FROM feedback WHERE app_id = ? AND status = 'sanitized' AND duplicate_of_id IS NULL ORDER BY id",
  )
  const markProcessed: Statement = sqlite.query('UPDATE feedback SET processed_at = ?2 WHERE id = ?1 AND processed_at IS NULL')
  const windowCloses: Statement = sqlite.query("SELECT run_after FROM jobs WHERE kind = 'batch_release' AND app_id = ? LIMIT 1")

  return {
    get: (id: string): ProcessRow | null => get.get(id) as ProcessRow | null,
    /** The report's App, or null when the report is gone. */
    appOf: (id: string): string | null => (appOf.get(id) as { app_id: string } | null)?.app_id ?? null,
    routing(appId: string): RoutingRow | null {
      const r = routing.get(appId) as { processingMode: string; batchEnabled: number; batchWindowHours: number } | null
      return r && { processingMode: r.processingMode, batchEnabled: r.batchEnabled === 1, batchWindowHours: r.batchWindowHours }
    },
    /**
     * Overwrites the free-text columns with their sanitized values (compare-and-set on the version).
     * `processed`: the report is being sanitized on its way, and the move to `sanitized` follows in the
     * same transaction: processed_at is stamped and the version is left to that move, so sanitizing
     * counts as one change (as it always has). Otherwise (scrubbed where it stands) it bumps the version.
     */
    saveScrubbed(id: string, version: number, columns: StoredReport, redactions: string, now: number, processed: boolean): boolean {
      return scrub.run({ id, version, now, processed: processed ? 1 : 0, ...columns, redactions }).changes === 1
    },
    /** The App's sanitized leads waiting for its batch window to close, oldest first. */
    waitingLeads: (appId: string): { id: string; version: number }[] => waiting.all(appId) as { id: string; version: number }[],

    /** Stamps processed_at on a report clustered now that was sanitized ahead without it (see processing-repo.ts). */
    markProcessed: (id: string, now: number): void => void markProcessed.run(id, now),
    /** A system move of the report from the status it was read in (lifecycle.move), in the caller's transaction. */
    move: (id: string, to: FeedbackStatus, from: FeedbackStatus): boolean => lifecycle.move(sqlite, id, to, { by: 'system', from }),
    /** received|sanitizing → sanitized with the sanitized columns (lifecycle.moveToSanitized), in the caller's transaction. */
    moveToSanitized: (id: string, version: number, columns: ScrubbedColumns, redactions: string): boolean =>
      lifecycle.moveToSanitized(sqlite, id, version, columns, redactions),
    /** A report whose processing gave up: `failed` with the cause, if still at `version`. */
    fail: (id: string, version: number, reason: string): boolean => lifecycle.move(sqlite, id, 'failed', { by: 'system', version, reason }),
    /** Makes sure the App has an open batch window (a `batch_release` job); returns when it closes (epoch ms). */
    ensureWindow(appId: string, closesAt: number): number {
      const existing = (windowCloses.get(appId) as { run_after: number } | null)?.run_after
      if (existing !== undefined) return existing
      lifecycle.enqueue('batch_release', { appId }, closesAt)
      return closesAt
    },
    /** Every waiting lead of the App moves on to `to` in one transaction; a lead moved meanwhile is skipped. */
    releaseWaitingLeads(appId: string, to: FeedbackStatus): number {
      return sqlite
        .transaction(() => {
          let n = 0
          for (const lead of waiting.all(appId) as { id: string; version: number }[]) {
            if (lifecycle.move(sqlite, lead.id, to, { by: 'system', from: 'sanitized', version: lead.version })) n++
          }
          return n
        })
        .immediate()
    },
    /** Runs `work` in one IMMEDIATE transaction (it reads before it writes); `nested`: a savepoint inside the caller's. */
    transaction<T>(work: () => T, nested = false): T {
      const tx = sqlite.transaction(work)
      return nested ? tx() : tx.immediate()
    },
  }
}
export type SqliteProcessing = SyncProcessingSide

/**
 * The queries of the `process` and `batch_release` jobs: the columns a report is sanitized from, the
 * App's routing settings, the leads waiting in a batch window, and the in-place overwrite of every
 * free-text field with its sanitized value. Status moves are not here: they go through the lifecycle.
 */
import type { Database, Statement } from 'bun:sqlite'
import type { FeedbackStatus } from '../../core/fsm'
import type { StoredReport } from '../../sanitize/report'

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

export function createProcessingRepo(sqlite: Database) {
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
  }
}

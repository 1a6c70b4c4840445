/**
 * The `process` job: takes one report from `received` through `sanitizing` to `sanitized`, then routes
 * it to `awaiting_manual` (manual mode) or `queued` (auto_pr mode).
 * Each move is its own compare-and-set commit, and the job reads the current status first, so a
 * retry after a crash continues from wherever the last run stopped. Only sanitized values are kept:
 * the sanitizing commit overwrites every free-text field in place.
 */
import type { Database } from 'bun:sqlite'
import type { Clock } from '../../core/clock'
import { canSystemMove, type FeedbackStatus } from '../../core/fsm'
import { CREDENTIAL_RULES, sanitizeJson, sanitizeText, type RedactionCounts } from '../../sanitize/sanitize'
import type { JobRow } from '../jobs-repo'
import type { JobStep } from '../loop'

interface Row {
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
  duplicate_of_id: string | null
}

export function createProcessFeedbackStep(sqlite: Database, clock: Clock): JobStep {
  const get = sqlite.query('SELECT id, app_id, status, version, text, url, user_agent, console_logs, metadata, component_target, duplicate_of_id FROM feedback WHERE id = ?')
  const modeOf = sqlite.query('SELECT processing_mode FROM apps WHERE id = ?')
  const move = sqlite.query('UPDATE feedback SET status = ?, version = version + 1, updated_at = ? WHERE id = ? AND version = ?')
  const saveSanitized = sqlite.query(
    `UPDATE feedback SET status = 'sanitized', version = version + 1, updated_at = $now, processed_at = $now,
       text = $text, url = $url, user_agent = $userAgent, console_logs = $consoleLogs, metadata = $metadata,
       component_target = $componentTarget, redactions = $redactions
     WHERE id = $id AND version = $version`,
  )
  const finishJob = sqlite.query('DELETE FROM jobs WHERE id = ?')

  function moveTo(row: Row, to: FeedbackStatus): void {
    if (!canSystemMove(row.status, to)) throw new Error(`illegal system move ${row.status} → ${to}`)
    if (move.run(to, clock.now(), row.id, row.version).changes !== 1) throw new Error('concurrent update; will retry')
  }

  function sanitizeRow(row: Row): void {
    const counts: RedactionCounts = {}
    const json = (text: string | null) => (text === null ? null : JSON.stringify(sanitizeJson(JSON.parse(text), counts)))
    const consoleLogs = row.console_logs === null ? null : JSON.stringify(
      (JSON.parse(row.console_logs) as { level: string; message: string; ts: number }[]).map((e) => ({ ...e, message: sanitizeText(e.message, counts) })),
    )
    const changes = saveSanitized.run({
      id: row.id,
      version: row.version,
      now: clock.now(),
      text: sanitizeText(row.text, counts),
      url: row.url === null ? null : sanitizeText(row.url, counts),
      userAgent: row.user_agent === null ? null : sanitizeText(row.user_agent, counts, CREDENTIAL_RULES),
      consoleLogs,
      metadata: json(row.metadata),
      componentTarget: json(row.component_target),
      redactions: JSON.stringify(counts),
    }).changes
    if (changes !== 1) throw new Error('concurrent update; will retry')
  }

  return {
    run(job: JobRow): void {
      if (!job.feedback_id) return
      for (let step = 0; step < 4; step++) {
        const row = get.get(job.feedback_id) as Row | null
        if (!row || row.duplicate_of_id) return
        switch (row.status) {
          case 'received':
            moveTo(row, 'sanitizing')
            continue
          case 'sanitizing':
            sanitizeRow(row)
            continue
          case 'sanitized': {
            const mode = (modeOf.get(row.app_id) as { processing_mode: string } | null)?.processing_mode
            // The final move and the job's removal commit together: no window where both are half done.
            sqlite.transaction(() => {
              moveTo(row, mode === 'auto_pr' ? 'queued' : 'awaiting_manual')
              finishJob.run(job.id)
            })()
            return
          }
          default:
            // Archived (or moved on by someone else) while waiting: nothing left to do.
            return
        }
      }
    },
    onGiveUp(job: JobRow, error: string): void {
      if (!job.feedback_id) return
      const row = get.get(job.feedback_id) as Row | null
      if (row && canSystemMove(row.status, 'failed')) {
        sqlite.query("UPDATE feedback SET status = 'failed', version = version + 1, updated_at = ? WHERE id = ? AND version = ?").run(clock.now(), row.id, row.version)
      }
      void error
    },
  }
}

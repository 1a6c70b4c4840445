/**
 * The `process` job: takes one report from `received` through `sanitizing` to `sanitized`, clusters it
 * with its near-duplicates, then routes a lead to `awaiting_manual` (manual mode) or `queued` (auto_pr
 * mode) — at once, or when the App's batch window closes. A duplicate takes no further steps of its own.
 * Each move is its own compare-and-set commit, and the job reads the current status first, so a
 * retry after a crash continues from wherever the last run stopped. Only sanitized values are kept:
 * the sanitizing commit overwrites every free-text field in place.
 */
import type { Database } from 'bun:sqlite'
import type { Clock } from '../../core/clock'
import { canSystemMove, type FeedbackStatus } from '../../core/fsm'
import { sanitizeStored } from '../../sanitize/report'
import type { JobRow } from '../jobs-repo'
import type { JobStep } from '../loop'
import type { ClusterService } from '../../cluster/service'
import type { BatchWindows } from './release-batch'
import { enqueueAgentRun } from './start-agent'

export interface ProcessDeps {
  cluster: ClusterService
  batches: BatchWindows
}

interface AppSettings {
  processing_mode: string
  batch_enabled: number
  batch_window_hours: number
}

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
  email: string | null
  submitter_name: string | null
  external_user_id: string | null
  duplicate_of_id: string | null
  redactions: string | null
}

export function createProcessFeedbackStep(sqlite: Database, clock: Clock, deps: ProcessDeps): JobStep {
  const get = sqlite.query(
    `SELECT id, app_id, status, version, text, url, user_agent, console_logs, metadata, component_target,
       email, submitter_name, external_user_id, duplicate_of_id, redactions FROM feedback WHERE id = ?`,
  )
  const settingsOf = sqlite.query('SELECT processing_mode, batch_enabled, batch_window_hours FROM apps WHERE id = ?')
  const markFailed = sqlite.query("UPDATE feedback SET status = 'failed', failure_reason = ?, version = version + 1, updated_at = ? WHERE id = ? AND version = ?")
  const move = sqlite.query('UPDATE feedback SET status = ?, version = version + 1, updated_at = ? WHERE id = ? AND version = ?')
  const saveSanitized = sqlite.query(
    `UPDATE feedback SET status = 'sanitized', version = version + 1, updated_at = $now, processed_at = $now,
       text = $text, url = $url, user_agent = $userAgent, console_logs = $consoleLogs, metadata = $metadata,
       component_target = $componentTarget, redactions = $redactions
     WHERE id = $id AND version = $version`,
  )
  const finishJob = sqlite.query('DELETE FROM jobs WHERE id = ?')
  // Same fields, status untouched: for a report archived (or failed) before it was ever sanitized.
  const scrubInPlace = sqlite.query(
    `UPDATE feedback SET version = version + 1, updated_at = $now,
       text = $text, url = $url, user_agent = $userAgent, console_logs = $consoleLogs, metadata = $metadata,
       component_target = $componentTarget, redactions = $redactions
     WHERE id = $id AND version = $version`,
  )

  function moveTo(row: Row, to: FeedbackStatus): void {
    if (!canSystemMove(row.status, to)) throw new Error(`illegal system move ${row.status} → ${to}`)
    if (move.run(to, clock.now(), row.id, row.version).changes !== 1) throw new Error('concurrent update; will retry')
  }

  /** Overwrites every free-text field with its sanitized value; the submitter's identity guides the echo rules. */
  function sanitizeRow(row: Row, keepStatus = false): void {
    const { columns, redactions } = sanitizeStored(
      { text: row.text, url: row.url, userAgent: row.user_agent, consoleLogs: row.console_logs, metadata: row.metadata, componentTarget: row.component_target },
      { email: row.email, name: row.submitter_name, externalUserId: row.external_user_id },
    )
    const changes = (keepStatus ? scrubInPlace : saveSanitized).run({ id: row.id, version: row.version, now: clock.now(), ...columns, redactions: JSON.stringify(redactions) }).changes
    if (changes !== 1) throw new Error('concurrent update; will retry')
  }

  /** Takes the report as far as it can go now; runs inside one transaction. */
  function advance(job: JobRow & { feedback_id: string }): void {
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
          // Idempotent: a retry finds the report already clustered and only re-indexes it.
          if (deps.cluster.clusterReport(row.id).leadId) return
          const app = settingsOf.get(row.app_id) as AppSettings | null
          if (app?.batch_enabled) {
            // Waits in `sanitized` until the window closes; the batch_release job moves it on.
            deps.batches.ensureWindow(row.app_id, app.batch_window_hours)
            return
          }
          const current = get.get(row.id) as Row
          const to = app?.processing_mode === 'auto_pr' ? 'queued' : 'awaiting_manual'
          moveTo(current, to)
          if (to === 'queued') enqueueAgentRun(sqlite, row.id, clock.now())
          finishJob.run(job.id)
          return
        }
        default:
          // Archived (or moved on by someone else) while waiting: no more lifecycle steps, but raw
          // values are never kept — a report that was never sanitized is scrubbed where it stands.
          if (row.redactions === null) sanitizeRow(row, true)
          return
      }
    }
  }

  return {
    async run(job: JobRow): Promise<void> {
      if (!job.feedback_id) return
      const first = get.get(job.feedback_id) as Row | null
      // A large App's similarity index is built in slices, before the synchronous steps below.
      if (first) await deps.cluster.prepare(first.app_id)
      // Every step of one report commits once, together: one WAL commit instead of four, and a crash
      // rolls the report back to where it was, to be redone from there.
      sqlite.transaction(() => advance(job as JobRow & { feedback_id: string }))()
    },
    onGiveUp(job: JobRow, error: string): void {
      if (!job.feedback_id) return
      const row = get.get(job.feedback_id) as Row | null
      if (row && canSystemMove(row.status, 'failed')) markFailed.run(`processing failed: ${error}`.slice(0, 1000), clock.now(), row.id, row.version)
    },
  }
}

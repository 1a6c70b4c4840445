/**
 * The `process` job: takes one report from `received` through `sanitizing` to `sanitized`, clusters it
 * with its near-duplicates, then routes a lead to `awaiting_manual` (manual mode) or `queued` (auto_pr
 * mode) — at once, or when the App's batch window closes. A duplicate takes no further steps of its own.
 * Every move goes through the lifecycle (FSM check, compare-and-set, event, follow-up job), and the job
 * reads the current status first, so a retry after a crash continues from wherever the last run stopped.
 * Only sanitized values are kept: the sanitizing step overwrites every free-text field in place.
 */
import type { Database } from 'bun:sqlite'
import type { Clock } from '../../core/clock'
import { canSystemMove, type FeedbackStatus } from '../../core/fsm'
import { sanitizeStored } from '../../sanitize/report'
import type { JobRow } from '../jobs-repo'
import type { JobStep } from '../loop'
import type { ClusterService } from '../../cluster/service'
import type { Lifecycle } from '../../lifecycle/lifecycle'
import { createProcessingRepo, type ProcessRow } from '../../modules/feedback/processing-repo'
import type { BatchWindows } from './release-batch'

export interface ProcessDeps {
  cluster: ClusterService
  batches: BatchWindows
  lifecycle: Lifecycle
  /** Deletes the job row: called inside the step's transaction, so the job goes with the report's changes. */
  finishJob?: (jobId: number) => void
}

export function createProcessFeedbackStep(sqlite: Database, clock: Clock, deps: ProcessDeps): JobStep {
  const repo = createProcessingRepo(sqlite)
  const { lifecycle } = deps

  function moveTo(row: ProcessRow, to: FeedbackStatus): void {
    if (!lifecycle.move(sqlite, row.id, to, { by: 'system', from: row.status })) throw new Error('concurrent update; will retry')
  }

  /** Overwrites every free-text field with its sanitized value; the submitter's identity guides the echo rules. */
  function sanitizeRow(row: ProcessRow, processed: boolean): void {
    const { columns, redactions } = sanitizeStored(
      { text: row.text, url: row.url, userAgent: row.user_agent, consoleLogs: row.console_logs, metadata: row.metadata, componentTarget: row.component_target },
      { email: row.email, name: row.submitter_name, externalUserId: row.external_user_id },
    )
    if (!repo.saveScrubbed(row.id, row.version, columns, JSON.stringify(redactions), clock.now(), processed)) throw new Error('concurrent update; will retry')
  }

  /** Takes the report as far as it can go now; runs inside one transaction. */
  function advance(feedbackId: string): void {
    for (let step = 0; step < 4; step++) {
      const row = repo.get(feedbackId)
      if (!row) return
      if (row.duplicate_of_id) {
        // A duplicate takes no steps of its own, but raw values are never kept (triage refuses to
        // merge a raw report; one a version before 0006 merged raw is scrubbed here).
        if (row.redactions === null) sanitizeRow(row, false)
        return
      }
      switch (row.status) {
        case 'received':
          moveTo(row, 'sanitizing')
          continue
        case 'sanitizing':
          sanitizeRow(row, true)
          moveTo(row, 'sanitized')
          continue
        case 'sanitized': {
          // Idempotent: a retry finds the report already clustered and only re-indexes it.
          if (deps.cluster.clusterReport(row.id).leadId) return
          const app = repo.routing(row.app_id)
          if (app?.batchEnabled) {
            // Waits in `sanitized` until the window closes; the batch_release job moves it on.
            deps.batches.ensureWindow(row.app_id, app.batchWindowHours)
            return
          }
          moveTo(row, lifecycle.statusAfterSanitize(app ?? { processingMode: 'manual' }))
          return
        }
        default:
          // Archived (or moved on by someone else) while waiting: no more lifecycle steps, but raw
          // values are never kept — a report that was never sanitized is scrubbed where it stands.
          if (row.redactions === null) sanitizeRow(row, false)
          return
      }
    }
  }

  return {
    async run(job: JobRow): Promise<void> {
      if (!job.feedback_id) {
        deps.finishJob?.(job.id)
        return
      }
      const first = repo.get(job.feedback_id)
      // A large App's similarity index is built in slices, before the synchronous steps below.
      if (first) await deps.cluster.prepare(first.app_id)
      // Every step of one report commits once, together: one WAL commit instead of four, and a crash
      // rolls the report back to where it was, to be redone from there. IMMEDIATE: it reads before it
      // writes, and another process's write in between would otherwise fail it instead of waiting.
      const feedbackId = job.feedback_id
      sqlite
        .transaction(() => {
          advance(feedbackId)
          // The job is done exactly when these changes commit; a throw above keeps it for a retry.
          deps.finishJob?.(job.id)
        })
        .immediate()
    },
    get finishesJob() {
      return deps.finishJob !== undefined
    },
    onGiveUp(job: JobRow, error: string): void {
      if (!job.feedback_id) return
      const row = repo.get(job.feedback_id)
      if (row && canSystemMove(row.status, 'failed')) lifecycle.move(sqlite, row.id, 'failed', { by: 'system', version: row.version, reason: `processing failed: ${error}` })
    },
  }
}

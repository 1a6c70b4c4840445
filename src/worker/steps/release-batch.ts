/**
 * Batch windows: with `batchEnabled`, an App's sanitized leads wait until its window closes, then each
 * cluster lead moves on once (to awaiting_manual, or queued in auto_pr mode), so one agent task covers
 * the whole cluster. A window opens when the first lead is sanitized while none is open, and closes
 * `batchWindowHours` later (the `batch_release` job's run_after). At release every waiting lead of the
 * App moves on, so no lead is ever stranded by a late worker or a settings change.
 */
import type { Database } from 'bun:sqlite'
import type { Clock } from '../../core/clock'
import type { Lifecycle } from '../../lifecycle/lifecycle'
import { createProcessingRepo } from '../../modules/feedback/processing-repo'
import type { JobRow, JobsRepo } from '../jobs-repo'
import type { JobStep } from '../loop'

export function createBatchWindows(sqlite: Database, clock: Clock, jobs: JobsRepo, lifecycle: Lifecycle) {
  const repo = createProcessingRepo(sqlite)

  return {
    /** Makes sure the App has an open window; returns when it closes (epoch ms). */
    ensureWindow(appId: string, hours: number): number {
      const existing = jobs.runAfterOf('batch_release', appId)
      if (existing !== null) return existing
      const closesAt = clock.now() + hours * 3600_000
      lifecycle.sqlite!.enqueue('batch_release', { appId }, closesAt)
      return closesAt
    },

    step: {
      run(job: JobRow): void {
        const appId = job.app_id
        if (!appId) return
        const to = lifecycle.statusAfterSanitize(repo.routing(appId) ?? { processingMode: 'manual' })
        sqlite.transaction(() => {
          // A lead someone moved meanwhile is skipped (the move returns false); queued leads get their run.
          for (const lead of repo.waitingLeads(appId)) lifecycle.sqlite!.move(sqlite, lead.id, to, { by: 'system', from: 'sanitized', version: lead.version })
        }).immediate()
      },
    } satisfies JobStep,
  }
}
export type BatchWindows = ReturnType<typeof createBatchWindows>

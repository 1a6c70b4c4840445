/**
 * Batch windows: with `batchEnabled`, an App's sanitized leads wait until its window closes, then each
 * cluster lead moves on once (to awaiting_manual, or queued in auto_pr mode), so one agent task covers
 * the whole cluster. A window opens when the first lead is sanitized while none is open, and closes
 * `batchWindowHours` later (the `batch_release` job's run_after; the processing step opens it in its own
 * transaction: `ensureWindow` of the processing repo's side). At release every waiting lead of the App
 * moves on, so no lead is ever stranded by a late worker or a settings change.
 */
import type { Clock } from '../../core/clock'
import type { ProcessingRepo } from '../../modules/feedback/processing-repo'
import type { Lifecycle } from '../../lifecycle/lifecycle'
import type { JobRow } from '../../lifecycle/jobs-repo'
import type { JobStep } from '../loop'

export function createBatchWindows(repo: ProcessingRepo, clock: Clock, lifecycle: Lifecycle) {

  return {
    /** When a window opened now for `hours` closes (epoch ms). */
    closesAt: (hours: number): number => clock.now() + hours * 3600_000,

    step: {
      async run(job: JobRow): Promise<void> {
        const appId = job.app_id
        if (!appId) return
        const to = lifecycle.statusAfterSanitize((await repo.routing(appId)) ?? { processingMode: 'manual' })
        // A lead someone moved meanwhile is skipped (its move returns false); queued leads get their run.
        await repo.releaseWaitingLeads(appId, to)
      },
    } satisfies JobStep,
  }
}
export type BatchWindows = ReturnType<typeof createBatchWindows>

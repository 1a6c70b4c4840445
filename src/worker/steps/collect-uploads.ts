/**
 * The recurring `uploads_gc` job: removes uploaded objects that no submission referenced within the
 * grace period (FIXLOOP_UPLOAD_GRACE_HOURS), then schedules its next run. Nothing referenced is touched.
 * It also scrubs session replays still waiting (the safety net of the `replay_scrub` job, scrub-replays.ts).
 */
import type { Clock } from '../../core/clock'
import type { Lifecycle } from '../../lifecycle/lifecycle'
import type { UploadsService } from '../../modules/uploads/service'
import type { JobsRepo } from '../../lifecycle/jobs-repo'
import type { JobStep } from '../loop'

const UPLOADS_GC_EVERY_MS = 60 * 60 * 1000

export function createCollectUploadsStep(uploads: UploadsService, lifecycle: Lifecycle, clock: Clock): JobStep {
  return {
    async run(): Promise<void> {
      // A full batch means there may be more: come back soon rather than in an hour.
      const removed = await uploads.collectUnreferenced(500)
      await uploads.scrubPendingReplays()
      await lifecycle.enqueue('uploads_gc', {}, clock.now() + (removed === 500 ? 1000 : UPLOADS_GC_EVERY_MS))
    },
  }
}

/** Makes sure one collection job is scheduled (at start). */
export async function scheduleUploadsGc(jobs: JobsRepo, lifecycle: Lifecycle, clock: Clock): Promise<void> {
  if (!(await jobs.hasKind('uploads_gc'))) await lifecycle.enqueue('uploads_gc', {}, clock.now() + 60_000)
}

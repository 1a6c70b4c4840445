/**
 * The `replay_scrub` job: scrubs the session replays reports reference (modules/uploads/service.ts
 * `scrubPendingReplays`). Storing a report with a replay queues one run at once; a run that found a full
 * batch queues the next one a second later. The hourly `uploads_gc` run scrubs too, as a safety net for a
 * replay whose run was lost (a crash between the report's commit and the queueing).
 *
 * Its own job rather than part of the sanitize step: the scrub reads and writes the blob store (up to
 * 15 MB, 100 MB decompressed), which must not happen inside the sanitize step's write transaction (a
 * SQLite write transaction would hold every writer for it), and spam reports, which never get a process
 * job, may carry a replay too. One place for both dialects and for every node of a cluster: a job runs
 * on one node at a time.
 */
import type { Clock } from '../../core/clock'
import type { Lifecycle } from '../../lifecycle/lifecycle'
import type { UploadsService } from '../../modules/uploads/service'
import type { JobStep } from '../loop'

/** Replays one run scrubs at most. */
export const REPLAY_SCRUB_BATCH = 20

export function createScrubReplaysStep(uploads: UploadsService, lifecycle: Lifecycle, clock: Clock): JobStep {
  return {
    async run(): Promise<void> {
      if ((await uploads.scrubPendingReplays(REPLAY_SCRUB_BATCH)) === REPLAY_SCRUB_BATCH) await lifecycle.enqueue('replay_scrub', {}, clock.now() + 1000)
    },
  }
}

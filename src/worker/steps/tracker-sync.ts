/**
 * The tracker jobs (docs/trackers.md): `tracker_push` (one lead's issue created or brought up to date;
 * a failure runs it again after the tracker's Retry-After or the backoff, never counted as a give-up) and
 * the recurring `tracker_poll` (the state of live issues every FIXLOOP_TRACKER_POLL_MINUTES; a tracker's
 * 429 holds back its own App's issues until the wait is over, never the pass: sync.ts pollPass).
 */
import type { Clock } from '../../core/clock'
import type { Lifecycle } from '../../lifecycle/lifecycle'
import type { TrackerSync } from '../../modules/trackers/sync'
import type { JobsRepo } from '../../lifecycle/jobs-repo'
import type { JobBudget } from '../../core/job-budget'
import { DeferJob, type JobStep } from '../loop'

const NEXT_BATCH_MS = 5_000

export function createPushTrackerIssueStep(sync: TrackerSync): JobStep {
  return {
    async run(job, time) {
      if (!job.feedback_id) return
      // Ends inside its lease: a push that would not stops and runs again soon (sync.ts pushLead).
      const out = await sync.pushLead(job.feedback_id, time)
      if (!out.done) throw new DeferJob(out.retryInMs, out.reason)
    },
  }
}

export function createPollTrackerIssuesStep(deps: { sync: TrackerSync; lifecycle: Lifecycle; clock: Clock; everyMs: number }): JobStep & { pass(): ReturnType<TrackerSync['pollPass']> } {
  /** Where the next pass starts (a lead id): kept across passes of this process; another node starts over. */
  let cursor = ''
  const pass = async (time?: JobBudget) => {
    const out = await deps.sync.pollPass(cursor, time)
    cursor = out.cursor
    return out
  }
  return {
    pass,
    async run(_job, time) {
      if (deps.everyMs <= 0) return
      // A pass that stopped short of its lease's end (sync.ts pollPass) left a cursor: the next comes soon.
      const done = await pass(time)
      const next = done.cursor !== '' ? NEXT_BATCH_MS : deps.everyMs
      await deps.lifecycle.enqueue('tracker_poll', {}, deps.clock.now() + next)
    },
  }
}

/** Makes sure one tracker poll job is scheduled (at start), when polling is on. */
export async function scheduleTrackerPoll(jobs: JobsRepo, lifecycle: Lifecycle, clock: Clock, everyMs: number): Promise<void> {
  if (everyMs > 0 && !(await jobs.hasKind('tracker_poll'))) await lifecycle.enqueue('tracker_poll', {}, clock.now() + Math.min(everyMs, 60_000))
}

/**
 * The `agent` and `review` jobs: starts an agent run for a report that entered `queued`. The run itself goes on
 * outside the worker loop; when no slot is free (one run per App, a global limit) the job waits.
 */
import type { AgentRunner } from '../../agent/runner'
import { RunnerBusy } from '../../agent/runner'
import type { JobRow } from '../../lifecycle/jobs-repo'
import { DeferJob, type JobStep } from '../loop'

/** How long a waiting run job sleeps before it looks for a free slot again. */
export const AGENT_RETRY_MS = 5_000

export function createStartAgentStep(runner: AgentRunner): JobStep {
  return {
    async run(job: JobRow): Promise<void> {
      if (!job.feedback_id) return
      try {
        await runner.start(job.feedback_id)
      } catch (e) {
        if (e instanceof RunnerBusy) throw new DeferJob(AGENT_RETRY_MS, e.message)
        throw e
      }
    },
  }
}

/**
 * The `review` job: starts the review iteration for the reviews waiting on a report's pull request
 * (queued by the git host's webhook). While the App's slot (or every slot) is taken it waits like an
 * agent start; durable, so a restart does not lose it.
 */
export function createReviewStep(runner: AgentRunner): JobStep {
  return {
    async run(job: JobRow): Promise<void> {
      if (!job.feedback_id) return
      try {
        await runner.startQueuedReview(job.feedback_id)
      } catch (e) {
        if (e instanceof RunnerBusy) throw new DeferJob(AGENT_RETRY_MS, e.message)
        throw e
      }
    },
    // A start that kept failing (not waiting: failing) gives its reviews up, so none waits forever.
    async onGiveUp(job: JobRow, error: string): Promise<void> {
      if (job.feedback_id) await runner.dropQueuedReviews(job.feedback_id, `the iteration could not start: ${error}`)
    },
  }
}

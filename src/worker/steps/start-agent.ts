/**
 * The `agent` job: starts an agent run for a report that entered `queued`. The run itself goes on
 * outside the worker loop; when no slot is free (one run per App, a global limit) the job waits.
 */
import type { AgentRunner } from '../../agent/runner'
import { RunnerBusy } from '../../agent/runner'
import type { Database } from 'bun:sqlite'
import type { JobRow } from '../jobs-repo'
import { DeferJob, type JobStep } from '../loop'

export const AGENT_KIND = 'agent'
/** How long a waiting run job sleeps before it looks for a free slot again. */
export const AGENT_RETRY_MS = 5_000

export function createStartAgentStep(runner: AgentRunner): JobStep {
  return {
    run(job: JobRow): void {
      if (!job.feedback_id) return
      try {
        runner.start(job.feedback_id)
      } catch (e) {
        if (e instanceof RunnerBusy) throw new DeferJob(AGENT_RETRY_MS, e.message)
        throw e
      }
    },
  }
}

/** Queues the agent job for a report that just moved to `queued` (call inside that transaction). */
export function enqueueAgentRun(sqlite: Database, feedbackId: string, now: number): void {
  sqlite.query(`INSERT INTO jobs (kind, feedback_id, run_after, created_at) VALUES ('${AGENT_KIND}', ?, ?, ?)`).run(feedbackId, now, now)
}

/**
 * The job kinds of the durable queue, spelled once. Each kind names what its job is about: a report
 * (`feedbackId`), an App (`appId`) or nothing (housekeeping). `enqueue` takes exactly that target.
 */
export const JOB_KINDS = ['process', 'agent', 'batch_release', 'uploads_gc', 'pr_poll', 'review', 'tracker_push', 'tracker_poll', 'replay_scrub'] as const
export type JobKind = (typeof JOB_KINDS)[number]

export const isJobKind = (s: string): s is JobKind => (JOB_KINDS as readonly string[]).includes(s)

/** The target each job kind needs. */
export interface JobTargets {
  /**
   * Sanitize, cluster and route one report. It names the report's App too: the claim takes the Apps'
   * queues round-robin (issue 38), so one App's flood does not hold up another App's report.
   */
  process: { feedbackId: string; appId: string }
  /** Start an agent run for a report that entered `queued`. */
  agent: { feedbackId: string }
  /** Close an App's batch window and move its waiting leads on. */
  batch_release: { appId: string }
  /** Remove uploads nothing referenced. */
  uploads_gc: Record<string, never>
  /** Poll the state of the open pull/merge requests fixloop opened (FIXLOOP_PR_POLL_MINUTES). */
  pr_poll: Record<string, never>
  /** Start a review iteration for the reviews queued on a report's pull request (pending_reviews). */
  review: { feedbackId: string }
  /** Create, update or comment on a lead's tracker issue (docs/trackers.md "Push"). */
  tracker_push: { feedbackId: string }
  /** Poll the state of the tracker issues fixloop created (FIXLOOP_TRACKER_POLL_MINUTES). */
  tracker_poll: Record<string, never>
  /**
   * Scrub the session replays reports reference (modules/uploads/service.ts `scrubPendingReplays`): queued
   * when a report with a replay is stored, and every few minutes as a safety net (a crash in between).
   */
  replay_scrub: Record<string, never>
}

/** A row of the durable job table, as both storage sides return it (snake_case, epoch ms as numbers). */
export interface JobRow {
  id: number
  kind: string
  feedback_id: string | null
  /** App-wide jobs (batch release) and a report's `process` job name their App here (NULL: no App). */
  app_id: string | null
  run_after: number
  lease_until: number | null
  lease_owner: string | null
  attempts: number
  last_error: string | null
  created_at: number
}

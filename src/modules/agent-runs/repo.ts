/**
 * The `agent_runs` rows: the runner's transactions and the API's reads.
 *
 * The runner's writes are one method per business transaction: a run started (the report `queued` →
 * `agent_running`, the run row, `agent_run.started`), a run that ended before it started, a run that
 * ended, a run a crash interrupted; each commits the run row, the report's move and the run's event
 * together or not at all. The runner decides what is written (rows, moves, events: src/agent/runner.ts);
 * the repository makes it atomic. The API's reads take the Org, so another Org's ids find nothing.
 *
 * The port: this interface, a SQLite (src/db/sqlite/agent-runs.ts) and a PostgreSQL
 * (src/db/pg/agent-runs.ts) implementation, both held to test/repos/agent-runs.test.ts.
 */
import type { FeedbackCoreColumns } from '../../db/feedback-row'
import type { EventPayloads } from '../../lifecycle/event-types'
import type { MoveCause } from '../../lifecycle/rules'

/** A run as the API reads it (raw columns). */
export interface RunRow {
  id: string
  org_id: string
  app_id: string
  feedback_id: string
  provider: string
  model: string | null
  status: string
  tokens_in: number
  tokens_out: number
  cost_usd: number
  pr_url: string | null
  branch: string
  guardrail_reason: string | null
  error: string | null
  timings: string
  summary: string | null
  output_tail: string | null
  started_at: number | null
  ended_at: number | null
  created_at: number
  /** `report` | `review` (a review iteration on the report's pull request). */
  trigger: string
  review_text: string | null
}

/** What started a run. */
export type RunTrigger = 'report' | 'review'

/** A report as a run reads it: what the task file and the PR are built from. */
export interface RunFeedbackRow extends FeedbackCoreColumns {
  theme: string | null
  consolidated_text: string | null
  duplicate_count: number
  console_logs: string | null
  component_target: string | null
  attachments: string | null
  /** Null until sanitized: the task then carries no text (src/sanitize/servable.ts). */
  redactions: string | null
}

/** A duplicate of a lead as its run's attachments folder reads it (raw columns; sanitized once `redactions` is set). */
export interface RunDuplicateMedia {
  id: string
  attachments: string | null
  component_target: string | null
  redactions: string | null
}

/** Duplicates a run reads for its attachments folder at most (newest first). */
export const RUN_DUPLICATES_MEDIA_MAX = 20

export interface RunRowInsert {
  id: string
  orgId: string
  appId: string
  feedbackId: string
  provider: string
  model: string | null
  status: 'running' | 'failed'
  branch: string
  timings: string
  startedAt: number
  createdAt: number
  /** Cluster mode: the node running it; null in the embedded mode. */
  nodeId: string | null
  /** Default `report`. */
  trigger?: RunTrigger
  /** A review iteration's request, sanitized. */
  reviewText?: string | null
}

export interface RunRowEnd {
  id: string
  status: 'succeeded' | 'failed' | 'guardrailed'
  model: string | null
  tokensIn: number
  tokensOut: number
  costUsd: number
  prUrl: string | null
  guardrailReason: string | null
  error: string | null
  timings: string
  summary: string | null
  outputTail: string | null
  endedAt: number
}

/** A run left `running` by a crash or restart, with its sandbox's recorded PID and identity. */
export interface InterruptedRun {
  id: string
  org_id: string
  app_id: string
  feedback_id: string
  sandbox_pid: number | null
  sandbox_start: string | null
  /** A review iteration's report goes back to its open pull request, not to `failed`. */
  trigger: string
}

type RunEventType = 'agent_run.started' | 'agent_run.succeeded' | 'agent_run.failed' | 'agent_run.guardrailed'
/** An agent-run event, recorded in the transaction of the change it reports. */
export type RunEvent = { [T in RunEventType]: { type: T; data: EventPayloads[T] } }[RunEventType]
/** A phase of a running run ended: recorded with the run's timings so far. */
export type RunPhaseEvent = { type: 'agent_run.phase'; data: EventPayloads['agent_run.phase'] }

/** The report a run works on, and the Org and App its events belong to. */
export interface RunScope {
  feedbackId: string
  orgId: string
  appId: string
}

/** What a run's end writes beside its row: the report's move, the run's event, the PR URL shared with the lead's duplicates. */
export interface RunOutcome {
  move: { to: 'pr_opened' | 'failed'; cause: MoveCause }
  event: RunEvent
  /** Set when the run opened a pull request: every duplicate of the report points at it. */
  shareUrl?: string | null
}

/** A review waiting for its iteration (pending_reviews; text and author already sanitized). */
export interface PendingReview {
  id: string
  pr_url: string
  text: string
  author: string | null
  received_at: number
}

export interface AgentRunsRepo {
  /** The report a run works on (raw columns), or null. */
  feedback(feedbackId: string): Promise<RunFeedbackRow | null>
  /**
   * The lead's duplicates that may hold screenshots (not in the spam folder), newest first, at most
   * RUN_DUPLICATES_MEDIA_MAX: their attachments and component targets, for the run's attachments folder.
   */
  duplicatesMedia(leadId: string): Promise<RunDuplicateMedia[]>
  /** Runs of the App still `running`. */
  runningCount(appId: string): Promise<number>
  /** Runs of the App created at or after `since`. */
  runsSince(appId: string, since: number): Promise<number>
  /** What the App's runs created at or after `since` cost (USD). */
  costSince(appId: string, since: number): Promise<number>
  /**
   * A run starts: the report `queued` → `agent_running`, the run row (`running`) and `event`, together.
   * False (nothing written) when the report is no longer `queued` (archived, taken by another start);
   * 'app_busy' (nothing written) when another run of the App is in progress, started by another node
   * since the caller checked (a unique index allows one `running` row per App).
   */
  startRun(run: RunRowInsert, event: RunEvent): Promise<boolean | 'app_busy'>
  /**
   * A review iteration starts: the report `pr_opened` → `agent_running`, the run row (trigger `review`)
   * and `event`, together, removing the waiting reviews it takes (`consumed`, pending_reviews ids);
   * false / 'app_busy' as for `startRun` (nothing written, the reviews still wait).
   */
  startReviewRun(run: RunRowInsert, event: RunEvent, consumed?: string[]): Promise<boolean | 'app_busy'>
  /** The reviews waiting for an iteration on the report's pull request (pending_reviews), oldest first, at most PENDING_REVIEWS_MAX. */
  pendingReviews(feedbackId: string): Promise<PendingReview[]>
  /** Removes waiting reviews that will never run (the report moved on, a cap reached). */
  dropPendingReviews(ids: string[]): Promise<void>
  /** The API's read: the reviews waiting on the Org's report (who, when; never the text). */
  pendingReviewsFor(orgId: string, feedbackId: string): Promise<{ author: string | null; receivedAt: number }[]>
  /** How many review iterations the report's pull request had (every run with trigger `review`). */
  reviewRuns(feedbackId: string): Promise<number>
  /** A run that ends before it starts (no sandbox, a cap reached): its row, ended, and the outcome, together. */
  recordFailedStart(run: RunRowInsert, end: RunRowEnd, outcome: RunOutcome): Promise<void>
  /**
   * A run ended: its row, the report's move and the event (and the shared PR URL), together; then, in the
   * same transaction, the pull request's news that came while it ran (deferred_pr_changes, held by the
   * git-hooks repo: a merge resolves the report and its duplicates, a close sends it to awaiting_manual),
   * or that news dropped when the report no longer waits on that request. `failInterrupted` does the same.
   * False (nothing written) when the run's row is gone: its report was removed while it ran.
   */
  finishRun(scope: RunScope, end: RunRowEnd, outcome: RunOutcome): Promise<boolean>
  /**
   * Whether the run's row is still there: false once its report was removed (a reporter's erasure, the
   * report retention: the removal deletes the run's row). The runner asks while the agent
   * works and before anything leaves the machine. (A run failed as interrupted keeps its row: that is the
   * reclaim's business, as before.)
   */
  runExists(runId: string): Promise<boolean>
  /**
   * A phase of a run ended: the run's timings so far and `event`, together, while the run is still
   * `running`; false (nothing written) when it no longer is (failed as interrupted meanwhile).
   */
  recordPhase(scope: RunScope, runId: string, timings: string, event: RunPhaseEvent): Promise<boolean>
  /** Records the running sandbox's PID and identity (cleared with null when it ended). */
  setSandbox(runId: string, pid: number | null, identity: string | null): Promise<void>
  /**
   * Runs left `running` by a process that is gone, oldest first. Embedded mode (no `nodes`): one process
   * per data dir, so at start every `running` row is such a run. Cluster mode: the runs of the given
   * nodes (dead ones, named by the sweep), or with `nodes` null the runs of no live node: claimed by none
   * (from before cluster mode) or by a node gone from `cluster_nodes` (it left, or was forgotten, with
   * the row still `running`; a node is listed before it starts any run).
   */
  interrupted(nodes?: string[] | null): Promise<InterruptedRun[]>
  /** Fails an interrupted run (if still `running`) with the outcome, together; false when it no longer ran. */
  failInterrupted(run: InterruptedRun, error: string, endedAt: number, outcome: RunOutcome): Promise<boolean>

  /** The Org's run by id. */
  byId(orgId: string, id: string): Promise<RunRow | null>
  /** The report's latest run. */
  latestFor(orgId: string, feedbackId: string): Promise<RunRow | null>
  /** The report's runs, newest first (at most RUN_LIST_LIMIT). */
  allFor(orgId: string, feedbackId: string): Promise<RunRow[]>
  feedbackInOrg(orgId: string, feedbackId: string): Promise<boolean>
}

/** The most runs a report's list returns. */
export const RUN_LIST_LIMIT = 200


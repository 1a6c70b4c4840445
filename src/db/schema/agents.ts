/** Repository connections (one per App) and the audit record of every agent run. */
import { sql } from 'drizzle-orm'
import { index, primaryKey, uniqueIndex, integer, real, sqliteTable, text } from 'drizzle-orm/sqlite-core'

export const repoConnections = sqliteTable('repo_connections', {
  appId: text('app_id').primaryKey(),
  gitUrl: text('git_url').notNull(),
  baseBranch: text('base_branch').notNull().default('main'),
  /** github | gitea | gitlab | none */
  hostKind: text('host_kind').notNull(),
  hostApiUrl: text('host_api_url'),
  /** "owner/name" (GitLab: the project path) on the host; derived from the git URL when not given. */
  hostRepo: text('host_repo'),
  /** AES-256-GCM sealed access token (core/crypto.ts); never returned, never logged. */
  hostTokenEnc: text('host_token_enc'),
  /** AES-256-GCM sealed secret the git host signs its webhooks with (docs/agents.md "Following the pull request"). */
  webhookSecretEnc: text('webhook_secret_enc'),
  /** claude-code | codex | aider | command */
  agentProvider: text('agent_provider').notNull(),
  agentCommand: text('agent_command'),
  model: text('model'),
  timeoutSeconds: integer('timeout_seconds').notNull(),
  /** ready | draft | branch */
  prMode: text('pr_mode').notNull(),
  verifyCommand: text('verify_command'),
  maxFiles: integer('max_files').notNull(),
  maxLines: integer('max_lines').notNull(),
  /** JSON array of extra deny-list globs (on top of the defaults). */
  denyPaths: text('deny_paths').notNull().default('[]'),
  runsPerDay: integer('runs_per_day').notNull(),
  maxCostUsdPerMonth: real('max_cost_usd_per_month').notNull(),
  createdAt: integer('created_at').notNull(),
  updatedAt: integer('updated_at').notNull(),
})

export const agentRuns = sqliteTable(
  'agent_runs',
  {
    id: text('id').primaryKey(),
    orgId: text('org_id').notNull(),
    appId: text('app_id').notNull(),
    feedbackId: text('feedback_id').notNull(),
    provider: text('provider').notNull(),
    model: text('model'),
    /** running | succeeded | failed | guardrailed */
    status: text('status').notNull(),
    tokensIn: integer('tokens_in').notNull().default(0),
    tokensOut: integer('tokens_out').notNull().default(0),
    costUsd: real('cost_usd').notNull().default(0),
    prUrl: text('pr_url'),
    branch: text('branch').notNull(),
    guardrailReason: text('guardrail_reason'),
    error: text('error'),
    /** JSON {prepareMs, cloneMs, agentMs, pushMs, prMs} */
    timings: text('timings').notNull(),
    /** The agent's summary, from its result file or output. */
    summary: text('summary'),
    /** The last lines of the agent's (and verify command's) output, for diagnosis. */
    outputTail: text('output_tail'),
    /** The sandbox's (outer bwrap's) PID while the agent runs, to end it after a crash (0007_sandbox). */
    sandboxPid: integer('sandbox_pid'),
    /** That process's identity: `<boot id>:<start time in clock ticks>`, so a reused PID is never killed. */
    sandboxStart: text('sandbox_start'),
    /** Cluster mode: the node running it (src/nodes/); when that node dies, the sweep fails the run. */
    nodeId: text('node_id'),
    /** What started the run: `report` (the report was queued) or `review` (a review asked for changes on its PR). */
    trigger: text('trigger').notNull().default('report'),
    /** A review iteration's request (sanitized, bounded): fed to the agent as untrusted text. */
    reviewText: text('review_text'),
    startedAt: integer('started_at'),
    endedAt: integer('ended_at'),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [index('agent_runs_feedback_idx').on(t.feedbackId, t.id), index('agent_runs_app_idx').on(t.appId, t.createdAt), index('agent_runs_status_idx').on(t.status),
    // At most one run in progress per App, whichever node starts it (two nodes checking first could both start).
    uniqueIndex('agent_runs_one_running_per_app_uq').on(t.appId).where(sql`status = 'running'`),
  ],
)

/**
 * Git-host webhook deliveries already handled (their delivery id per App), so a replayed delivery is
 * acknowledged and ignored. Kept for a bounded time (GIT_DELIVERY_RETENTION_MS), pruned as new ones arrive.
 */
export const gitHostDeliveries = sqliteTable(
  'git_host_deliveries',
  {
    appId: text('app_id').notNull(),
    deliveryId: text('delivery_id').notNull(),
    receivedAt: integer('received_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.appId, t.deliveryId] }), index('git_host_deliveries_received_idx').on(t.receivedAt)],
)

/**
 * Reviews asking for changes that wait for a review iteration (the App's slot or every agent slot was
 * busy when they came): the text and author sanitized and bounded as the run would store them, never the
 * host's raw text. A `review` job starts the iteration; its start removes the rows it took, in its own
 * transaction. docs/agents.md "Review iteration".
 */
export const pendingReviews = sqliteTable(
  'pending_reviews',
  {
    /** Time-ordered (core/ids.ts): the order reviews are combined in. */
    id: text('id').primaryKey(),
    orgId: text('org_id').notNull(),
    appId: text('app_id').notNull(),
    feedbackId: text('feedback_id').notNull(),
    prUrl: text('pr_url').notNull(),
    text: text('text').notNull(),
    author: text('author'),
    receivedAt: integer('received_at').notNull(),
  },
  (t) => [index('pending_reviews_feedback_idx').on(t.feedbackId, t.id)],
)

/**
 * Pull/merge requests of fixloop's that were closed without merge (their report went to awaiting_manual,
 * keeping the URL): polling reads them for CLOSED_PR_POLL_DAYS after the close, so a reopen is seen without
 * webhooks too. Written with the close's move, removed by a reopen or a merge, pruned after the window.
 */
export const closedPullRequests = sqliteTable(
  'closed_pull_requests',
  {
    feedbackId: text('feedback_id').primaryKey(),
    appId: text('app_id').notNull(),
    prUrl: text('pr_url').notNull(),
    closedAt: integer('closed_at').notNull(),
  },
  (t) => [index('closed_pull_requests_closed_idx').on(t.closedAt)],
)

/**
 * What the git host said about a pull/merge request while a run of its report was in progress (the report
 * `agent_running`, where merged/closed cannot apply yet): at most one per report, applied (or dropped, when
 * the report no longer waits on that request) in the transaction that ends the run. A merge is kept over a
 * later close; a reopen cancels a close. docs/agents.md "News during a review iteration".
 */
export const deferredPrChanges = sqliteTable('deferred_pr_changes', {
  feedbackId: text('feedback_id').primaryKey(),
  appId: text('app_id').notNull(),
  prUrl: text('pr_url').notNull(),
  /** merged | closed */
  change: text('change').notNull(),
  receivedAt: integer('received_at').notNull(),
})

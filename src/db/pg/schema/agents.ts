/** Repository connections and agent-run audit records: the PostgreSQL twin of src/db/schema/agents.ts. */
import { sql } from 'drizzle-orm'
import { doublePrecision, index, integer, pgTable, primaryKey, text, uniqueIndex } from 'drizzle-orm/pg-core'
import { counter, epochMs } from './columns'

export const repoConnections = pgTable('repo_connections', {
  appId: text('app_id').primaryKey(),
  gitUrl: text('git_url').notNull(),
  baseBranch: text('base_branch').notNull().default('main'),
  hostKind: text('host_kind').notNull(),
  hostApiUrl: text('host_api_url'),
  hostRepo: text('host_repo'),
  hostTokenEnc: text('host_token_enc'),
  webhookSecretEnc: text('webhook_secret_enc'),
  agentProvider: text('agent_provider').notNull(),
  agentCommand: text('agent_command'),
  model: text('model'),
  timeoutSeconds: integer('timeout_seconds').notNull(),
  prMode: text('pr_mode').notNull(),
  verifyCommand: text('verify_command'),
  maxFiles: integer('max_files').notNull(),
  maxLines: integer('max_lines').notNull(),
  denyPaths: text('deny_paths').notNull().default('[]'),
  runsPerDay: integer('runs_per_day').notNull(),
  maxCostUsdPerMonth: doublePrecision('max_cost_usd_per_month').notNull(),
  createdAt: epochMs('created_at').notNull(),
  updatedAt: epochMs('updated_at').notNull(),
})

export const agentRuns = pgTable(
  'agent_runs',
  {
    id: text('id').primaryKey(),
    orgId: text('org_id').notNull(),
    appId: text('app_id').notNull(),
    feedbackId: text('feedback_id').notNull(),
    provider: text('provider').notNull(),
    model: text('model'),
    status: text('status').notNull(),
    tokensIn: counter('tokens_in').notNull().default(0),
    tokensOut: counter('tokens_out').notNull().default(0),
    costUsd: doublePrecision('cost_usd').notNull().default(0),
    prUrl: text('pr_url'),
    branch: text('branch').notNull(),
    guardrailReason: text('guardrail_reason'),
    error: text('error'),
    timings: text('timings').notNull(),
    summary: text('summary'),
    outputTail: text('output_tail'),
    sandboxPid: integer('sandbox_pid'),
    sandboxStart: text('sandbox_start'),
    nodeId: text('node_id'),
    /** What started the run: `report` (the report was queued) or `review` (a review asked for changes on its PR). */
    trigger: text('trigger').notNull().default('report'),
    /** A review iteration's request (sanitized, bounded): fed to the agent as untrusted text. */
    reviewText: text('review_text'),
    startedAt: epochMs('started_at'),
    endedAt: epochMs('ended_at'),
    createdAt: epochMs('created_at').notNull(),
  },
  (t) => [index('agent_runs_feedback_idx').on(t.feedbackId, t.id), index('agent_runs_app_idx').on(t.appId, t.createdAt), index('agent_runs_status_idx').on(t.status),
    // At most one run in progress per App, whichever node starts it (two nodes checking first could both start).
    uniqueIndex('agent_runs_one_running_per_app_uq').on(t.appId).where(sql`status = 'running'`),
  ],
)

export const gitHostDeliveries = pgTable(
  'git_host_deliveries',
  {
    appId: text('app_id').notNull(),
    deliveryId: text('delivery_id').notNull(),
    receivedAt: epochMs('received_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.appId, t.deliveryId] }), index('git_host_deliveries_received_idx').on(t.receivedAt)],
)

/**
 * Reviews asking for changes that wait for a review iteration (the App's slot or every agent slot was
 * busy when they came): the text and author sanitized and bounded as the run would store them, never the
 * host's raw text. A `review` job starts the iteration; its start removes the rows it took, in its own
 * transaction. docs/agents.md "Review iteration".
 */
export const pendingReviews = pgTable(
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
    receivedAt: epochMs('received_at').notNull(),
  },
  (t) => [index('pending_reviews_feedback_idx').on(t.feedbackId, t.id)],
)

/**
 * Pull/merge requests of fixloop's that were closed without merge (their report went to awaiting_manual,
 * keeping the URL): polling reads them for CLOSED_PR_POLL_DAYS after the close, so a reopen is seen without
 * webhooks too. Written with the close's move, removed by a reopen or a merge, pruned after the window.
 */
export const closedPullRequests = pgTable(
  'closed_pull_requests',
  {
    feedbackId: text('feedback_id').primaryKey(),
    appId: text('app_id').notNull(),
    prUrl: text('pr_url').notNull(),
    closedAt: epochMs('closed_at').notNull(),
  },
  (t) => [index('closed_pull_requests_closed_idx').on(t.closedAt)],
)

/**
 * What the git host said about a pull/merge request while a run of its report was in progress (the report
 * `agent_running`, where merged/closed cannot apply yet): at most one per report, applied (or dropped, when
 * the report no longer waits on that request) in the transaction that ends the run. A merge is kept over a
 * later close; a reopen cancels a close. docs/agents.md "News during a review iteration".
 */
export const deferredPrChanges = pgTable('deferred_pr_changes', {
  feedbackId: text('feedback_id').primaryKey(),
  appId: text('app_id').notNull(),
  prUrl: text('pr_url').notNull(),
  change: text('change').notNull(),
  receivedAt: epochMs('received_at').notNull(),
})

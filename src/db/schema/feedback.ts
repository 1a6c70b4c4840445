/** Feedback reports, the durable job table and remembered Idempotency-Keys. */
import { sql } from 'drizzle-orm'
import { index, integer, primaryKey, real, sqliteTable, text } from 'drizzle-orm/sqlite-core'
import { apps, orgs } from './tenants'

export const feedback = sqliteTable(
  'feedback',
  {
    id: text('id').primaryKey(),
    /** Denormalised from the App so every tenant-scoped query is one index range. */
    orgId: text('org_id').notNull().references(() => orgs.id),
    appId: text('app_id').notNull().references(() => apps.id),
    status: text('status').notNull(),
    /** Compare-and-set counter for optimistic concurrency. */
    version: integer('version').notNull().default(0),
    severity: text('severity'),
    text: text('text').notNull(),
    url: text('url'),
    userAgent: text('user_agent'),
    /** JSON members of the full item; NULL when not submitted. */
    viewport: text('viewport'),
    consoleLogs: text('console_logs'),
    attachments: text('attachments'),
    componentTarget: text('component_target'),
    metadata: text('metadata'),
    submittedMode: text('submitted_mode').notNull(),
    externalUserId: text('external_user_id'),
    email: text('email'),
    submitterName: text('submitter_name'),
    /** The user token's ctx claim (private mode), JSON. */
    userContext: text('user_context'),
    /** Per-rule redaction counts from sanitizing, JSON object; never the matched values. */
    redactions: text('redactions'),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
    processedAt: integer('processed_at'),
    mergeRequestUrl: text('merge_request_url'),
    duplicateOfId: text('duplicate_of_id'),
    duplicateCount: integer('duplicate_count').notNull().default(0),
    lastDuplicateAt: integer('last_duplicate_at'),
    theme: text('theme'),
    consolidatedText: text('consolidated_text'),
    /** Why the item is `failed` (processing gave up, or the agent run failed); null otherwise. */
    failureReason: text('failure_reason'),
    /** Set by a manual merge or unmerge: automatic clustering leaves this row alone from then on. */
    mergeLocked: integer('merge_locked', { mode: 'boolean' }).notNull().default(false),
    /**
     * A lead clustering offered instead of merging (docs/triage.md "Suggestions: the second tier"): its id,
     * score and reason; all null when there is none. Cleared when the report becomes a duplicate.
     */
    suggestedLeadId: text('suggested_lead_id'),
    suggestedScore: real('suggested_score'),
    suggestedReason: text('suggested_reason'),
    /** Leads a person rejected as this report's suggestion, JSON array of ids: never suggested again. */
    rejectedLeadIds: text('rejected_lead_ids'),
    /** On a duplicate: the score and reason of the merge that made it one (null score: merged by hand, or before 0018). */
    mergeScore: real('merge_score'),
    mergeReason: text('merge_reason'),
    /**
     * The address to tell when this report is resolved (the reporter opted in with notifyEmail), sealed with
     * the master key; null when they did not. Moved into mail_outbox (and cleared here) once the report is
     * resolved, so it lives only as long as it is needed (docs/email.md).
     */
    notifyEmailSealed: text('notify_email_sealed'),
    /** Public mode: when the mailer asked for the address's confirmation (null: not yet; docs/email.md). */
    notifyAskedAt: integer('notify_asked_at'),
    /**
     * The spam classification (docs/api.md "Spam"): set when the report went to the spam folder (the score,
     * the reasons as a JSON array, when). All null for an ordinary report, and again after "not spam".
     */
    spamScore: real('spam_score'),
    spamReasons: text('spam_reasons'),
    spamMarkedAt: integer('spam_marked_at'),
  },
  (t) => [
    // The spam folder, newest first; tiny next to the table (only spam rows).
    index('feedback_spam_idx').on(t.orgId, t.id).where(sql`spam_marked_at IS NOT NULL`),
    index('feedback_org_id_idx').on(t.orgId, t.id),
    index('feedback_app_id_idx').on(t.appId, t.id),
    index('feedback_org_status_idx').on(t.orgId, t.status, t.id),
    index('feedback_app_status_idx').on(t.appId, t.status, t.id),
    // A lead's newest duplicates (ORDER BY id DESC LIMIT 200) straight from the index, and its count and
    // latest time without reading a row: a cluster of 10k duplicates otherwise costs a full sort per attach.
    // GET /v1/me/feedback: one user's reports of one App, newest first (private mode only).
    index('feedback_private_sub_idx').on(t.appId, t.externalUserId, t.id).where(sql`submitted_mode = 'private'`),
    // The mailer's scan: resolved reports whose reporter is still to be told (tiny: rows leave it once queued).
    index('feedback_notify_due_idx').on(t.id).where(sql`notify_email_sealed IS NOT NULL AND status = 'resolved'`),
    // The mailer's other scan: public-mode opt-ins whose address is still to be confirmed (tiny likewise).
    index('feedback_notify_ask_idx').on(t.id).where(sql`notify_email_sealed IS NOT NULL AND notify_asked_at IS NULL AND submitted_mode = 'public'`),
    index('feedback_dup_recent_idx').on(t.duplicateOfId, t.id, t.createdAt).where(sql`duplicate_of_id IS NOT NULL`),
    // Removing reports (src/db/sql/report-removal.ts) clears the suggestions that point at them.
    index('feedback_suggested_idx').on(t.suggestedLeadId).where(sql`suggested_lead_id IS NOT NULL`),
  ],
)

export const jobs = sqliteTable(
  'jobs',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    kind: text('kind').notNull(),
    feedbackId: text('feedback_id'),
    /**
     * The App the job is for: App-wide jobs (batch window release) and a report's `process` job (set at
     * intake, so the claim can take the Apps' queues round-robin: src/db/sqlite/jobs.ts). NULL for the rest.
     */
    appId: text('app_id'),
    /** Epoch ms before which the job is not claimed (backoff). */
    runAfter: integer('run_after').notNull(),
    /** Epoch ms until which a worker holds the job; a crashed worker's lease simply runs out. */
    leaseUntil: integer('lease_until'),
    /** Who holds the lease: `host:pid:start` (src/worker/lease-owner.ts); a start reclaims a gone owner's leases. */
    leaseOwner: text('lease_owner'),
    attempts: integer('attempts').notNull().default(0),
    lastError: text('last_error'),
    createdAt: integer('created_at').notNull(),
  },
  // jobs_kind_due_idx: each thread claims only its own kinds (lifecycle/jobs-repo.ts); without it a thread
  // with few jobs scanned every due job of the other thread's kinds (200k under a burst) per claim.
  // jobs_app_due_idx: the fair claim (issue 38) walks the Apps with queued jobs of a kind one index probe each
  // (a skip scan) and reads each App's due jobs in order from it, never every due job of the backlog.
  // jobs_leased_idx: the jobs under a lease, a few hundred beside a backlog of any size: the cluster's
  // dead-node sweep (every beat) and a partition's hand-over read only them (PostgreSQL: 39 ms -> 1 ms at
  // 200k queued jobs, bench/README "Jobs under a lease"), and so do the start's and stop's hand-backs.
  (t) => [
    index('jobs_due_idx').on(t.runAfter),
    index('jobs_feedback_idx').on(t.feedbackId),
    index('jobs_kind_due_idx').on(t.kind, t.runAfter),
    index('jobs_app_due_idx').on(t.kind, t.appId, t.runAfter, t.id),
    index('jobs_leased_idx').on(t.leaseUntil).where(sql`lease_until IS NOT NULL`),
  ],
)

export const idempotencyKeys = sqliteTable(
  'idempotency_keys',
  {
    appId: text('app_id').notNull(),
    key: text('key').notNull(),
    /** SHA-256 of the request body, to tell a retry from a different request under the same key. */
    requestHash: text('request_hash').notNull(),
    statusCode: integer('status_code').notNull(),
    responseBody: text('response_body').notNull(),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.appId, t.key] }), index('idempotency_created_idx').on(t.createdAt)],
)

/**
 * People's triage decisions on near-duplicates, per App: what src/dedup/learn.ts moves the App's merge
 * bars from (confirmed and rejected suggestions, unmerges of automatic merges), with the score clustering
 * gave the pair. Ids and scores only, never report text.
 */
export const triageDecisions = sqliteTable(
  'triage_decisions',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    orgId: text('org_id').notNull(),
    appId: text('app_id').notNull(),
    feedbackId: text('feedback_id').notNull(),
    leadId: text('lead_id').notNull(),
    /** `confirmed` | `rejected` | `unmerged` (learn.ts `DecisionKind`). */
    kind: text('kind').notNull(),
    score: real('score').notNull(),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [index('triage_decisions_app_idx').on(t.appId, t.id), index('triage_decisions_feedback_idx').on(t.feedbackId), index('triage_decisions_lead_idx').on(t.leadId)],
)

/**
 * Each App's calibration as its clustering last computed it (src/dedup/calibrate.ts): how many reports
 * it has scored (capped at what calibrate looks at) and the median best-match score, rounded as calibrate
 * uses it. Written by the process that clusters, with its verdicts; read by every process that shows the
 * App's bars (API, dashboard, CLI), so all of them show the bars clustering uses.
 */
export const appCalibration = sqliteTable('app_calibration', {
  appId: text('app_id').primaryKey(),
  scored: integer('scored').notNull(),
  median: real('median').notNull(),
  /** Whether the App's duplicates come in bursts, 0..1 to a hundredth (src/dedup/arrival-locality.ts). */
  arrivalLocality: real('arrival_locality').notNull().default(0),
  updatedAt: integer('updated_at').notNull(),
})

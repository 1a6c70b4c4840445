/** Feedback reports, the durable job table and Idempotency-Keys: the PostgreSQL twin of src/db/schema/feedback.ts. */
import { sql } from 'drizzle-orm'
import { bigint, boolean, doublePrecision, index, integer, pgTable, primaryKey, text } from 'drizzle-orm/pg-core'
import { epochMs } from './columns'
import { apps, orgs } from './tenants'

export const feedback = pgTable(
  'feedback',
  {
    id: text('id').primaryKey(),
    orgId: text('org_id').notNull().references(() => orgs.id),
    appId: text('app_id').notNull().references(() => apps.id),
    status: text('status').notNull(),
    version: integer('version').notNull().default(0),
    severity: text('severity'),
    text: text('text').notNull(),
    url: text('url'),
    userAgent: text('user_agent'),
    viewport: text('viewport'),
    consoleLogs: text('console_logs'),
    attachments: text('attachments'),
    componentTarget: text('component_target'),
    metadata: text('metadata'),
    submittedMode: text('submitted_mode').notNull(),
    externalUserId: text('external_user_id'),
    email: text('email'),
    submitterName: text('submitter_name'),
    userContext: text('user_context'),
    redactions: text('redactions'),
    createdAt: epochMs('created_at').notNull(),
    updatedAt: epochMs('updated_at').notNull(),
    processedAt: epochMs('processed_at'),
    mergeRequestUrl: text('merge_request_url'),
    duplicateOfId: text('duplicate_of_id'),
    duplicateCount: integer('duplicate_count').notNull().default(0),
    lastDuplicateAt: epochMs('last_duplicate_at'),
    theme: text('theme'),
    consolidatedText: text('consolidated_text'),
    failureReason: text('failure_reason'),
    mergeLocked: boolean('merge_locked').notNull().default(false),
    suggestedLeadId: text('suggested_lead_id'),
    suggestedScore: doublePrecision('suggested_score'),
    suggestedReason: text('suggested_reason'),
    rejectedLeadIds: text('rejected_lead_ids'),
    mergeScore: doublePrecision('merge_score'),
    mergeReason: text('merge_reason'),
    notifyEmailSealed: text('notify_email_sealed'),
    /** Public mode: when the mailer asked for the address's confirmation (null: not yet; docs/email.md). */
    notifyAskedAt: epochMs('notify_asked_at'),
    spamScore: doublePrecision('spam_score'),
    spamReasons: text('spam_reasons'),
    spamMarkedAt: epochMs('spam_marked_at'),
  },
  (t) => [
    index('feedback_spam_idx').on(t.orgId, t.id).where(sql`spam_marked_at IS NOT NULL`),
    index('feedback_private_sub_idx').on(t.appId, t.externalUserId, t.id).where(sql`submitted_mode = 'private'`),
    index('feedback_notify_due_idx').on(t.id).where(sql`notify_email_sealed IS NOT NULL AND status = 'resolved'`),
    // The mailer's other scan: public-mode opt-ins whose address is still to be confirmed (tiny likewise).
    index('feedback_notify_ask_idx').on(t.id).where(sql`notify_email_sealed IS NOT NULL AND notify_asked_at IS NULL AND submitted_mode = 'public'`),
    index('feedback_org_id_idx').on(t.orgId, t.id),
    index('feedback_app_id_idx').on(t.appId, t.id),
    index('feedback_org_status_idx').on(t.orgId, t.status, t.id),
    index('feedback_app_status_idx').on(t.appId, t.status, t.id),
    index('feedback_dup_recent_idx').on(t.duplicateOfId, t.id, t.createdAt).where(sql`duplicate_of_id IS NOT NULL`),
    // Removing reports (src/db/sql/report-removal.ts) clears the suggestions that point at them.
    index('feedback_suggested_idx').on(t.suggestedLeadId).where(sql`suggested_lead_id IS NOT NULL`),
  ],
)

export const jobs = pgTable(
  'jobs',
  {
    // An identity column: SQLite's AUTOINCREMENT rowid. "By default" so a copy from SQLite keeps its ids.
    id: bigint('id', { mode: 'number' }).primaryKey().generatedByDefaultAsIdentity(),
    kind: text('kind').notNull(),
    feedbackId: text('feedback_id'),
    /** App-wide jobs (batch release) and a report's `process` job (set at intake, for the fair claim). */
    appId: text('app_id'),
    runAfter: epochMs('run_after').notNull(),
    leaseUntil: epochMs('lease_until'),
    leaseOwner: text('lease_owner'),
    attempts: integer('attempts').notNull().default(0),
    lastError: text('last_error'),
    createdAt: epochMs('created_at').notNull(),
  },
  // jobs_app_due_idx: the fair claim (issue 38, src/db/pg/jobs.ts) walks the Apps with queued jobs of a kind
  // one index probe each and reads each App's due jobs in order from it.
  // jobs_leased_idx: the jobs under a lease, a few hundred beside a backlog of any size: the dead-node sweep
  // (every beat of the maintenance node: src/db/pg/nodes.ts) and a partition's hand-over read only them
  // (39 ms -> 1 ms and 154 ms -> 2 ms at 200k queued jobs, bench/README "Jobs under a lease").
  (t) => [
    index('jobs_due_idx').on(t.runAfter),
    index('jobs_feedback_idx').on(t.feedbackId),
    index('jobs_kind_due_idx').on(t.kind, t.runAfter),
    index('jobs_app_due_idx').on(t.kind, t.appId, t.runAfter, t.id),
    index('jobs_leased_idx').on(t.leaseUntil).where(sql`lease_until IS NOT NULL`),
  ],
)

export const idempotencyKeys = pgTable(
  'idempotency_keys',
  {
    appId: text('app_id').notNull(),
    key: text('key').notNull(),
    requestHash: text('request_hash').notNull(),
    statusCode: integer('status_code').notNull(),
    responseBody: text('response_body').notNull(),
    createdAt: epochMs('created_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.appId, t.key] }), index('idempotency_created_idx').on(t.createdAt)],
)

/** People's triage decisions on near-duplicates: the twin of src/db/schema/feedback.ts `triageDecisions`. */
export const triageDecisions = pgTable(
  'triage_decisions',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedByDefaultAsIdentity(),
    orgId: text('org_id').notNull(),
    appId: text('app_id').notNull(),
    feedbackId: text('feedback_id').notNull(),
    leadId: text('lead_id').notNull(),
    kind: text('kind').notNull(),
    score: doublePrecision('score').notNull(),
    createdAt: epochMs('created_at').notNull(),
  },
  (t) => [index('triage_decisions_app_idx').on(t.appId, t.id), index('triage_decisions_feedback_idx').on(t.feedbackId), index('triage_decisions_lead_idx').on(t.leadId)],
)

/** Each App's calibration as its clustering last computed it: the twin of src/db/schema/feedback.ts `appCalibration`. */
export const appCalibration = pgTable('app_calibration', {
  appId: text('app_id').primaryKey(),
  scored: integer('scored').notNull(),
  median: doublePrecision('median').notNull(),
  arrivalLocality: doublePrecision('arrival_locality').notNull().default(0),
  updatedAt: epochMs('updated_at').notNull(),
})

/**
 * Webhook endpoints, their deliveries (one row per endpoint × event: the durable queue, filled from the
 * event outbox by a per-endpoint cursor) and the attempt log; Slack chat-ops connections, the parent
 * message of each lead report, and the Slack users allowed to act for an Org.
 */
import { sql } from 'drizzle-orm'
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'

export const webhooks = sqliteTable(
  'webhooks',
  {
    id: text('id').primaryKey(),
    orgId: text('org_id').notNull(),
    /** Only this App's events when set; the whole Org's otherwise. */
    appId: text('app_id'),
    url: text('url').notNull(),
    /** JSON array of event types; empty means every type. */
    eventTypes: text('event_types').notNull().default('[]'),
    /** `whsec_…` sealed with the master key (core/crypto.ts). */
    secretSealed: text('secret_sealed').notNull(),
    /** After a rotation, the old secret keeps signing (second signature) until previousSecretUntil. */
    previousSecretSealed: text('previous_secret_sealed'),
    previousSecretUntil: integer('previous_secret_until'),
    /** Last seq of the Org's outbox already turned into delivery rows for this endpoint. */
    cursorSeq: integer('cursor_seq').notNull().default(0),
    enabled: integer('enabled', { mode: 'boolean' }).notNull().default(true),
    disabledReason: text('disabled_reason'),
    /** Start of the current run of failures; cleared by any success. Five days of it disables. */
    failingSince: integer('failing_since'),
    createdAt: integer('created_at').notNull(),
    deletedAt: integer('deleted_at'),
  },
  (t) => [
    index('webhooks_org_idx').on(t.orgId),
    // The dispatcher's pass: per Org, the live endpoints whose cursor is below the Org's newest event (a
    // range), and the next Org with live endpoints (a seek). Its predicate is the queries' (db/sql/webhooks.ts).
    index('webhooks_live_cursor_idx').on(t.orgId, t.cursorSeq).where(sql`enabled AND deleted_at IS NULL`),
  ],
)

export const webhookDeliveries = sqliteTable(
  'webhook_deliveries',
  {
    id: text('id').primaryKey(),
    webhookId: text('webhook_id').notNull(),
    orgId: text('org_id').notNull(),
    /** Sent as `webhook-id`: stable across retries and redeliveries. */
    eventId: text('event_id').notNull(),
    eventSeq: integer('event_seq').notNull(),
    eventType: text('event_type').notNull(),
    /** The exact JSON body (the event object), kept so retries sign the same bytes after event retention. */
    payload: text('payload').notNull(),
    /** pending | succeeded | failed */
    status: text('status').notNull().default('pending'),
    attempts: integer('attempts').notNull().default(0),
    /** Position in the retry schedule; reset by a redelivery. */
    scheduleIndex: integer('schedule_index').notNull().default(0),
    nextAttemptAt: integer('next_attempt_at'),
    leaseUntil: integer('lease_until'),
    lastStatus: integer('last_status'),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [
    uniqueIndex('webhook_deliveries_event_uq').on(t.webhookId, t.eventId),
    index('webhook_deliveries_due_idx').on(t.status, t.nextAttemptAt),
    index('webhook_deliveries_created_idx').on(t.createdAt),
    // An event's deliveries across endpoints (a report's removal drops those that named its reporter).
    index('webhook_deliveries_event_idx').on(t.eventId),
    // The ordered claim: an endpoint's next pending delivery in seq order, and whether one is in flight.
    index('webhook_deliveries_endpoint_idx').on(t.webhookId, t.status, t.eventSeq),
    index('webhook_deliveries_leased_idx').on(t.webhookId).where(sql`lease_until IS NOT NULL`),
  ],
)

export const webhookAttempts = sqliteTable(
  'webhook_attempts',
  {
    id: text('id').primaryKey(),
    deliveryId: text('delivery_id').notNull(),
    webhookId: text('webhook_id').notNull(),
    orgId: text('org_id').notNull(),
    attempt: integer('attempt').notNull(),
    requestHeaders: text('request_headers').notNull(),
    requestBody: text('request_body').notNull(),
    responseStatus: integer('response_status'),
    /** First 4 KB of the answer. */
    responseBody: text('response_body'),
    /** timeout, connection refused, target refused by the SSRF guard, … */
    error: text('error'),
    latencyMs: integer('latency_ms').notNull(),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [index('webhook_attempts_delivery_idx').on(t.deliveryId), index('webhook_attempts_created_idx').on(t.createdAt)],
)

export const slackConnections = sqliteTable(
  'slack_connections',
  {
    id: text('id').primaryKey(),
    orgId: text('org_id').notNull(),
    appId: text('app_id'),
    channel: text('channel').notNull(),
    botTokenSealed: text('bot_token_sealed').notNull(),
    signingSecretSealed: text('signing_secret_sealed').notNull(),
    eventTypes: text('event_types').notNull().default('[]'),
    cursorSeq: integer('cursor_seq').notNull().default(0),
    /** The last error Slack answered (e.g. channel_not_found), shown by `chatops slack list`. */
    lastError: text('last_error'),
    /**
     * Which notifier drains the connection now, and until when (epoch ms): claimed, compare-and-set, right
     * before each Slack call, so two nodes overlapping at a dispatch handover never post the same event
     * (modules/chatops/notifier.ts). Null when nobody drains it.
     */
    drainOwner: text('drain_owner'),
    drainUntil: integer('drain_until'),
    createdAt: integer('created_at').notNull(),
    deletedAt: integer('deleted_at'),
  },
  (t) => [
    index('slack_connections_org_idx').on(t.orgId),
    // The notifier's pass: per Org, the connections whose cursor is below the Org's newest event (db/sql/webhooks.ts).
    index('slack_connections_live_cursor_idx').on(t.orgId, t.cursorSeq).where(sql`deleted_at IS NULL`),
  ],
)

export const slackThreads = sqliteTable(
  'slack_threads',
  {
    connectionId: text('connection_id').notNull(),
    leadFeedbackId: text('lead_feedback_id').notNull(),
    channel: text('channel').notNull(),
    /** Slack's ts of the parent message: what chat.update and thread replies point at. */
    ts: text('ts').notNull(),
    status: text('status').notNull(),
    duplicateCount: integer('duplicate_count').notNull().default(0),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.connectionId, t.leadFeedbackId] }), index('slack_threads_lead_idx').on(t.leadFeedbackId)],
)

/** Slack users (per workspace) allowed to change reports of an Org through slash commands. */
export const slackUsers = sqliteTable(
  'slack_users',
  {
    orgId: text('org_id').notNull(),
    slackTeamId: text('slack_team_id').notNull(),
    slackUserId: text('slack_user_id').notNull(),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.orgId, t.slackTeamId, t.slackUserId] })],
)

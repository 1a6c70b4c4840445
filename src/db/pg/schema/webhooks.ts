/** Webhook endpoints, deliveries, attempts and Slack chat-ops: the PostgreSQL twin of src/db/schema/webhooks.ts. */
import { sql } from 'drizzle-orm'
import { boolean, index, integer, pgTable, primaryKey, text, uniqueIndex } from 'drizzle-orm/pg-core'
import { counter, epochMs } from './columns'

export const webhooks = pgTable(
  'webhooks',
  {
    id: text('id').primaryKey(),
    orgId: text('org_id').notNull(),
    appId: text('app_id'),
    url: text('url').notNull(),
    eventTypes: text('event_types').notNull().default('[]'),
    secretSealed: text('secret_sealed').notNull(),
    previousSecretSealed: text('previous_secret_sealed'),
    previousSecretUntil: epochMs('previous_secret_until'),
    cursorSeq: counter('cursor_seq').notNull().default(0),
    enabled: boolean('enabled').notNull().default(true),
    disabledReason: text('disabled_reason'),
    failingSince: epochMs('failing_since'),
    createdAt: epochMs('created_at').notNull(),
    deletedAt: epochMs('deleted_at'),
  },
  (t) => [index('webhooks_org_idx').on(t.orgId), index('webhooks_live_cursor_idx').on(t.orgId, t.cursorSeq).where(sql`enabled AND deleted_at IS NULL`)],
)

export const webhookDeliveries = pgTable(
  'webhook_deliveries',
  {
    id: text('id').primaryKey(),
    webhookId: text('webhook_id').notNull(),
    orgId: text('org_id').notNull(),
    eventId: text('event_id').notNull(),
    eventSeq: counter('event_seq').notNull(),
    eventType: text('event_type').notNull(),
    payload: text('payload').notNull(),
    status: text('status').notNull().default('pending'),
    attempts: integer('attempts').notNull().default(0),
    scheduleIndex: integer('schedule_index').notNull().default(0),
    nextAttemptAt: epochMs('next_attempt_at'),
    leaseUntil: epochMs('lease_until'),
    lastStatus: integer('last_status'),
    createdAt: epochMs('created_at').notNull(),
    updatedAt: epochMs('updated_at').notNull(),
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

export const webhookAttempts = pgTable(
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
    responseBody: text('response_body'),
    error: text('error'),
    latencyMs: integer('latency_ms').notNull(),
    createdAt: epochMs('created_at').notNull(),
  },
  (t) => [index('webhook_attempts_delivery_idx').on(t.deliveryId), index('webhook_attempts_created_idx').on(t.createdAt)],
)

export const slackConnections = pgTable(
  'slack_connections',
  {
    id: text('id').primaryKey(),
    orgId: text('org_id').notNull(),
    appId: text('app_id'),
    channel: text('channel').notNull(),
    botTokenSealed: text('bot_token_sealed').notNull(),
    signingSecretSealed: text('signing_secret_sealed').notNull(),
    eventTypes: text('event_types').notNull().default('[]'),
    cursorSeq: counter('cursor_seq').notNull().default(0),
    lastError: text('last_error'),
    /**
     * Which notifier drains the connection now, and until when (epoch ms): claimed, compare-and-set, right
     * before each Slack call, so two nodes overlapping at a dispatch handover never post the same event
     * (modules/chatops/notifier.ts). Null when nobody drains it.
     */
    drainOwner: text('drain_owner'),
    drainUntil: epochMs('drain_until'),
    createdAt: epochMs('created_at').notNull(),
    deletedAt: epochMs('deleted_at'),
  },
  (t) => [index('slack_connections_org_idx').on(t.orgId), index('slack_connections_live_cursor_idx').on(t.orgId, t.cursorSeq).where(sql`deleted_at IS NULL`)],
)

export const slackThreads = pgTable(
  'slack_threads',
  {
    connectionId: text('connection_id').notNull(),
    leadFeedbackId: text('lead_feedback_id').notNull(),
    channel: text('channel').notNull(),
    ts: text('ts').notNull(),
    status: text('status').notNull(),
    duplicateCount: integer('duplicate_count').notNull().default(0),
    updatedAt: epochMs('updated_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.connectionId, t.leadFeedbackId] }), index('slack_threads_lead_idx').on(t.leadFeedbackId)],
)

export const slackUsers = pgTable(
  'slack_users',
  {
    orgId: text('org_id').notNull(),
    slackTeamId: text('slack_team_id').notNull(),
    slackUserId: text('slack_user_id').notNull(),
    createdAt: epochMs('created_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.orgId, t.slackTeamId, t.slackUserId] })],
)

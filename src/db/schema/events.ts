/**
 * The event outbox: one row per status change, duplicate attachment, merge/unmerge and agent-run phase,
 * written in the same transaction as the change it records. Readers (pull feed, SSE, webhooks, Slack)
 * only ever read this table; nothing hooks into the write path.
 */
import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'

export const events = sqliteTable(
  'events',
  {
    id: text('id').primaryKey(),
    orgId: text('org_id').notNull(),
    /** Null for Org-wide events (e.g. a webhook endpoint disabled). */
    appId: text('app_id'),
    /** Rises by one per Org with every event, with no gaps: the pull feed's and the stream's cursor. */
    seq: integer('seq').notNull(),
    type: text('type').notNull(),
    /** JSON object: ids and states only, never report text. */
    data: text('data').notNull(),
    createdAt: integer('created_at').notNull(),
  },
  // Migration 0010 also adds events_feedback_idx on (org_id, json_extract(data, '$.feedbackId')) for a
  // report's status history. It is written in SQL only: drizzle-kit mangles expression indexes on SQLite.
  (t) => [uniqueIndex('events_org_seq_uq').on(t.orgId, t.seq), index('events_created_idx').on(t.createdAt)],
)

/**
 * The last seq handed out per Org. Kept apart from `events` so retention can delete old events without
 * the next seq ever going back (MAX(seq) of an emptied table would restart at 1).
 */
export const eventCounters = sqliteTable('event_counters', {
  orgId: text('org_id').primaryKey(),
  lastSeq: integer('last_seq').notNull(),
})

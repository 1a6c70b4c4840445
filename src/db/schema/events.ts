/**
 * The event outbox: one row per status change, duplicate attachment, merge/unmerge and agent-run phase,
 * written in the same transaction as the change it records. Readers (pull feed, SSE, webhooks, Slack)
 * only ever read this table; nothing hooks into the write path.
 */
import { sql } from 'drizzle-orm'
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
    /**
     * data.feedbackId, written by the outbox (migration 0013), so a report's status history is an index
     * lookup without parsing JSON on every insert. Null for Org-wide events and for events stored before.
     */
    feedbackId: text('feedback_id'),
  },
  // Events stored before 0013 (feedback_id null) stay findable through events_legacy_feedback_idx on
  // (org_id, json_extract(data, '$.feedbackId'), seq) WHERE feedback_id IS NULL. It is written in SQL only:
  // drizzle-kit mangles expression indexes on SQLite. No index on created_at: retention ranges on the id,
  // which starts with the creation second (migration 0015 dropped events_created_idx, one b-tree less per event).
  // Migration 0015 also adds the events_seq_floor trigger (SQL only): deleting an Org's newest event
  // records its seq in event_counters, so the next seq never goes back (lifecycle/outbox.ts).
  (t) => [
    uniqueIndex('events_org_seq_uq').on(t.orgId, t.seq),
    index('events_feedback_id_idx').on(t.orgId, t.feedbackId, t.seq).where(sql`feedback_id IS NOT NULL`),
  ],
)

/**
 * A floor under each Org's seq: the seq of the newest event a delete removed (the events_seq_floor
 * trigger writes it, migration 0015; before it, every append raised it). The next seq is one more than
 * the larger of this and the Org's newest event, so retention can delete old events without the next seq
 * ever going back (MAX(seq) of an emptied table would restart at 1). Appends never write it.
 */
export const eventCounters = sqliteTable('event_counters', {
  orgId: text('org_id').primaryKey(),
  lastSeq: integer('last_seq').notNull(),
})

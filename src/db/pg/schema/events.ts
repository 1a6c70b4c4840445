/** The event outbox and the per-Org seq floor: the PostgreSQL twin of src/db/schema/events.ts. */
import { sql } from 'drizzle-orm'
import { index, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core'
import { counter, epochMs } from './columns'

export const events = pgTable(
  'events',
  {
    id: text('id').primaryKey(),
    orgId: text('org_id').notNull(),
    appId: text('app_id'),
    seq: counter('seq').notNull(),
    type: text('type').notNull(),
    data: text('data').notNull(),
    createdAt: epochMs('created_at').notNull(),
    feedbackId: text('feedback_id'),
  },
  (t) => [
    uniqueIndex('events_org_seq_uq').on(t.orgId, t.seq),
    index('events_feedback_id_idx').on(t.orgId, t.feedbackId, t.seq).where(sql`feedback_id IS NOT NULL`),
  ],
)

/**
 * On PostgreSQL this row is the per-Org counter itself (DESIGN.md, cluster mode): an append bumps it in
 * the same transaction, and its row lock orders seqs by commit across writers.
 */
export const eventCounters = pgTable('event_counters', {
  orgId: text('org_id').primaryKey(),
  lastSeq: counter('last_seq').notNull(),
})

/** Abuse defence: the PostgreSQL twin of src/db/schema/abuse.ts. */
import { index, integer, pgTable, text } from 'drizzle-orm/pg-core'
import { epochMs } from './columns'

export const powSpent = pgTable(
  'pow_spent',
  {
    signature: text('signature').primaryKey(),
    expiresAt: epochMs('expires_at').notNull(),
  },
  (t) => [index('pow_spent_expires_idx').on(t.expiresAt)],
)

export const spamLearning = pgTable(
  'spam_learning',
  {
    appId: text('app_id').primaryKey(),
    factors: text('factors').notNull().default('{}'),
    notSpam: integer('not_spam').notNull().default(0),
    markedSpam: integer('marked_spam').notNull().default(0),
    updatedAt: epochMs('updated_at').notNull(),
  },
  // Cluster mode: each node reads the Apps with a decision since its last look (src/abuse/spam-share.ts).
  (t) => [index('spam_learning_updated_idx').on(t.updatedAt)],
)

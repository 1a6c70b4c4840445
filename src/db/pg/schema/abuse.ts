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
    /**
     * JSON array of the App's reports declared "not spam" by hand within the last hour, `{"id","at"}`, at most
     * 200: a cluster's nodes drop the spam texts these resemble from their `like_spam` ring, as the node that
     * took the decision does (src/abuse/spam-share.ts). Ids only (the texts are read from the reports).
     */
    cleared: text('cleared').notNull().default('[]'),
  },
  // Cluster mode: each node reads the Apps with a decision since its last look (src/abuse/spam-share.ts).
  (t) => [index('spam_learning_updated_idx').on(t.updatedAt)],
)

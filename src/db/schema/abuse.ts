/** Abuse defence (issue 27): spent proof-of-work solutions and each App's learned spam weights. */
import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core'

/**
 * Proof-of-work solutions already used (single use): the challenge's signature, kept until the challenge
 * expires (a later one is refused by its expiry anyway), then purged.
 */
export const powSpent = sqliteTable(
  'pow_spent',
  {
    signature: text('signature').primaryKey(),
    expiresAt: integer('expires_at').notNull(),
  },
  (t) => [index('pow_spent_expires_idx').on(t.expiresAt)],
)

/**
 * What an App's spam decisions taught its score (src/abuse/learn.ts): per-reason weight factors as JSON,
 * and how many reports were marked "not spam" and "spam" by hand.
 */
export const spamLearning = sqliteTable(
  'spam_learning',
  {
    appId: text('app_id').primaryKey(),
    factors: text('factors').notNull().default('{}'),
    notSpam: integer('not_spam').notNull().default(0),
    markedSpam: integer('marked_spam').notNull().default(0),
    updatedAt: integer('updated_at').notNull(),
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

/** Orgs, their `sk_` API keys and their Apps. Timestamps are epoch milliseconds. */
import { sql } from 'drizzle-orm'
import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'

export const orgs = sqliteTable('orgs', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  createdAt: integer('created_at').notNull(),
})

export const apiKeys = sqliteTable(
  'api_keys',
  {
    id: text('id').primaryKey(),
    orgId: text('org_id').notNull().references(() => orgs.id),
    name: text('name').notNull().default(''),
    /** SHA-256 of the plaintext key; the plaintext is shown once and never stored. */
    keyHash: text('key_hash').notNull(),
    /** First characters of the key, so an operator can tell keys apart in `key list`. */
    keyPrefix: text('key_prefix').notNull(),
    createdAt: integer('created_at').notNull(),
    revokedAt: integer('revoked_at'),
  },
  (t) => [uniqueIndex('api_keys_hash_uq').on(t.keyHash), index('api_keys_org_idx').on(t.orgId)],
)

export const apps = sqliteTable(
  'apps',
  {
    id: text('id').primaryKey(),
    orgId: text('org_id').notNull().references(() => orgs.id),
    slug: text('slug').notNull(),
    name: text('name').notNull(),
    description: text('description').notNull().default(''),
    publicKey: text('public_key').notNull(),
    publicSubmissionEnabled: integer('public_submission_enabled', { mode: 'boolean' }).notNull().default(true),
    processingMode: text('processing_mode').notNull().default('manual'),
    batchEnabled: integer('batch_enabled', { mode: 'boolean' }).notNull().default(false),
    batchWindowHours: integer('batch_window_hours').notNull().default(24),
    /** JSON array of origins. */
    allowedOrigins: text('allowed_origins').notNull().default('[]'),
    /** Proof of work asked of public-mode submissions: 'off' | 'normal' | 'high' (docs/widget.md "Abuse defence"). */
    proofOfWork: text('proof_of_work').notNull().default('off'),
    /** Whether reports classified as spam still emit events (webhooks, Slack, the feed); off by default. */
    spamEvents: integer('spam_events', { mode: 'boolean' }).notNull().default(false),
    /** Days a report stays in the spam folder before the spam sweep deletes it (src/abuse/spam-retention.ts); 0 keeps it. */
    spamRetentionDays: integer('spam_retention_days').notNull().default(30),
    /** Days a report is kept before the report retention deletes it (src/modules/reporters/retention.ts); 0 keeps it. */
    retentionDays: integer('retention_days').notNull().default(0),
    /** Session replay the widget records (issue 39): 'off' | 'masked' | 'inputs' (docs/api.md "Session replay"). */
    replayMode: text('replay_mode').notNull().default('off'),
    /** Seconds of the page the widget keeps in memory when replay is on (10..300). */
    replaySeconds: integer('replay_seconds').notNull().default(60),
    /** AES-256-GCM sealed signing secret (see core/crypto.ts). */
    signingSecretEnc: text('signing_secret_enc').notNull(),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
    deletedAt: integer('deleted_at'),
  },
  (t) => [
    uniqueIndex('apps_public_key_uq').on(t.publicKey),
    uniqueIndex('apps_org_slug_uq').on(t.orgId, t.slug).where(sql`deleted_at IS NULL`),
    index('apps_org_idx').on(t.orgId),
  ],
)

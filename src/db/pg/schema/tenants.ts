/** Orgs, their `sk_` API keys and their Apps: the PostgreSQL twin of src/db/schema/tenants.ts. */
import { sql } from 'drizzle-orm'
import { boolean, index, integer, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core'
import { epochMs } from './columns'

export const orgs = pgTable('orgs', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  createdAt: epochMs('created_at').notNull(),
})

export const apiKeys = pgTable(
  'api_keys',
  {
    id: text('id').primaryKey(),
    orgId: text('org_id').notNull().references(() => orgs.id),
    name: text('name').notNull().default(''),
    keyHash: text('key_hash').notNull(),
    keyPrefix: text('key_prefix').notNull(),
    createdAt: epochMs('created_at').notNull(),
    revokedAt: epochMs('revoked_at'),
  },
  (t) => [uniqueIndex('api_keys_hash_uq').on(t.keyHash), index('api_keys_org_idx').on(t.orgId)],
)

export const apps = pgTable(
  'apps',
  {
    id: text('id').primaryKey(),
    orgId: text('org_id').notNull().references(() => orgs.id),
    slug: text('slug').notNull(),
    name: text('name').notNull(),
    description: text('description').notNull().default(''),
    publicKey: text('public_key').notNull(),
    publicSubmissionEnabled: boolean('public_submission_enabled').notNull().default(true),
    processingMode: text('processing_mode').notNull().default('manual'),
    batchEnabled: boolean('batch_enabled').notNull().default(false),
    batchWindowHours: integer('batch_window_hours').notNull().default(24),
    allowedOrigins: text('allowed_origins').notNull().default('[]'),
    proofOfWork: text('proof_of_work').notNull().default('off'),
    spamEvents: boolean('spam_events').notNull().default(false),
    /** Days a report stays in the spam folder before the spam sweep deletes it (src/abuse/spam-retention.ts); 0 keeps it. */
    spamRetentionDays: integer('spam_retention_days').notNull().default(30),
    /** Days a report is kept before the report retention deletes it (src/modules/reporters/retention.ts); 0 keeps it. */
    retentionDays: integer('retention_days').notNull().default(0),
    /** Session replay the widget records (issue 39): 'off' | 'masked' | 'inputs' (docs/api.md "Session replay"). */
    replayMode: text('replay_mode').notNull().default('off'),
    /** Seconds of the page the widget keeps in memory when replay is on (10..300). */
    replaySeconds: integer('replay_seconds').notNull().default(60),
    signingSecretEnc: text('signing_secret_enc').notNull(),
    createdAt: epochMs('created_at').notNull(),
    updatedAt: epochMs('updated_at').notNull(),
    deletedAt: epochMs('deleted_at'),
  },
  (t) => [
    uniqueIndex('apps_public_key_uq').on(t.publicKey),
    uniqueIndex('apps_org_slug_uq').on(t.orgId, t.slug).where(sql`deleted_at IS NULL`),
    index('apps_org_idx').on(t.orgId),
  ],
)

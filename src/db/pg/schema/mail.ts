/** Mail to reporters: the PostgreSQL twin of src/db/schema/mail.ts. */
import { sql } from 'drizzle-orm'
import { boolean, index, integer, pgTable, primaryKey, text } from 'drizzle-orm/pg-core'
import { epochMs } from './columns'

export const appSmtp = pgTable('app_smtp', {
  appId: text('app_id').primaryKey(),
  orgId: text('org_id').notNull(),
  host: text('host').notNull(),
  port: integer('port').notNull(),
  tlsMode: text('tls_mode').notNull(),
  username: text('username'),
  passwordSealed: text('password_sealed'),
  fromAddress: text('from_address').notNull(),
  updatedAt: epochMs('updated_at').notNull(),
})

export const mailOutbox = pgTable(
  'mail_outbox',
  {
    feedbackId: text('feedback_id').primaryKey(),
    orgId: text('org_id').notNull(),
    appId: text('app_id').notNull(),
    emailSealed: text('email_sealed'),
    emailHash: text('email_hash').notNull(),
    emailMasked: text('email_masked').notNull(),
    state: text('state').notNull(),
    attempts: integer('attempts').notNull().default(0),
    nextAttemptAt: epochMs('next_attempt_at').notNull(),
    leaseUntil: epochMs('lease_until'),
    lastError: text('last_error'),
    createdAt: epochMs('created_at').notNull(),
    settledAt: epochMs('settled_at'),
    /**
     * The lead the report was resolved with (its own id for a lead): one mail per address per lead's
     * resolution, so a reporter who opted in on a lead and on its duplicate is told once. Null on rows
     * queued before this column.
     */
    leadId: text('lead_id'),
    /** A public-mode report: mailed only once its address is confirmed (mail_confirmations). */
    needsConfirm: boolean('needs_confirm').notNull().default(false),
  },
  (t) => [
    index('mail_outbox_due_idx').on(t.nextAttemptAt).where(sql`state = 'pending'`),
    index('mail_outbox_app_idx').on(t.appId, t.feedbackId),
    index('mail_outbox_lead_idx').on(t.leadId, t.emailHash),
  ],
)

export const mailUnsubscribes = pgTable(
  'mail_unsubscribes',
  {
    appId: text('app_id').notNull(),
    emailHash: text('email_hash').notNull(),
    createdAt: epochMs('created_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.appId, t.emailHash] })],
)

/** Double opt-in for self-declared addresses: the PostgreSQL twin of src/db/schema/mail.ts. */
export const mailConfirmations = pgTable(
  'mail_confirmations',
  {
    id: text('id').primaryKey(),
    appId: text('app_id').notNull(),
    orgId: text('org_id').notNull(),
    emailHash: text('email_hash').notNull(),
    emailSealed: text('email_sealed'),
    state: text('state').notNull(),
    nonce: text('nonce'),
    attempts: integer('attempts').notNull().default(0),
    nextAttemptAt: epochMs('next_attempt_at').notNull(),
    leaseUntil: epochMs('lease_until'),
    lastError: text('last_error'),
    createdAt: epochMs('created_at').notNull(),
    sentAt: epochMs('sent_at'),
    confirmedAt: epochMs('confirmed_at'),
  },
  (t) => [
    index('mail_confirmations_due_idx').on(t.nextAttemptAt).where(sql`state = 'pending'`),
    index('mail_confirmations_app_sent_idx').on(t.appId, t.sentAt),
    index('mail_confirmations_hash_sent_idx').on(t.emailHash, t.sentAt),
  ],
)

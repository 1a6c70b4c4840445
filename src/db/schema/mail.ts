/**
 * Telling reporters that their report was fixed (docs/email.md): each App's SMTP settings, the mail
 * outbox (one row per report, so one mail per resolution whatever retries, restarts or nodes do) and the
 * addresses that unsubscribed from an App's mails.
 */
import { sql } from 'drizzle-orm'
import { index, integer, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core'

export const appSmtp = sqliteTable('app_smtp', {
  appId: text('app_id').primaryKey(),
  orgId: text('org_id').notNull(),
  host: text('host').notNull(),
  port: integer('port').notNull(),
  /** none | starttls | tls */
  tlsMode: text('tls_mode').notNull(),
  username: text('username'),
  /** Sealed with the master key; never returned by the API. */
  passwordSealed: text('password_sealed'),
  fromAddress: text('from_address').notNull(),
  updatedAt: integer('updated_at').notNull(),
})

export const mailOutbox = sqliteTable(
  'mail_outbox',
  {
    /** One row per report: the primary key is what makes a second mail impossible. */
    feedbackId: text('feedback_id').primaryKey(),
    orgId: text('org_id').notNull(),
    appId: text('app_id').notNull(),
    /** Sealed recipient; cleared once the row is settled (sent, unsubscribed, given up). */
    emailSealed: text('email_sealed'),
    /** HMAC of the lower-cased address (unsubscribe lookups without keeping the address). */
    emailHash: text('email_hash').notNull(),
    /** j***@example.com: what the dashboard shows. */
    emailMasked: text('email_masked').notNull(),
    /** pending | sent | failed (given up) | unsubscribed | no_smtp | same_address (another report of the lead carries the mail) */
    state: text('state').notNull(),
    attempts: integer('attempts').notNull().default(0),
    nextAttemptAt: integer('next_attempt_at').notNull(),
    leaseUntil: integer('lease_until'),
    lastError: text('last_error'),
    createdAt: integer('created_at').notNull(),
    settledAt: integer('settled_at'),
    /**
     * The lead the report was resolved with (its own id for a lead): one mail per address per lead's
     * resolution, so a reporter who opted in on a lead and on its duplicate is told once. Null on rows
     * queued before this column.
     */
    leadId: text('lead_id'),
    /**
     * A public-mode report: its address is self-declared by an anonymous submitter, so it gets this mail
     * only once confirmed (mail_confirmations); the row waits (next_attempt_at) until then.
     */
    needsConfirm: integer('needs_confirm', { mode: 'boolean' }).notNull().default(false),
  },
  (t) => [
    index('mail_outbox_due_idx').on(t.nextAttemptAt).where(sql`state = 'pending'`),
    index('mail_outbox_app_idx').on(t.appId, t.feedbackId),
    index('mail_outbox_lead_idx').on(t.leadId, t.emailHash),
  ],
)

export const mailUnsubscribes = sqliteTable(
  'mail_unsubscribes',
  {
    appId: text('app_id').notNull(),
    emailHash: text('email_hash').notNull(),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.appId, t.emailHash] })],
)

/**
 * Double opt-in for self-declared addresses (docs/email.md "Confirming a public-mode address"): one row per
 * App and normalized address. `pending` (the confirmation mail is to be sent), `sent` (waiting for the
 * click; the nonce is the single-use part of the link), `confirmed`, or ended without a mail (`failed`,
 * `limited`, `no_smtp`, `unsubscribed`).
 */
export const mailConfirmations = sqliteTable(
  'mail_confirmations',
  {
    /** `<appId>.<emailHash>`: one key column, as `fixloop rekey` walks sealed columns by it. */
    id: text('id').primaryKey(),
    appId: text('app_id').notNull(),
    orgId: text('org_id').notNull(),
    /** HMAC of the normalized address. */
    emailHash: text('email_hash').notNull(),
    /** Sealed address, only until the confirmation mail is settled. */
    emailSealed: text('email_sealed'),
    state: text('state').notNull(),
    /** Random hex in the link; cleared when used (single use). */
    nonce: text('nonce'),
    attempts: integer('attempts').notNull().default(0),
    nextAttemptAt: integer('next_attempt_at').notNull(),
    leaseUntil: integer('lease_until'),
    lastError: text('last_error'),
    createdAt: integer('created_at').notNull(),
    sentAt: integer('sent_at'),
    confirmedAt: integer('confirmed_at'),
  },
  (t) => [
    index('mail_confirmations_due_idx').on(t.nextAttemptAt).where(sql`state = 'pending'`),
    // The rate limits: confirmation mails sent per App and per address in the last window.
    index('mail_confirmations_app_sent_idx').on(t.appId, t.sentAt),
    index('mail_confirmations_hash_sent_idx').on(t.emailHash, t.sentAt),
  ],
)

/**
 * Mail to reporters: each App's SMTP settings, the mail outbox, unsubscribes, and a reporter's own reports.
 *
 * The port: the SQLite side (src/db/sqlite/mail.ts) and the PostgreSQL side (src/db/pg/mail.ts), both held
 * to test/repos/mail.test.ts. Each change is one transaction.
 */
import type { Clock } from '../../core/clock'
import type { Storage } from '../../db/storage'
import type { AuditEntry } from '../audit/entry'
import type { ListRow } from '../feedback/repo'
import { createSqliteMailRepo } from '../../db/sqlite/mail'
import { createPgMailRepo } from '../../db/pg/mail'

export const TLS_MODES = ['none', 'starttls', 'tls'] as const
export type TlsMode = (typeof TLS_MODES)[number]

export interface SmtpRow {
  app_id: string
  org_id: string
  host: string
  port: number
  tls_mode: TlsMode
  username: string | null
  password_sealed: string | null
  from_address: string
  updated_at: number
}

/**
 * What the outbox ends in: sent, given up (failed), the address unsubscribed, the App had no SMTP settings,
 * or `same_address`: another report of the same lead already carries the mail to that address (one mail
 * per address per resolution of a lead; never sent).
 */
export const SETTLED_STATES = ['sent', 'failed', 'unsubscribed', 'no_smtp', 'same_address'] as const
export type SettledState = (typeof SETTLED_STATES)[number]
export type OutboxState = 'pending' | SettledState

export interface OutboxRow {
  feedback_id: string
  org_id: string
  app_id: string
  email_sealed: string | null
  email_hash: string
  email_masked: string
  state: OutboxState
  attempts: number
  next_attempt_at: number
  lease_until: number | null
  last_error: string | null
  created_at: number
  settled_at: number | null
  /** The lead the report was resolved with (its own id for a lead); null on rows from before. */
  lead_id: string | null
}

/** A resolved report whose reporter asked to be told and is not queued yet. */
export interface DueReport {
  id: string
  org_id: string
  app_id: string
  notify_email_sealed: string
  /** Its lead (its own id for a lead). */
  lead_id: string
}

export interface NewOutboxRow {
  feedbackId: string
  orgId: string
  appId: string
  emailSealed: string
  emailHash: string
  emailMasked: string
  /** The report's lead; null: not matched against other rows (an address that could not be read). */
  leadId: string | null
  now: number
}

export interface MailRepo {
  smtp(appId: string): Promise<SmtpRow | null>
  putSmtp(row: SmtpRow, audit: AuditEntry[]): Promise<void>
  /** False (nothing written, nothing audited) when the App had none. */
  deleteSmtp(appId: string, audit: AuditEntry[]): Promise<boolean>
  /** Resolved, opted-in reports not queued yet (oldest first). */
  dueReports(limit: number): Promise<DueReport[]>
  /**
   * Queues the report's one mail and clears its sealed address on the report, in one transaction. A row
   * already there (another node, a retry) is left as it is: false. When another report of the same lead
   * already has a mail to the same address (same `emailHash`: the keyed hash of the lower-cased address)
   * that is not itself `same_address`, the row is settled `same_address` at once (no mail): false.
   */
  enqueue(row: NewOutboxRow): Promise<boolean>
  /** Leases up to `limit` due pending rows (next attempt passed, no live lease) for `leaseMs`; one claimer wins each row. */
  claim(now: number, leaseMs: number, limit: number): Promise<OutboxRow[]>
  /** Ends a row (its address dropped); false when it was no longer pending. */
  settle(feedbackId: string, state: SettledState, error: string | null, now: number): Promise<boolean>
  /** A failed attempt: the lease released, the next attempt at `nextAt`. */
  retryLater(feedbackId: string, nextAt: number, error: string): Promise<void>
  isUnsubscribed(appId: string, emailHash: string): Promise<boolean>
  /** Records the unsubscribe and ends the address's pending mails of that App; false when it was there already. */
  unsubscribe(appId: string, emailHash: string, now: number): Promise<boolean>
  /** The report's mail (tenant-scoped), for the dashboard. */
  outboxOf(orgId: string, feedbackId: string): Promise<OutboxRow | null>
  /** One private-mode user's reports of one App, newest first, `limit + 1` rows (is there another page?). */
  reportsOf(appId: string, sub: string, cursor: string | undefined, limit: number): Promise<ListRow[]>
  /** The App's name (any state) for the mail; null when there is no such App. */
  appName(appId: string): Promise<string | null>
  latestPrUrl(feedbackId: string): Promise<string | null>
  /** The report's stored text and redactions (null redactions: not sanitized yet, so never to be quoted). */
  reportText(feedbackId: string): Promise<{ text: string; redactions: string | null } | null>
}

export function createMailRepo(storage: Storage, clock: Clock): MailRepo {
  return storage.dialect === 'sqlite' ? createSqliteMailRepo(storage, clock) : createPgMailRepo(storage, clock)
}

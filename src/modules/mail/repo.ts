/**
 * Mail to reporters: each App's SMTP settings, the mail outbox, unsubscribes, and a reporter's own reports.
 *
 * The port: the SQLite side (src/db/sqlite/mail.ts) and the PostgreSQL side (src/db/pg/mail.ts), both held
 * to test/repos/mail.test.ts. Each change is one transaction.
 */
import type { AuditEntry } from '../audit/entry'
import type { ListRow } from '../feedback/repo'

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
 * per address per resolution of a lead; never sent), or `unconfirmed`: a public-mode address that was
 * never confirmed (double opt-in, docs/email.md; never sent).
 */
export const SETTLED_STATES = ['sent', 'failed', 'unsubscribed', 'no_smtp', 'same_address', 'unconfirmed'] as const
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
  /** A public-mode report: sent only once its address is confirmed (SQLite gives 0/1). */
  needs_confirm: boolean | number
}

/** A resolved report whose reporter asked to be told and is not queued yet. */
export interface DueReport {
  id: string
  org_id: string
  app_id: string
  notify_email_sealed: string
  /** Its lead (its own id for a lead). */
  lead_id: string
  submitted_mode: string
}

/** A public-mode opt-in whose address is still to be confirmed (not asked yet). */
export interface DueAsk {
  id: string
  org_id: string
  app_id: string
  notify_email_sealed: string
}

/** States of a confirmation: to send, waiting for the click, confirmed, or ended without a mail. */
export type ConfirmationState = 'pending' | 'sent' | 'confirmed' | 'failed' | 'limited' | 'no_smtp' | 'unsubscribed'

export interface ConfirmationRow {
  id: string
  app_id: string
  org_id: string
  email_hash: string
  email_sealed: string | null
  state: ConfirmationState
  nonce: string | null
  attempts: number
  next_attempt_at: number
  lease_until: number | null
  last_error: string | null
  created_at: number
  sent_at: number | null
  confirmed_at: number | null
}

export interface NewAsk {
  feedbackId: string
  appId: string
  orgId: string
  emailHash: string
  emailSealed: string
  /** The single-use part of the link (random hex). */
  nonce: string
  now: number
  /** An earlier confirmation mail sent before this is expired: the address may be asked again. */
  reaskBefore: number
}

/** The one key column of mail_confirmations. */
export const confirmationId = (appId: string, emailHash: string) => `${appId}.${emailHash}`

export interface NewOutboxRow {
  feedbackId: string
  orgId: string
  appId: string
  emailSealed: string
  emailHash: string
  emailMasked: string
  /** The report's lead; null: not matched against other rows (an address that could not be read). */
  leadId: string | null
  /** Public mode: held until the address is confirmed (next attempt at `waitUntil` unless confirmed). */
  needsConfirm: boolean
  waitUntil: number
  now: number
}

export interface ReportFacts {
  text: string
  redactions: string | null
  theme: string | null
  submitted_mode: string
  created_at: number
}

/** A claimed row's id (an outbox row's feedback id, a confirmation's id) and the lease its claim set. */
export interface LeaseHeld {
  id: string
  leaseUntil: number
}

/** What a claim leaves alone: Apps (and confirmation addresses, by keyed hash) whose mail this node is sending. */
/** What a claim leaves alone: rows of Apps and addresses held, and of Orgs using their share of the lanes. */
export interface BusyKeys {
  apps: readonly string[]
  addresses?: readonly string[]
  orgs?: readonly string[]
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
  /**
   * Leases up to `limit` due pending rows (next attempt passed, no live lease) for `leaseMs`; one claimer
   * wins each row. Rows of the Apps in `busy.apps` are left: this node is still sending those Apps' mail.
   */
  claim(now: number, leaseMs: number, limit: number, busy?: BusyKeys): Promise<OutboxRow[]>
  /**
   * Gives back claims that were never started (a stop, a lease too short to start an attempt in, their
   * App's server failing just before): the lease released and the claim's attempt not counted, only where
   * the lease is still the one claimed; not due again before `notBefore` (0: at once).
   */
  releaseClaims(claims: readonly LeaseHeld[], notBefore?: number): Promise<void>
  /** The same for confirmations. */
  releaseConfirmationClaims(claims: readonly LeaseHeld[], notBefore?: number): Promise<void>
  /** Ends a row (its address dropped); false when it was no longer pending. */
  settle(feedbackId: string, state: SettledState, error: string | null, now: number): Promise<boolean>
  /** A failed attempt: the lease released, the next attempt at `nextAt`. */
  retryLater(feedbackId: string, nextAt: number, error: string): Promise<void>
  /** Any of the hashes (the normalized one, the one before normalization) unsubscribed from the App. */
  isUnsubscribed(appId: string, emailHashes: string[]): Promise<boolean>
  /** Public-mode opt-ins not asked to confirm yet (oldest first). */
  dueAsks(limit: number): Promise<DueAsk[]>
  /**
   * Marks the report asked and makes sure the address has a confirmation (one per App and address): a new
   * one is `pending`; an ended one (failed, limited, no_smtp) or a sent one older than `reaskBefore` is
   * asked again with the new nonce; a pending, confirmed, unsubscribed or recently sent one is left alone.
   */
  ask(a: NewAsk): Promise<void>
  /** Leases due pending confirmations (like `claim`; also leaving the addresses in `busy.addresses`). */
  claimConfirmations(now: number, leaseMs: number, limit: number, busy?: BusyKeys): Promise<ConfirmationRow[]>
  /** Confirmation mails sent by the App since `appSince`, and to the address (any App) since `addressSince`: the rate limits. */
  confirmationsSent(appId: string, emailHash: string, appSince: number, addressSince: number): Promise<{ byApp: number; toAddress: number }>
  /** The confirmation mail went out: `sent`, its address dropped. */
  confirmationSent(id: string, now: number): Promise<void>
  /** Ends a pending confirmation without a mail (failed, limited, no_smtp, unsubscribed), its address dropped. */
  settleConfirmation(id: string, state: ConfirmationState, error: string | null, now: number): Promise<void>
  retryConfirmation(id: string, nextAt: number, error: string): Promise<void>
  /**
   * Uses a confirmation link: `sent`, the nonce matches, sent at or after `sentAfter` -> `confirmed` (the
   * nonce cleared: single use) and the address's mails of that App waiting for it released (due now).
   * False when the link is used, expired or unknown.
   */
  confirm(appId: string, emailHash: string, nonce: string, now: number, sentAfter: number): Promise<boolean>
  /** Whether the App's address is confirmed (a confirmed address stays confirmed). */
  isConfirmed(appId: string, emailHash: string): Promise<boolean>
  /** Records the unsubscribe and ends the address's pending mails of that App; false when it was there already. */
  unsubscribe(appId: string, emailHash: string, now: number): Promise<boolean>
  /** The report's mail (tenant-scoped), for the dashboard. */
  outboxOf(orgId: string, feedbackId: string): Promise<OutboxRow | null>
  /** One private-mode user's reports of one App, newest first, `limit + 1` rows (is there another page?). */
  reportsOf(appId: string, sub: string, cursor: string | undefined, limit: number): Promise<ListRow[]>
  /** Apps with SMTP settings (id and name, at most `limit`, by id): the start-up warning about FIXLOOP_PUBLIC_URL. */
  appsWithSmtp(limit: number): Promise<{ id: string; name: string }[]>
  /** The App's name (any state) for the mail; null when there is no such App. */
  appName(appId: string): Promise<string | null>
  latestPrUrl(feedbackId: string): Promise<string | null>
  /**
   * What the mail may say about the report: its stored text and redactions (null redactions: not sanitized
   * yet, so never to be quoted), theme, mode (a public report's text is never quoted) and creation time.
   */
  reportFacts(feedbackId: string): Promise<ReportFacts | null>
}


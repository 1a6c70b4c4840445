/**
 * The reporter-mail transactions written once for both dialects (src/db/tx-body.ts): a "fixed" mail
 * queued (one per address per resolution of a lead), a confirmation asked, a confirmation used (the mails
 * that waited for it released), an address unsubscribed (its pending mails settled). Each dialect's
 * repository (src/db/sqlite/mail.ts, src/db/pg/mail.ts) runs them in a transaction; the claims stay per
 * dialect (PostgreSQL's take rows with SKIP LOCKED on the database's clock, SQLite's look before they lock).
 */
import { confirmationId, type NewAsk, type NewOutboxRow } from '../../modules/mail/repo'
import { get, lockingRead, run, sql, type Body } from '../tx-body'

// The lead's row lock (PostgreSQL) makes two queueings for one lead (two nodes while the dispatch role
// moves) take turns; SQLite's one writer does the same.
const LOCK_LEAD = lockingRead('SELECT 1 AS locked FROM feedback WHERE id = ?')
// mail_outbox_lead_idx: the lead's rows to this address.
const LEAD_MAILED = sql(`SELECT 1 AS mailed FROM mail_outbox WHERE lead_id = ? AND email_hash = ? AND app_id = ? AND state <> 'same_address' LIMIT 1`)
const IS_CONFIRMED = sql(`SELECT 1 AS confirmed FROM mail_confirmations WHERE id = ? AND state = 'confirmed'`)
const ENQUEUE = sql(
  `INSERT INTO mail_outbox (feedback_id, org_id, app_id, email_sealed, email_hash, email_masked, state, attempts, next_attempt_at, created_at, lead_id, needs_confirm)
   VALUES (?, ?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?, ?) ON CONFLICT (feedback_id) DO NOTHING`,
)
const ENQUEUE_COVERED = sql(
  `INSERT INTO mail_outbox (feedback_id, org_id, app_id, email_sealed, email_hash, email_masked, state, attempts, next_attempt_at, created_at, settled_at, lead_id, needs_confirm)
   VALUES (?1, ?2, ?3, NULL, ?4, ?5, 'same_address', 0, ?6, ?6, ?6, ?7, ?8) ON CONFLICT (feedback_id) DO NOTHING`,
)
const CLEAR_ADDRESS = sql('UPDATE feedback SET notify_email_sealed = NULL WHERE id = ?')
// One confirmation per App and address; asked again only once the earlier one ended or its link expired.
const ASK = sql(
  `INSERT INTO mail_confirmations (id, app_id, org_id, email_hash, email_sealed, state, nonce, attempts, next_attempt_at, created_at)
   VALUES (?1, ?2, ?3, ?4, ?5, 'pending', ?6, 0, ?7, ?7)
   ON CONFLICT (id) DO UPDATE SET state = 'pending', email_sealed = excluded.email_sealed, nonce = excluded.nonce, attempts = 0,
     next_attempt_at = excluded.next_attempt_at, lease_until = NULL, last_error = NULL, created_at = excluded.created_at, sent_at = NULL
   WHERE mail_confirmations.state IN ('failed', 'limited', 'no_smtp') OR (mail_confirmations.state = 'sent' AND mail_confirmations.sent_at < ?8)`,
)
const MARK_ASKED = sql('UPDATE feedback SET notify_asked_at = ? WHERE id = ?')
const USE_CONFIRM = sql(`UPDATE mail_confirmations SET state = 'confirmed', confirmed_at = ?1, nonce = NULL WHERE id = ?2 AND state = 'sent' AND nonce = ?3 AND sent_at >= ?4`)
// `needs_confirm` is an integer on SQLite, a boolean on PostgreSQL.
const RELEASE_WAITING = sql(
  `UPDATE mail_outbox SET next_attempt_at = ?1 WHERE app_id = ?2 AND email_hash = ?3 AND state = 'pending' AND needs_confirm = 1 AND next_attempt_at > ?1`,
  `UPDATE mail_outbox SET next_attempt_at = ?1 WHERE app_id = ?2 AND email_hash = ?3 AND state = 'pending' AND needs_confirm AND next_attempt_at > ?1`,
)
const UNSUBSCRIBE = sql('INSERT INTO mail_unsubscribes (app_id, email_hash, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING')
const UNSUBSCRIBE_PENDING = sql(`UPDATE mail_outbox SET state = 'unsubscribed', settled_at = ?, email_sealed = NULL, lease_until = NULL WHERE app_id = ? AND email_hash = ? AND state = 'pending'`)

/** Queues a "fixed" mail for a resolved report and clears its sealed address; false when nothing new was queued. */
export function* enqueueMail(r: NewOutboxRow): Body<boolean> {
  // One mail per address per resolution of a lead: a duplicate's reporter who is the lead's (or another
  // duplicate's) is told by that mail. Read in the write transaction, so never two.
  let covered = false
  if (r.leadId !== null) {
    yield* get(LOCK_LEAD, r.leadId)
    covered = (yield* get(LEAD_MAILED, r.leadId, r.emailHash, r.appId)) !== undefined
  }
  // A public-mode address not confirmed yet: the row waits for the click (released by `confirm`).
  const waits = r.needsConfirm && (yield* get(IS_CONFIRMED, confirmationId(r.appId, r.emailHash))) === undefined
  const added = covered
    ? (yield* run(ENQUEUE_COVERED, r.feedbackId, r.orgId, r.appId, r.emailHash, r.emailMasked, r.now, r.leadId, r.needsConfirm), false)
    : (yield* run(ENQUEUE, r.feedbackId, r.orgId, r.appId, r.emailSealed, r.emailHash, r.emailMasked, waits ? r.waitUntil : r.now, r.now, r.leadId, r.needsConfirm)) > 0
  yield* run(CLEAR_ADDRESS, r.feedbackId)
  return added
}

/** Asks the reporter to confirm the address (unless a confirmation is still live), and marks the report asked. */
export function* askConfirmation(a: NewAsk): Body<void> {
  yield* run(ASK, confirmationId(a.appId, a.emailHash), a.appId, a.orgId, a.emailHash, a.emailSealed, a.nonce, a.now, a.reaskBefore)
  yield* run(MARK_ASKED, a.now, a.feedbackId)
}

/** Uses a sent confirmation's link; the mails that waited for it become due now. False when the link does not hold. */
export function* useConfirmation(appId: string, hash: string, nonce: string, now: number, sentAfter: number): Body<boolean> {
  if ((yield* run(USE_CONFIRM, now, confirmationId(appId, hash), nonce, sentAfter)) === 0) return false
  yield* run(RELEASE_WAITING, now, appId, hash)
  return true
}

/** Unsubscribes the address from the App's mail and settles its pending mails; false when it already was. */
export function* unsubscribe(appId: string, hash: string, now: number): Body<boolean> {
  const added = (yield* run(UNSUBSCRIBE, appId, hash, now)) > 0
  yield* run(UNSUBSCRIBE_PENDING, now, appId, hash)
  return added
}

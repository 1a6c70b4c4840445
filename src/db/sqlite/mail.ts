/** SQLite side of modules/mail/repo.ts: each change one IMMEDIATE transaction. */
import type { Clock } from '../../core/clock'
import type { ListRow } from '../../modules/feedback/repo'
import { confirmationId, type ConfirmationRow, type DueAsk, type DueReport, type MailRepo, type OutboxRow, type ReportFacts, type SmtpRow } from '../../modules/mail/repo'
import { sqliteAudited } from './audit-writer'
import { LIST_COLUMNS } from './feedback'
import type { SqliteStorage } from './storage'

export function createSqliteMailRepo({ sqlite }: SqliteStorage, clock: Clock): MailRepo {
  const q = (text: string) => sqlite.query(text)
  const s = {
    smtp: q('SELECT * FROM app_smtp WHERE app_id = ?'),
    putSmtp: q(`INSERT INTO app_smtp (app_id, org_id, host, port, tls_mode, username, password_sealed, from_address, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (app_id) DO UPDATE SET host = excluded.host, port = excluded.port, tls_mode = excluded.tls_mode, username = excluded.username,
                  password_sealed = excluded.password_sealed, from_address = excluded.from_address, updated_at = excluded.updated_at`),
    deleteSmtp: q('DELETE FROM app_smtp WHERE app_id = ?'),
    due: q(`SELECT id, org_id, app_id, notify_email_sealed, COALESCE(duplicate_of_id, id) AS lead_id, submitted_mode FROM feedback WHERE notify_email_sealed IS NOT NULL AND status = 'resolved' ORDER BY id LIMIT ?`),
    enqueue: q(`INSERT INTO mail_outbox (feedback_id, org_id, app_id, email_sealed, email_hash, email_masked, state, attempts, next_attempt_at, created_at, lead_id, needs_confirm)
                VALUES (?, ?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?, ?) ON CONFLICT (feedback_id) DO NOTHING`),
    // mail_outbox_lead_idx: the lead's rows to this address.
    leadMailed: q(`SELECT 1 FROM mail_outbox WHERE lead_id = ? AND email_hash = ? AND app_id = ? AND state <> 'same_address' LIMIT 1`),
    enqueueCovered: q(`INSERT INTO mail_outbox (feedback_id, org_id, app_id, email_sealed, email_hash, email_masked, state, attempts, next_attempt_at, created_at, settled_at, lead_id, needs_confirm)
                VALUES (?, ?, ?, NULL, ?, ?, 'same_address', 0, ?, ?, ?, ?, ?) ON CONFLICT (feedback_id) DO NOTHING`),
    clearAddress: q('UPDATE feedback SET notify_email_sealed = NULL WHERE id = ?'),
    claim: q(`UPDATE mail_outbox SET lease_until = ?1, attempts = attempts + 1
              WHERE feedback_id IN (SELECT feedback_id FROM mail_outbox WHERE state = 'pending' AND next_attempt_at <= ?2 AND (lease_until IS NULL OR lease_until <= ?2)
                                    ORDER BY next_attempt_at LIMIT ?3)
              RETURNING *`),
    anyDue: q(`SELECT 1 FROM mail_outbox WHERE state = 'pending' AND next_attempt_at <= ?1 AND (lease_until IS NULL OR lease_until <= ?1) LIMIT 1`),
    settle: q(`UPDATE mail_outbox SET state = ?, last_error = ?, settled_at = ?, email_sealed = NULL, lease_until = NULL WHERE feedback_id = ? AND state = 'pending'`),
    retry: q(`UPDATE mail_outbox SET next_attempt_at = ?, last_error = ?, lease_until = NULL WHERE feedback_id = ? AND state = 'pending'`),
    isUnsub: q('SELECT 1 FROM mail_unsubscribes WHERE app_id = ?1 AND email_hash IN (SELECT value FROM json_each(?2)) LIMIT 1'),
    dueAsks: q(`SELECT id, org_id, app_id, notify_email_sealed FROM feedback
                WHERE notify_email_sealed IS NOT NULL AND notify_asked_at IS NULL AND submitted_mode = 'public' ORDER BY id LIMIT ?`),
    markAsked: q('UPDATE feedback SET notify_asked_at = ? WHERE id = ?'),
    // One confirmation per App and address; asked again only once the earlier one ended or its link expired.
    ask: q(`INSERT INTO mail_confirmations (id, app_id, org_id, email_hash, email_sealed, state, nonce, attempts, next_attempt_at, created_at)
            VALUES (?1, ?2, ?3, ?4, ?5, 'pending', ?6, 0, ?7, ?7)
            ON CONFLICT (id) DO UPDATE SET state = 'pending', email_sealed = excluded.email_sealed, nonce = excluded.nonce, attempts = 0,
              next_attempt_at = excluded.next_attempt_at, lease_until = NULL, last_error = NULL, created_at = excluded.created_at, sent_at = NULL
            WHERE mail_confirmations.state IN ('failed', 'limited', 'no_smtp') OR (mail_confirmations.state = 'sent' AND mail_confirmations.sent_at < ?8)`),
    anyConfirmDue: q(`SELECT 1 FROM mail_confirmations WHERE state = 'pending' AND next_attempt_at <= ?1 AND (lease_until IS NULL OR lease_until <= ?1) LIMIT 1`),
    claimConfirm: q(`UPDATE mail_confirmations SET lease_until = ?1, attempts = attempts + 1
              WHERE id IN (SELECT id FROM mail_confirmations WHERE state = 'pending' AND next_attempt_at <= ?2 AND (lease_until IS NULL OR lease_until <= ?2)
                           ORDER BY next_attempt_at LIMIT ?3)
              RETURNING *`),
    sentByApp: q('SELECT COUNT(*) AS n FROM mail_confirmations WHERE app_id = ? AND sent_at >= ?'),
    sentToAddress: q('SELECT COUNT(*) AS n FROM mail_confirmations WHERE email_hash = ? AND sent_at >= ?'),
    confirmSent: q(`UPDATE mail_confirmations SET state = 'sent', sent_at = ?, email_sealed = NULL, lease_until = NULL, last_error = NULL WHERE id = ? AND state = 'pending'`),
    settleConfirm: q(`UPDATE mail_confirmations SET state = ?, last_error = ?, email_sealed = NULL, nonce = NULL, lease_until = NULL, next_attempt_at = ? WHERE id = ? AND state = 'pending'`),
    retryConfirm: q(`UPDATE mail_confirmations SET next_attempt_at = ?, last_error = ?, lease_until = NULL WHERE id = ? AND state = 'pending'`),
    useConfirm: q(`UPDATE mail_confirmations SET state = 'confirmed', confirmed_at = ?1, nonce = NULL WHERE id = ?2 AND state = 'sent' AND nonce = ?3 AND sent_at >= ?4`),
    releaseWaiting: q(`UPDATE mail_outbox SET next_attempt_at = ?1 WHERE app_id = ?2 AND email_hash = ?3 AND state = 'pending' AND needs_confirm = 1 AND next_attempt_at > ?1`),
    isConfirmed: q(`SELECT 1 FROM mail_confirmations WHERE id = ? AND state = 'confirmed'`),
    unsub: q('INSERT INTO mail_unsubscribes (app_id, email_hash, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING'),
    unsubPending: q(`UPDATE mail_outbox SET state = 'unsubscribed', settled_at = ?, email_sealed = NULL, lease_until = NULL WHERE app_id = ? AND email_hash = ? AND state = 'pending'`),
    outboxOf: q('SELECT * FROM mail_outbox WHERE org_id = ? AND feedback_id = ?'),
    reports: q(`SELECT ${LIST_COLUMNS} FROM feedback WHERE app_id = ?1 AND external_user_id = ?2 AND submitted_mode = 'private' ORDER BY id DESC LIMIT ?3`),
    reportsAfter: q(`SELECT ${LIST_COLUMNS} FROM feedback WHERE app_id = ?1 AND external_user_id = ?2 AND submitted_mode = 'private' AND id < ?4 ORDER BY id DESC LIMIT ?3`),
    appName: q('SELECT name FROM apps WHERE id = ?'),
    appsWithSmtp: q('SELECT a.id, a.name FROM app_smtp s JOIN apps a ON a.id = s.app_id ORDER BY a.id LIMIT ?'),
    prUrl: q('SELECT merge_request_url FROM feedback WHERE id = ?'),
    reportFacts: q('SELECT text, redactions, theme, submitted_mode, created_at FROM feedback WHERE id = ?'),
  }
  const audited = sqliteAudited(sqlite, clock)
  return {
    smtp: async (appId) => s.smtp.get(appId) as SmtpRow | null,
    putSmtp: async (r, audit) =>
      audited(audit, () => void s.putSmtp.run(r.app_id, r.org_id, r.host, r.port, r.tls_mode, r.username, r.password_sealed, r.from_address, r.updated_at)),
    deleteSmtp: async (appId, audit) => audited(audit, () => s.deleteSmtp.run(appId).changes > 0),
    dueReports: async (limit) => s.due.all(limit) as DueReport[],
    enqueue: async (r) =>
      sqlite
        .transaction(() => {
          // One mail per address per resolution of a lead: a duplicate's reporter who is the lead's (or
          // another duplicate's) is told by that mail. Read in the write transaction, so never two.
          const covered = r.leadId !== null && s.leadMailed.get(r.leadId, r.emailHash, r.appId) !== null
          // A public-mode address not confirmed yet: the row waits for the click (released by `confirm`).
          const waits = r.needsConfirm && s.isConfirmed.get(confirmationId(r.appId, r.emailHash)) === null
          const added = covered
            ? (s.enqueueCovered.run(r.feedbackId, r.orgId, r.appId, r.emailHash, r.emailMasked, r.now, r.now, r.now, r.leadId, r.needsConfirm ? 1 : 0), false)
            : s.enqueue.run(r.feedbackId, r.orgId, r.appId, r.emailSealed, r.emailHash, r.emailMasked, waits ? r.waitUntil : r.now, r.now, r.leadId, r.needsConfirm ? 1 : 0).changes > 0
          s.clearAddress.run(r.feedbackId)
          return added
        })
        .immediate(),
    // A read first: the write lock (IMMEDIATE) is taken only when a row is due, never on an idle wake-up,
    // so the mailer costs the intake's single writer nothing while there is no mail to send.
    claim: async (now, leaseMs, limit) =>
      s.anyDue.get(now) === null ? [] : sqlite.transaction(() => s.claim.all(now + leaseMs, now, limit) as OutboxRow[]).immediate(),
    settle: async (id, state, error, now) => s.settle.run(state, error, now, id).changes > 0,
    retryLater: async (id, nextAt, error) => void s.retry.run(nextAt, error, id),
    isUnsubscribed: async (appId, hashes) => !!s.isUnsub.get(appId, JSON.stringify(hashes)),
    dueAsks: async (limit) => s.dueAsks.all(limit) as DueAsk[],
    ask: async (a) =>
      sqlite
        .transaction(() => {
          s.ask.run(confirmationId(a.appId, a.emailHash), a.appId, a.orgId, a.emailHash, a.emailSealed, a.nonce, a.now, a.reaskBefore)
          s.markAsked.run(a.now, a.feedbackId)
        })
        .immediate(),
    claimConfirmations: async (now, leaseMs, limit) =>
      s.anyConfirmDue.get(now) === null ? [] : sqlite.transaction(() => s.claimConfirm.all(now + leaseMs, now, limit) as ConfirmationRow[]).immediate(),
    confirmationsSent: async (appId, hash, appSince, addressSince) => ({
      byApp: (s.sentByApp.get(appId, appSince) as { n: number }).n,
      toAddress: (s.sentToAddress.get(hash, addressSince) as { n: number }).n,
    }),
    confirmationSent: async (id, now) => void s.confirmSent.run(now, id),
    settleConfirmation: async (id, state, error, now) => void s.settleConfirm.run(state, error, now, id),
    retryConfirmation: async (id, nextAt, error) => void s.retryConfirm.run(nextAt, error, id),
    confirm: async (appId, hash, nonce, now, sentAfter) =>
      sqlite
        .transaction(() => {
          if (s.useConfirm.run(now, confirmationId(appId, hash), nonce, sentAfter).changes === 0) return false
          s.releaseWaiting.run(now, appId, hash)
          return true
        })
        .immediate(),
    isConfirmed: async (appId, hash) => s.isConfirmed.get(confirmationId(appId, hash)) !== null,
    unsubscribe: async (appId, hash, now) =>
      sqlite
        .transaction(() => {
          const added = s.unsub.run(appId, hash, now).changes > 0
          s.unsubPending.run(now, appId, hash)
          return added
        })
        .immediate(),
    outboxOf: async (orgId, id) => s.outboxOf.get(orgId, id) as OutboxRow | null,
    reportsOf: async (appId, sub, cursor, limit) =>
      (cursor ? s.reportsAfter.all(appId, sub, limit + 1, cursor) : s.reports.all(appId, sub, limit + 1)) as ListRow[],
    appsWithSmtp: async (limit) => s.appsWithSmtp.all(limit) as { id: string; name: string }[],
    appName: async (appId) => (s.appName.get(appId) as { name: string } | null)?.name ?? null,
    latestPrUrl: async (id) => (s.prUrl.get(id) as { merge_request_url: string | null } | null)?.merge_request_url ?? null,
    reportFacts: async (id) => s.reportFacts.get(id) as ReportFacts | null,
  }
}

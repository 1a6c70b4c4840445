/** SQLite side of modules/mail/repo.ts: each change one IMMEDIATE transaction; queueing, asking, confirming and unsubscribing are written once (src/db/bodies/mail.ts). */
import type { Clock } from '../../core/clock'
import type { ListRow } from '../../modules/feedback/repo'
import { confirmationId, type ConfirmationRow, type DueAsk, type DueReport, type MailRepo, type OutboxRow, type ReportFacts, type SmtpRow } from '../../modules/mail/repo'
import { sqliteAudited } from './audit-writer'
import { LIST_COLUMNS } from './feedback'
import type { SqliteStorage } from './storage'
import { sqliteBodies } from './tx-body'
import { askConfirmation, enqueueMail, unsubscribe, useConfirmation } from '../bodies/mail'

export function createSqliteMailRepo({ sqlite }: SqliteStorage, clock: Clock): MailRepo {
  const q = (text: string) => sqlite.query(text)
  const s = {
    smtp: q('SELECT * FROM app_smtp WHERE app_id = ?'),
    putSmtp: q(`INSERT INTO app_smtp (app_id, org_id, host, port, tls_mode, username, password_sealed, from_address, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (app_id) DO UPDATE SET host = excluded.host, port = excluded.port, tls_mode = excluded.tls_mode, username = excluded.username,
                  password_sealed = excluded.password_sealed, from_address = excluded.from_address, updated_at = excluded.updated_at`),
    deleteSmtp: q('DELETE FROM app_smtp WHERE app_id = ?'),
    due: q(`SELECT id, org_id, app_id, notify_email_sealed, COALESCE(duplicate_of_id, id) AS lead_id, submitted_mode FROM feedback WHERE notify_email_sealed IS NOT NULL AND status = 'resolved' ORDER BY id LIMIT ?`),
    claim: q(`UPDATE mail_outbox SET lease_until = ?1, attempts = attempts + 1
              WHERE feedback_id IN (SELECT feedback_id FROM mail_outbox WHERE state = 'pending' AND next_attempt_at <= ?2 AND (lease_until IS NULL OR lease_until <= ?2)
                                      AND app_id NOT IN (SELECT value FROM json_each(?4)) AND org_id NOT IN (SELECT value FROM json_each(?5))
                                    ORDER BY next_attempt_at LIMIT ?3)
              RETURNING *`),
    release: q(`UPDATE mail_outbox SET lease_until = NULL, attempts = attempts - 1, next_attempt_at = MAX(next_attempt_at, ?2)
                WHERE feedback_id IN (SELECT json_extract(value, '$.id') FROM json_each(?1) WHERE json_extract(value, '$.leaseUntil') = mail_outbox.lease_until) AND state = 'pending'`),
    releaseConfirm: q(`UPDATE mail_confirmations SET lease_until = NULL, attempts = attempts - 1, next_attempt_at = MAX(next_attempt_at, ?2)
                WHERE id IN (SELECT json_extract(value, '$.id') FROM json_each(?1) WHERE json_extract(value, '$.leaseUntil') = mail_confirmations.lease_until) AND state = 'pending'`),
    anyDue: q(`SELECT 1 FROM mail_outbox WHERE state = 'pending' AND next_attempt_at <= ?1 AND (lease_until IS NULL OR lease_until <= ?1) LIMIT 1`),
    settle: q(`UPDATE mail_outbox SET state = ?, last_error = ?, settled_at = ?, email_sealed = NULL, lease_until = NULL WHERE feedback_id = ? AND state = 'pending'`),
    retry: q(`UPDATE mail_outbox SET next_attempt_at = ?, last_error = ?, lease_until = NULL WHERE feedback_id = ? AND state = 'pending'`),
    isUnsub: q('SELECT 1 FROM mail_unsubscribes WHERE app_id = ?1 AND email_hash IN (SELECT value FROM json_each(?2)) LIMIT 1'),
    dueAsks: q(`SELECT id, org_id, app_id, notify_email_sealed FROM feedback
                WHERE notify_email_sealed IS NOT NULL AND notify_asked_at IS NULL AND submitted_mode = 'public' ORDER BY id LIMIT ?`),
    anyConfirmDue: q(`SELECT 1 FROM mail_confirmations WHERE state = 'pending' AND next_attempt_at <= ?1 AND (lease_until IS NULL OR lease_until <= ?1) LIMIT 1`),
    claimConfirm: q(`UPDATE mail_confirmations SET lease_until = ?1, attempts = attempts + 1
              WHERE id IN (SELECT id FROM mail_confirmations WHERE state = 'pending' AND next_attempt_at <= ?2 AND (lease_until IS NULL OR lease_until <= ?2)
                             AND app_id NOT IN (SELECT value FROM json_each(?4)) AND email_hash NOT IN (SELECT value FROM json_each(?5))
                             AND org_id NOT IN (SELECT value FROM json_each(?6))
                           ORDER BY next_attempt_at LIMIT ?3)
              RETURNING *`),
    sentByApp: q('SELECT COUNT(*) AS n FROM mail_confirmations WHERE app_id = ? AND sent_at >= ?'),
    sentToAddress: q('SELECT COUNT(*) AS n FROM mail_confirmations WHERE email_hash = ? AND sent_at >= ?'),
    confirmSent: q(`UPDATE mail_confirmations SET state = 'sent', sent_at = ?, email_sealed = NULL, lease_until = NULL, last_error = NULL WHERE id = ? AND state = 'pending'`),
    settleConfirm: q(`UPDATE mail_confirmations SET state = ?, last_error = ?, email_sealed = NULL, nonce = NULL, lease_until = NULL, next_attempt_at = ? WHERE id = ? AND state = 'pending'`),
    retryConfirm: q(`UPDATE mail_confirmations SET next_attempt_at = ?, last_error = ?, lease_until = NULL WHERE id = ? AND state = 'pending'`),
    isConfirmed: q(`SELECT 1 FROM mail_confirmations WHERE id = ? AND state = 'confirmed'`),
    outboxOf: q('SELECT * FROM mail_outbox WHERE org_id = ? AND feedback_id = ?'),
    reports: q(`SELECT ${LIST_COLUMNS} FROM feedback WHERE app_id = ?1 AND external_user_id = ?2 AND submitted_mode = 'private' ORDER BY id DESC LIMIT ?3`),
    reportsAfter: q(`SELECT ${LIST_COLUMNS} FROM feedback WHERE app_id = ?1 AND external_user_id = ?2 AND submitted_mode = 'private' AND id < ?4 ORDER BY id DESC LIMIT ?3`),
    appName: q('SELECT name FROM apps WHERE id = ?'),
    appsWithSmtp: q('SELECT a.id, a.name FROM app_smtp s JOIN apps a ON a.id = s.app_id ORDER BY a.id LIMIT ?'),
    prUrl: q('SELECT merge_request_url FROM feedback WHERE id = ?'),
    reportFacts: q('SELECT text, redactions, theme, submitted_mode, created_at FROM feedback WHERE id = ?'),
  }
  const audited = sqliteAudited(sqlite, clock)
  const bodies = sqliteBodies(sqlite)
  return {
    smtp: async (appId) => s.smtp.get(appId) as SmtpRow | null,
    putSmtp: async (r, audit) =>
      audited(audit, () => void s.putSmtp.run(r.app_id, r.org_id, r.host, r.port, r.tls_mode, r.username, r.password_sealed, r.from_address, r.updated_at)),
    deleteSmtp: async (appId, audit) => audited(audit, () => s.deleteSmtp.run(appId).changes > 0),
    dueReports: async (limit) => s.due.all(limit) as DueReport[],
    enqueue: async (r) => bodies.transaction(enqueueMail(r)),
    // A read first: the write lock (IMMEDIATE) is taken only when a row is due, never on an idle wake-up,
    // so the mailer costs the intake's single writer nothing while there is no mail to send.
    claim: async (now, leaseMs, limit, busy) =>
      s.anyDue.get(now) === null
        ? []
        : sqlite.transaction(() => s.claim.all(now + leaseMs, now, limit, JSON.stringify(busy?.apps ?? []), JSON.stringify(busy?.orgs ?? [])) as OutboxRow[]).immediate(),
    releaseClaims: async (claims, notBefore = 0) => void (claims.length > 0 && s.release.run(JSON.stringify(claims), notBefore)),
    releaseConfirmationClaims: async (claims, notBefore = 0) => void (claims.length > 0 && s.releaseConfirm.run(JSON.stringify(claims), notBefore)),
    settle: async (id, state, error, now) => s.settle.run(state, error, now, id).changes > 0,
    retryLater: async (id, nextAt, error) => void s.retry.run(nextAt, error, id),
    isUnsubscribed: async (appId, hashes) => !!s.isUnsub.get(appId, JSON.stringify(hashes)),
    dueAsks: async (limit) => s.dueAsks.all(limit) as DueAsk[],
    ask: async (a) => bodies.transaction(askConfirmation(a)),
    claimConfirmations: async (now, leaseMs, limit, busy) =>
      s.anyConfirmDue.get(now) === null
        ? []
        : sqlite
            .transaction(() => s.claimConfirm.all(now + leaseMs, now, limit, JSON.stringify(busy?.apps ?? []), JSON.stringify(busy?.addresses ?? []), JSON.stringify(busy?.orgs ?? [])) as ConfirmationRow[])
            .immediate(),
    confirmationsSent: async (appId, hash, appSince, addressSince) => ({
      byApp: (s.sentByApp.get(appId, appSince) as { n: number }).n,
      toAddress: (s.sentToAddress.get(hash, addressSince) as { n: number }).n,
    }),
    confirmationSent: async (id, now) => void s.confirmSent.run(now, id),
    settleConfirmation: async (id, state, error, now) => void s.settleConfirm.run(state, error, now, id),
    retryConfirmation: async (id, nextAt, error) => void s.retryConfirm.run(nextAt, error, id),
    confirm: async (appId, hash, nonce, now, sentAfter) => bodies.transaction(useConfirmation(appId, hash, nonce, now, sentAfter)),
    isConfirmed: async (appId, hash) => s.isConfirmed.get(confirmationId(appId, hash)) !== null,
    unsubscribe: async (appId, hash, now) => bodies.transaction(unsubscribe(appId, hash, now)),
    outboxOf: async (orgId, id) => s.outboxOf.get(orgId, id) as OutboxRow | null,
    reportsOf: async (appId, sub, cursor, limit) =>
      (cursor ? s.reportsAfter.all(appId, sub, limit + 1, cursor) : s.reports.all(appId, sub, limit + 1)) as ListRow[],
    appsWithSmtp: async (limit) => s.appsWithSmtp.all(limit) as { id: string; name: string }[],
    appName: async (appId) => (s.appName.get(appId) as { name: string } | null)?.name ?? null,
    latestPrUrl: async (id) => (s.prUrl.get(id) as { merge_request_url: string | null } | null)?.merge_request_url ?? null,
    reportFacts: async (id) => s.reportFacts.get(id) as ReportFacts | null,
  }
}

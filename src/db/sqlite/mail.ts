/** SQLite side of modules/mail/repo.ts: each change one IMMEDIATE transaction. */
import type { Clock } from '../../core/clock'
import type { ListRow } from '../../modules/feedback/repo'
import type { DueReport, MailRepo, OutboxRow, SmtpRow } from '../../modules/mail/repo'
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
    due: q(`SELECT id, org_id, app_id, notify_email_sealed, COALESCE(duplicate_of_id, id) AS lead_id FROM feedback WHERE notify_email_sealed IS NOT NULL AND status = 'resolved' ORDER BY id LIMIT ?`),
    enqueue: q(`INSERT INTO mail_outbox (feedback_id, org_id, app_id, email_sealed, email_hash, email_masked, state, attempts, next_attempt_at, created_at, lead_id)
                VALUES (?, ?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?) ON CONFLICT (feedback_id) DO NOTHING`),
    // mail_outbox_lead_idx: the lead's rows to this address.
    leadMailed: q(`SELECT 1 FROM mail_outbox WHERE lead_id = ? AND email_hash = ? AND app_id = ? AND state <> 'same_address' LIMIT 1`),
    enqueueCovered: q(`INSERT INTO mail_outbox (feedback_id, org_id, app_id, email_sealed, email_hash, email_masked, state, attempts, next_attempt_at, created_at, settled_at, lead_id)
                VALUES (?, ?, ?, NULL, ?, ?, 'same_address', 0, ?, ?, ?, ?) ON CONFLICT (feedback_id) DO NOTHING`),
    clearAddress: q('UPDATE feedback SET notify_email_sealed = NULL WHERE id = ?'),
    claim: q(`UPDATE mail_outbox SET lease_until = ?1, attempts = attempts + 1
              WHERE feedback_id IN (SELECT feedback_id FROM mail_outbox WHERE state = 'pending' AND next_attempt_at <= ?2 AND (lease_until IS NULL OR lease_until <= ?2)
                                    ORDER BY next_attempt_at LIMIT ?3)
              RETURNING *`),
    anyDue: q(`SELECT 1 FROM mail_outbox WHERE state = 'pending' AND next_attempt_at <= ?1 AND (lease_until IS NULL OR lease_until <= ?1) LIMIT 1`),
    settle: q(`UPDATE mail_outbox SET state = ?, last_error = ?, settled_at = ?, email_sealed = NULL, lease_until = NULL WHERE feedback_id = ? AND state = 'pending'`),
    retry: q(`UPDATE mail_outbox SET next_attempt_at = ?, last_error = ?, lease_until = NULL WHERE feedback_id = ? AND state = 'pending'`),
    isUnsub: q('SELECT 1 FROM mail_unsubscribes WHERE app_id = ? AND email_hash = ?'),
    unsub: q('INSERT INTO mail_unsubscribes (app_id, email_hash, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING'),
    unsubPending: q(`UPDATE mail_outbox SET state = 'unsubscribed', settled_at = ?, email_sealed = NULL, lease_until = NULL WHERE app_id = ? AND email_hash = ? AND state = 'pending'`),
    outboxOf: q('SELECT * FROM mail_outbox WHERE org_id = ? AND feedback_id = ?'),
    reports: q(`SELECT ${LIST_COLUMNS} FROM feedback WHERE app_id = ?1 AND external_user_id = ?2 AND submitted_mode = 'private' ORDER BY id DESC LIMIT ?3`),
    reportsAfter: q(`SELECT ${LIST_COLUMNS} FROM feedback WHERE app_id = ?1 AND external_user_id = ?2 AND submitted_mode = 'private' AND id < ?4 ORDER BY id DESC LIMIT ?3`),
    appName: q('SELECT name FROM apps WHERE id = ?'),
    prUrl: q('SELECT merge_request_url FROM feedback WHERE id = ?'),
    reportText: q('SELECT text, redactions FROM feedback WHERE id = ?'),
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
          const added = covered
            ? (s.enqueueCovered.run(r.feedbackId, r.orgId, r.appId, r.emailHash, r.emailMasked, r.now, r.now, r.now, r.leadId), false)
            : s.enqueue.run(r.feedbackId, r.orgId, r.appId, r.emailSealed, r.emailHash, r.emailMasked, r.now, r.now, r.leadId).changes > 0
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
    isUnsubscribed: async (appId, hash) => !!s.isUnsub.get(appId, hash),
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
    appName: async (appId) => (s.appName.get(appId) as { name: string } | null)?.name ?? null,
    latestPrUrl: async (id) => (s.prUrl.get(id) as { merge_request_url: string | null } | null)?.merge_request_url ?? null,
    reportText: async (id) => s.reportText.get(id) as { text: string; redactions: string | null } | null,
  }
}

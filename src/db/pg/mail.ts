/** PostgreSQL side of modules/mail/repo.ts. */
import type { Clock } from '../../core/clock'
import type { ListRow } from '../../modules/feedback/repo'
import { confirmationId, type ConfirmationRow, type DueAsk, type DueReport, type MailRepo, type OutboxRow, type ReportFacts, type SmtpRow } from '../../modules/mail/repo'
import { pgAudited } from './audit-writer'
import { LIST_COLUMNS } from './feedback'
import { exec, many, one, type PgStorage } from './storage'
import { nowOr } from './db-clock'

export function createPgMailRepo(storage: PgStorage, clock: Clock): MailRepo {
  const { pool } = storage
  /** The caller's now only for a store whose clock a test drives; NULL (the database's clock) otherwise. */
  const callerNow = (now: number): number | null => (storage.callerClock ? now : null)
  const audited = pgAudited(storage, clock)
  return {
    smtp: async (appId) => (await one<SmtpRow>(pool, 'SELECT * FROM app_smtp WHERE app_id = $1', [appId])) ?? null,
    putSmtp: (r, audit) =>
      audited(audit, async (c) => {
        await exec(
          c,
          `INSERT INTO app_smtp (app_id, org_id, host, port, tls_mode, username, password_sealed, from_address, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
           ON CONFLICT (app_id) DO UPDATE SET host = excluded.host, port = excluded.port, tls_mode = excluded.tls_mode, username = excluded.username,
             password_sealed = excluded.password_sealed, from_address = excluded.from_address, updated_at = excluded.updated_at`,
          [r.app_id, r.org_id, r.host, r.port, r.tls_mode, r.username, r.password_sealed, r.from_address, r.updated_at],
        )
      }),
    deleteSmtp: (appId, audit) => audited(audit, async (c) => (await exec(c, 'DELETE FROM app_smtp WHERE app_id = $1', [appId])) > 0),
    dueReports: (limit) =>
      many<DueReport>(pool, `SELECT id, org_id, app_id, notify_email_sealed, COALESCE(duplicate_of_id, id) AS lead_id, submitted_mode FROM feedback WHERE notify_email_sealed IS NOT NULL AND status = 'resolved' ORDER BY id LIMIT $1`, [limit]),
    enqueue: (r) =>
      storage.tx(async (c) => {
        // One mail per address per resolution of a lead (as src/db/sqlite/mail.ts). The lead's row lock
        // makes two queueings for one lead (two nodes while the dispatch role moves) take turns.
        let covered = false
        if (r.leadId !== null) {
          await exec(c, 'SELECT 1 FROM feedback WHERE id = $1 FOR UPDATE', [r.leadId])
          covered = (await one(c, `SELECT 1 FROM mail_outbox WHERE lead_id = $1 AND email_hash = $2 AND app_id = $3 AND state <> 'same_address' LIMIT 1`, [r.leadId, r.emailHash, r.appId])) !== undefined
        }
        // A public-mode address not confirmed yet: the row waits for the click (released by `confirm`).
        const waits =
          r.needsConfirm && (await one(c, `SELECT 1 FROM mail_confirmations WHERE id = $1 AND state = 'confirmed'`, [confirmationId(r.appId, r.emailHash)])) === undefined
        const added = covered
          ? (await exec(
              c,
              `INSERT INTO mail_outbox (feedback_id, org_id, app_id, email_sealed, email_hash, email_masked, state, attempts, next_attempt_at, created_at, settled_at, lead_id, needs_confirm)
               VALUES ($1, $2, $3, NULL, $4, $5, 'same_address', 0, $6, $6, $6, $7, $8) ON CONFLICT (feedback_id) DO NOTHING`,
              [r.feedbackId, r.orgId, r.appId, r.emailHash, r.emailMasked, r.now, r.leadId, r.needsConfirm],
            ), false)
          : (await exec(
              c,
              `INSERT INTO mail_outbox (feedback_id, org_id, app_id, email_sealed, email_hash, email_masked, state, attempts, next_attempt_at, created_at, lead_id, needs_confirm)
               VALUES ($1, $2, $3, $4, $5, $6, 'pending', 0, $7, $8, $9, $10) ON CONFLICT (feedback_id) DO NOTHING`,
              [r.feedbackId, r.orgId, r.appId, r.emailSealed, r.emailHash, r.emailMasked, waits ? r.waitUntil : r.now, r.now, r.leadId, r.needsConfirm],
            )) > 0
        await exec(c, 'UPDATE feedback SET notify_email_sealed = NULL WHERE id = $1', [r.feedbackId])
        return added
      }),
    // SKIP LOCKED: two nodes claiming at once take different rows, never the same one.
    // The database's clock decides what is due and until when a lease holds (db-clock.ts), never the node's.
    claim: (now, leaseMs, limit) =>
      many<OutboxRow>(
        pool,
        `WITH clock AS (SELECT ${nowOr('$1')} AS now)
         UPDATE mail_outbox SET lease_until = (SELECT now FROM clock) + $2::bigint, attempts = attempts + 1
         WHERE feedback_id IN (SELECT feedback_id FROM mail_outbox WHERE state = 'pending' AND next_attempt_at <= (SELECT now FROM clock)
                                 AND (lease_until IS NULL OR lease_until <= (SELECT now FROM clock))
                               ORDER BY next_attempt_at LIMIT $3 FOR UPDATE SKIP LOCKED)
         RETURNING *`,
        [callerNow(now), leaseMs, limit],
      ),
    settle: async (id, state, error, now) =>
      (await exec(
        pool,
        `UPDATE mail_outbox SET state = $1, last_error = $2, settled_at = $3, email_sealed = NULL, lease_until = NULL WHERE feedback_id = $4 AND state = 'pending'`,
        [state, error, now, id],
      )) > 0,
    retryLater: async (id, nextAt, error) =>
      void (await exec(pool, `UPDATE mail_outbox SET next_attempt_at = $1, last_error = $2, lease_until = NULL WHERE feedback_id = $3 AND state = 'pending'`, [nextAt, error, id])),
    isUnsubscribed: async (appId, hashes) => !!(await one(pool, 'SELECT 1 FROM mail_unsubscribes WHERE app_id = $1 AND email_hash = ANY($2::text[]) LIMIT 1', [appId, hashes])),
    dueAsks: (limit) =>
      many<DueAsk>(
        pool,
        `SELECT id, org_id, app_id, notify_email_sealed FROM feedback WHERE notify_email_sealed IS NOT NULL AND notify_asked_at IS NULL AND submitted_mode = 'public' ORDER BY id LIMIT $1`,
        [limit],
      ),
    ask: (a) =>
      storage.tx(async (c) => {
        // One confirmation per App and address; asked again only once the earlier one ended or its link expired.
        await exec(
          c,
          `INSERT INTO mail_confirmations (id, app_id, org_id, email_hash, email_sealed, state, nonce, attempts, next_attempt_at, created_at)
           VALUES ($1, $2, $3, $4, $5, 'pending', $6, 0, $7, $7)
           ON CONFLICT (id) DO UPDATE SET state = 'pending', email_sealed = excluded.email_sealed, nonce = excluded.nonce, attempts = 0,
             next_attempt_at = excluded.next_attempt_at, lease_until = NULL, last_error = NULL, created_at = excluded.created_at, sent_at = NULL
           WHERE mail_confirmations.state IN ('failed', 'limited', 'no_smtp') OR (mail_confirmations.state = 'sent' AND mail_confirmations.sent_at < $8)`,
          [confirmationId(a.appId, a.emailHash), a.appId, a.orgId, a.emailHash, a.emailSealed, a.nonce, a.now, a.reaskBefore],
        )
        await exec(c, 'UPDATE feedback SET notify_asked_at = $1 WHERE id = $2', [a.now, a.feedbackId])
      }),
    claimConfirmations: (now, leaseMs, limit) =>
      many<ConfirmationRow>(
        pool,
        `WITH clock AS (SELECT ${nowOr('$1')} AS now)
         UPDATE mail_confirmations SET lease_until = (SELECT now FROM clock) + $2::bigint, attempts = attempts + 1
         WHERE id IN (SELECT id FROM mail_confirmations WHERE state = 'pending' AND next_attempt_at <= (SELECT now FROM clock)
                        AND (lease_until IS NULL OR lease_until <= (SELECT now FROM clock))
                      ORDER BY next_attempt_at LIMIT $3 FOR UPDATE SKIP LOCKED)
         RETURNING *`,
        [callerNow(now), leaseMs, limit],
      ),
    confirmationsSent: async (appId, hash, appSince, addressSince) => {
      const r = await one<{ by_app: number; to_address: number }>(
        pool,
        `SELECT (SELECT COUNT(*)::int FROM mail_confirmations WHERE app_id = $1 AND sent_at >= $3) AS by_app,
                (SELECT COUNT(*)::int FROM mail_confirmations WHERE email_hash = $2 AND sent_at >= $4) AS to_address`,
        [appId, hash, appSince, addressSince],
      )
      return { byApp: Number(r!.by_app), toAddress: Number(r!.to_address) }
    },
    confirmationSent: async (id, now) =>
      void (await exec(pool, `UPDATE mail_confirmations SET state = 'sent', sent_at = $1, email_sealed = NULL, lease_until = NULL, last_error = NULL WHERE id = $2 AND state = 'pending'`, [now, id])),
    settleConfirmation: async (id, state, error, now) =>
      void (await exec(
        pool,
        `UPDATE mail_confirmations SET state = $1, last_error = $2, email_sealed = NULL, nonce = NULL, lease_until = NULL, next_attempt_at = $3 WHERE id = $4 AND state = 'pending'`,
        [state, error, now, id],
      )),
    retryConfirmation: async (id, nextAt, error) =>
      void (await exec(pool, `UPDATE mail_confirmations SET next_attempt_at = $1, last_error = $2, lease_until = NULL WHERE id = $3 AND state = 'pending'`, [nextAt, error, id])),
    confirm: (appId, hash, nonce, now, sentAfter) =>
      storage.tx(async (c) => {
        const used = await exec(
          c,
          `UPDATE mail_confirmations SET state = 'confirmed', confirmed_at = $1, nonce = NULL WHERE id = $2 AND state = 'sent' AND nonce = $3 AND sent_at >= $4`,
          [now, confirmationId(appId, hash), nonce, sentAfter],
        )
        if (used === 0) return false
        await exec(
          c,
          `UPDATE mail_outbox SET next_attempt_at = $1 WHERE app_id = $2 AND email_hash = $3 AND state = 'pending' AND needs_confirm AND next_attempt_at > $1`,
          [now, appId, hash],
        )
        return true
      }),
    isConfirmed: async (appId, hash) => (await one(pool, `SELECT 1 FROM mail_confirmations WHERE id = $1 AND state = 'confirmed'`, [confirmationId(appId, hash)])) !== undefined,
    unsubscribe: (appId, hash, now) =>
      storage.tx(async (c) => {
        const added = (await exec(c, 'INSERT INTO mail_unsubscribes (app_id, email_hash, created_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING', [appId, hash, now])) > 0
        await exec(
          c,
          `UPDATE mail_outbox SET state = 'unsubscribed', settled_at = $1, email_sealed = NULL, lease_until = NULL WHERE app_id = $2 AND email_hash = $3 AND state = 'pending'`,
          [now, appId, hash],
        )
        return added
      }),
    outboxOf: async (orgId, id) => (await one<OutboxRow>(pool, 'SELECT * FROM mail_outbox WHERE org_id = $1 AND feedback_id = $2', [orgId, id])) ?? null,
    reportsOf: (appId, sub, cursor, limit) =>
      cursor
        ? many<ListRow>(
            pool,
            `SELECT ${LIST_COLUMNS} FROM feedback WHERE app_id = $1 AND external_user_id = $2 AND submitted_mode = 'private' AND id < $4 ORDER BY id DESC LIMIT $3`,
            [appId, sub, limit + 1, cursor],
          )
        : many<ListRow>(pool, `SELECT ${LIST_COLUMNS} FROM feedback WHERE app_id = $1 AND external_user_id = $2 AND submitted_mode = 'private' ORDER BY id DESC LIMIT $3`, [
            appId,
            sub,
            limit + 1,
          ]),
    appsWithSmtp: (limit) => many<{ id: string; name: string }>(pool, 'SELECT a.id, a.name FROM app_smtp s JOIN apps a ON a.id = s.app_id ORDER BY a.id LIMIT $1', [limit]),
    appName: async (appId) => (await one<{ name: string }>(pool, 'SELECT name FROM apps WHERE id = $1', [appId]))?.name ?? null,
    latestPrUrl: async (id) => (await one<{ merge_request_url: string | null }>(pool, 'SELECT merge_request_url FROM feedback WHERE id = $1', [id]))?.merge_request_url ?? null,
    reportFacts: async (id) => (await one<ReportFacts>(pool, 'SELECT text, redactions, theme, submitted_mode, created_at FROM feedback WHERE id = $1', [id])) ?? null,
  }
}

/** PostgreSQL side of modules/mail/repo.ts; queueing, asking, confirming and unsubscribing are written once (src/db/bodies/mail.ts). */
import type { Clock } from '../../core/clock'
import type { ListRow } from '../../modules/feedback/repo'
import { confirmationId, type ConfirmationRow, type DueAsk, type LeaseHeld, type DueReport, type MailRepo, type OutboxRow, type ReportFacts, type SmtpRow } from '../../modules/mail/repo'
import { pgAudited } from './audit-writer'
import { LIST_COLUMNS } from './feedback'
import { exec, many, one, type PgStorage } from './storage'
import { nowOr } from './db-clock'
import { pgRunner } from './tx-body'
import { askConfirmation, enqueueMail, unsubscribe, useConfirmation } from '../bodies/mail'

export function createPgMailRepo(storage: PgStorage, clock: Clock): MailRepo {
  const { pool } = storage
  /** The caller's now only for a store whose clock a test drives; NULL (the database's clock) otherwise. */
  const callerNow = (now: number): number | null => (storage.callerClock ? now : null)
  const audited = pgAudited(storage, clock)
  const bodies = pgRunner(storage)
  /** Claims given back (MailRepo.releaseClaims): only where the lease is still the one claimed. */
  async function release(table: 'mail_outbox' | 'mail_confirmations', key: 'feedback_id' | 'id', claims: readonly LeaseHeld[], notBefore: number): Promise<void> {
    if (claims.length === 0) return
    await exec(
      pool,
      `UPDATE ${table} m SET lease_until = NULL, attempts = m.attempts - 1, next_attempt_at = GREATEST(m.next_attempt_at, $3::bigint)
       FROM unnest($1::text[], $2::bigint[]) AS c(id, lease)
       WHERE m.${key} = c.id AND m.lease_until = c.lease AND m.state = 'pending'`,
      [claims.map((c) => c.id), claims.map((c) => c.leaseUntil), notBefore],
    )
  }
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
    enqueue: (r) => bodies.transaction(enqueueMail(r)),
    // SKIP LOCKED: two nodes claiming at once take different rows, never the same one.
    // The database's clock decides what is due and until when a lease holds (db-clock.ts), never the node's.
    claim: (now, leaseMs, limit, busy) =>
      many<OutboxRow>(
        pool,
        `WITH clock AS (SELECT ${nowOr('$1')} AS now)
         UPDATE mail_outbox SET lease_until = (SELECT now FROM clock) + $2::bigint, attempts = attempts + 1
         WHERE feedback_id IN (SELECT feedback_id FROM mail_outbox WHERE state = 'pending' AND next_attempt_at <= (SELECT now FROM clock)
                                 AND (lease_until IS NULL OR lease_until <= (SELECT now FROM clock)) AND NOT (app_id = ANY($4::text[]))
                                 AND NOT (org_id = ANY($5::text[]))
                               ORDER BY next_attempt_at LIMIT $3 FOR UPDATE SKIP LOCKED)
         RETURNING *`,
        [callerNow(now), leaseMs, limit, busy?.apps ?? [], busy?.orgs ?? []],
      ),
    releaseClaims: (claims, notBefore = 0) => release('mail_outbox', 'feedback_id', claims, notBefore),
    releaseConfirmationClaims: (claims, notBefore = 0) => release('mail_confirmations', 'id', claims, notBefore),
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
    ask: (a) => bodies.transaction(askConfirmation(a)),
    claimConfirmations: (now, leaseMs, limit, busy) =>
      many<ConfirmationRow>(
        pool,
        `WITH clock AS (SELECT ${nowOr('$1')} AS now)
         UPDATE mail_confirmations SET lease_until = (SELECT now FROM clock) + $2::bigint, attempts = attempts + 1
         WHERE id IN (SELECT id FROM mail_confirmations WHERE state = 'pending' AND next_attempt_at <= (SELECT now FROM clock)
                        AND (lease_until IS NULL OR lease_until <= (SELECT now FROM clock))
                        AND NOT (app_id = ANY($4::text[])) AND NOT (email_hash = ANY($5::text[]))
                        AND NOT (org_id = ANY($6::text[]))
                      ORDER BY next_attempt_at LIMIT $3 FOR UPDATE SKIP LOCKED)
         RETURNING *`,
        [callerNow(now), leaseMs, limit, busy?.apps ?? [], busy?.addresses ?? [], busy?.orgs ?? []],
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
    confirm: (appId, hash, nonce, now, sentAfter) => bodies.transaction(useConfirmation(appId, hash, nonce, now, sentAfter)),
    isConfirmed: async (appId, hash) => (await one(pool, `SELECT 1 FROM mail_confirmations WHERE id = $1 AND state = 'confirmed'`, [confirmationId(appId, hash)])) !== undefined,
    unsubscribe: (appId, hash, now) => bodies.transaction(unsubscribe(appId, hash, now)),
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

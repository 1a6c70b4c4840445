/** PostgreSQL side of src/abuse/abuse-repo.ts. */
import { POW_PURGE_BATCH, type AbuseRepo, type SpamLearningRow, type SpamRetainingApp } from '../../abuse/abuse-repo'
import { handOverSharedSql, ownedByRemovedSql } from '../sql/upload-shares'
import { exec, many, one, prepared, type PgStorage } from './storage'

const CLAIM = 'INSERT INTO pow_spent (signature, expires_at) VALUES ($1, $2) ON CONFLICT DO NOTHING'
// One batch of the purge (AbuseRepo.purgePow): its rows by their ctid (a TID scan; `signature IN (…)` was planned as a hash join over the whole table), the oldest first by pow_spent_expires_idx (a plain scan would read the batches already deleted again).
const PURGE = 'DELETE FROM pow_spent WHERE ctid = ANY(ARRAY(SELECT ctid FROM pow_spent WHERE expires_at < $1 ORDER BY expires_at LIMIT $2))'

// The spam retention's batch (see AbuseRepo.deleteExpiredSpam): rows locked, so a "not spam" racing it waits and then finds nothing.
const EXPIRED_SPAM = `SELECT id FROM feedback WHERE org_id = $1 AND spam_marked_at IS NOT NULL AND app_id = $2 AND spam_marked_at < $3 AND duplicate_count = 0
  ORDER BY id COLLATE "C" LIMIT $4 FOR UPDATE SKIP LOCKED`
// An object a spam report owns and a surviving report also lists passes to that report first.
const HAND_OVER = handOverSharedSql('(SELECT unnest($1::text[]))')
// Their uploads locked before the hand-over decides: a submission attaching one of them waits, or is waited for (upload-shares.ts).
const LOCK_UPLOADS = `${ownedByRemovedSql('(SELECT unnest($1::text[]))')} ORDER BY key COLLATE "C" FOR UPDATE`
const SPAM_CLEANUP = [
  'UPDATE uploads SET feedback_id = NULL, created_at = 0 WHERE feedback_id = ANY($1::text[])',
  'DELETE FROM jobs WHERE feedback_id = ANY($1::text[])',
  'DELETE FROM admin_reads WHERE feedback_id = ANY($1::text[])',
  'DELETE FROM triage_decisions WHERE feedback_id = ANY($1::text[]) OR lead_id = ANY($1::text[])',
  'DELETE FROM feedback WHERE id = ANY($1::text[])',
]

export function createPgAbuseRepo(storage: PgStorage): AbuseRepo {
  const { pool } = storage
  return {
    spamRetainingApps: () => many<SpamRetainingApp>(pool, 'SELECT id, org_id AS "orgId", spam_retention_days AS days FROM apps WHERE spam_retention_days > 0'),
    deleteExpiredSpam: (app, before, limit) =>
      storage.tx(async (client) => {
        const ids = (await many<{ id: string }>(client, EXPIRED_SPAM, [app.orgId, app.id, before, limit])).map((r) => r.id)
        if (ids.length === 0) return { deleted: 0, uploadKeys: [] }
        await exec(client, LOCK_UPLOADS, [ids])
        for (const sql of HAND_OVER) await exec(client, sql, [ids])
        const keys = (await many<{ key: string }>(client, 'SELECT key FROM uploads WHERE feedback_id = ANY($1::text[])', [ids])).map((r) => r.key)
        for (const sql of SPAM_CLEANUP) await exec(client, sql, [ids])
        return { deleted: ids.length, uploadKeys: keys }
      }),
    claimPow: async (signature, expiresAt) => ((await pool.query(prepared(CLAIM, [signature, expiresAt]))).rowCount ?? 0) === 1,
    purgePow: async (now) => {
      let total = 0
      for (;;) {
        const n = await exec(pool, PURGE, [now, POW_PURGE_BATCH])
        total += n
        if (n < POW_PURGE_BATCH) return total
      }
    },
    learning: (appId) =>
      one<SpamLearningRow>(pool, 'SELECT app_id AS "appId", factors, not_spam AS "notSpam", marked_spam AS "markedSpam", updated_at AS "updatedAt", cleared FROM spam_learning WHERE app_id = $1', [appId]),
    saveLearning: async (appId, factors, decision, now, cleared = '[]') =>
      void (await exec(
        pool,
        `INSERT INTO spam_learning (app_id, factors, not_spam, marked_spam, updated_at, cleared) VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (app_id) DO UPDATE SET factors = $2, not_spam = spam_learning.not_spam + $3, marked_spam = spam_learning.marked_spam + $4, updated_at = $5, cleared = $6`,
        [appId, factors, decision === 'not_spam' ? 1 : 0, decision === 'spam' ? 1 : 0, now, cleared],
      )),
  }
}

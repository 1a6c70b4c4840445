/** PostgreSQL side of src/abuse/abuse-repo.ts. */
import type { AbuseRepo, SpamLearningRow } from '../../abuse/abuse-repo'
import { exec, one, prepared, type PgStorage } from './storage'

const CLAIM = 'INSERT INTO pow_spent (signature, expires_at) VALUES ($1, $2) ON CONFLICT DO NOTHING'

export function createPgAbuseRepo({ pool }: PgStorage): AbuseRepo {
  return {
    claimPow: async (signature, expiresAt) => ((await pool.query(prepared(CLAIM, [signature, expiresAt]))).rowCount ?? 0) === 1,
    purgePow: (now) => exec(pool, 'DELETE FROM pow_spent WHERE expires_at < $1', [now]),
    learning: (appId) =>
      one<SpamLearningRow>(pool, 'SELECT app_id AS "appId", factors, not_spam AS "notSpam", marked_spam AS "markedSpam", updated_at AS "updatedAt" FROM spam_learning WHERE app_id = $1', [appId]),
    saveLearning: async (appId, factors, decision, now) =>
      void (await exec(
        pool,
        `INSERT INTO spam_learning (app_id, factors, not_spam, marked_spam, updated_at) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (app_id) DO UPDATE SET factors = $2, not_spam = spam_learning.not_spam + $3, marked_spam = spam_learning.marked_spam + $4, updated_at = $5`,
        [appId, factors, decision === 'not_spam' ? 1 : 0, decision === 'spam' ? 1 : 0, now],
      )),
  }
}

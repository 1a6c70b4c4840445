/** SQLite side of src/abuse/abuse-repo.ts. */
import type { AbuseRepo, SpamLearningRow } from '../../abuse/abuse-repo'
import type { SqliteStorage } from './storage'

export function createSqliteAbuseRepo({ sqlite }: SqliteStorage): AbuseRepo {
  const claim = sqlite.prepare('INSERT INTO pow_spent (signature, expires_at) VALUES (?, ?) ON CONFLICT DO NOTHING')
  const purge = sqlite.prepare('DELETE FROM pow_spent WHERE expires_at < ?')
  const learning = sqlite.prepare('SELECT app_id AS appId, factors, not_spam AS notSpam, marked_spam AS markedSpam, updated_at AS updatedAt FROM spam_learning WHERE app_id = ?')
  const save = sqlite.prepare(
    `INSERT INTO spam_learning (app_id, factors, not_spam, marked_spam, updated_at) VALUES (?1, ?2, ?3, ?4, ?5)
     ON CONFLICT (app_id) DO UPDATE SET factors = ?2, not_spam = not_spam + ?3, marked_spam = marked_spam + ?4, updated_at = ?5`,
  )
  return {
    claimPow: async (signature, expiresAt) => claim.run(signature, expiresAt).changes === 1,
    purgePow: async (now) => purge.run(now).changes,
    learning: async (appId) => (learning.get(appId) as SpamLearningRow | null) ?? undefined,
    saveLearning: async (appId, factors, decision, now) => void save.run(appId, factors, decision === 'not_spam' ? 1 : 0, decision === 'spam' ? 1 : 0, now),
  }
}

/** SQLite side of src/abuse/abuse-repo.ts. */
import { POW_PURGE_BATCH, type AbuseRepo, type SpamLearningRow, type SpamRetainingApp } from '../../abuse/abuse-repo'
import { handOverSharedSql } from '../sql/upload-shares'
import type { SqliteStorage } from './storage'

export function createSqliteAbuseRepo({ sqlite }: SqliteStorage): AbuseRepo {
  const claim = sqlite.prepare('INSERT INTO pow_spent (signature, expires_at) VALUES (?, ?) ON CONFLICT DO NOTHING')
  // One batch of the purge (AbuseRepo.purgePow): a single DELETE of a flood's rows held the write lock for all of them.
  const purge = sqlite.prepare('DELETE FROM pow_spent WHERE rowid IN (SELECT rowid FROM pow_spent WHERE expires_at < ? LIMIT ?)')
  const learning = sqlite.prepare('SELECT app_id AS appId, factors, not_spam AS notSpam, marked_spam AS markedSpam, updated_at AS updatedAt, cleared FROM spam_learning WHERE app_id = ?')
  const save = sqlite.prepare(
    `INSERT INTO spam_learning (app_id, factors, not_spam, marked_spam, updated_at, cleared) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
     ON CONFLICT (app_id) DO UPDATE SET factors = ?2, not_spam = not_spam + ?3, marked_spam = marked_spam + ?4, updated_at = ?5, cleared = ?6`,
  )
  const retaining = sqlite.prepare<SpamRetainingApp, []>('SELECT id, org_id AS orgId, spam_retention_days AS days FROM apps WHERE spam_retention_days > 0')
  // The partial index feedback_spam_idx (org_id, id) WHERE spam_marked_at IS NOT NULL: only the Org's spam is read.
  const expired = sqlite.prepare<{ id: string }, [string, string, number, number]>(
    'SELECT id FROM feedback WHERE org_id = ?1 AND spam_marked_at IS NOT NULL AND app_id = ?2 AND spam_marked_at < ?3 AND duplicate_count = 0 ORDER BY id LIMIT ?4',
  )
  const IDS = 'SELECT value FROM json_each(?1)'
  const handOver = handOverSharedSql(`(${IDS})`).map((sql) => sqlite.prepare<unknown, [string]>(sql))
  const uploadKeys = sqlite.prepare<{ key: string }, [string]>(`SELECT key FROM uploads WHERE feedback_id IN (${IDS})`)
  const cleanup = [
    `UPDATE uploads SET feedback_id = NULL, created_at = 0 WHERE feedback_id IN (${IDS})`,
    `DELETE FROM jobs WHERE feedback_id IN (${IDS})`,
    `DELETE FROM admin_reads WHERE feedback_id IN (${IDS})`,
    `DELETE FROM triage_decisions WHERE feedback_id IN (${IDS}) OR lead_id IN (${IDS})`,
    `DELETE FROM feedback WHERE id IN (${IDS})`,
  ].map((sql) => sqlite.prepare<unknown, [string]>(sql))
  const deleteExpired = sqlite.transaction((app: { id: string; orgId: string }, before: number, limit: number) => {
    const ids = expired.all(app.orgId, app.id, before, limit).map((r) => r.id)
    if (ids.length === 0) return { deleted: 0, uploadKeys: [] }
    const json = JSON.stringify(ids)
    for (const stmt of handOver) stmt.run(json)
    const keys = uploadKeys.all(json).map((r) => r.key)
    for (const stmt of cleanup) stmt.run(json)
    return { deleted: ids.length, uploadKeys: keys }
  })
  return {
    spamRetainingApps: async () => retaining.all(),
    deleteExpiredSpam: async (app, before, limit) => deleteExpired.immediate(app, before, limit),
    claimPow: async (signature, expiresAt) => claim.run(signature, expiresAt).changes === 1,
    purgePow: async (now) => {
      let total = 0
      for (;;) {
        const n = purge.run(now, POW_PURGE_BATCH).changes
        total += n
        if (n < POW_PURGE_BATCH) return total
        // The event loop's other work (and other writers of the database) between batches.
        await new Promise((r) => setImmediate(r))
      }
    },
    learning: async (appId) => (learning.get(appId) as SpamLearningRow | null) ?? undefined,
    saveLearning: async (appId, factors, decision, now, cleared = '[]') => void save.run(appId, factors, decision === 'not_spam' ? 1 : 0, decision === 'spam' ? 1 : 0, now, cleared),
  }
}

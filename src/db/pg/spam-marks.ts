/** The spam decisions by hand a cluster node reads for `like_spam` (src/abuse/spam-share.ts). */
import type { SpamMarksRepo } from '../../abuse/spam-share'
import { parseCleared } from '../../abuse/spam-cleared'
import { many, type PgQueryable } from './storage'

export function createPgSpamMarks(q: PgQueryable): SpamMarksRepo {
  return {
    // spam_learning_updated_idx: the Apps decided on lately, not every App that ever was.
    decidedSince: async (since, limit) =>
      (await many<{ appId: string; at: string | number }>(q, 'SELECT app_id AS "appId", updated_at AS at FROM spam_learning WHERE updated_at >= $1 ORDER BY updated_at DESC LIMIT $2', [since, limit])).map((r) => ({ appId: r.appId, at: Number(r.at) })),
    // The Org's spam folder (feedback_spam_idx), the App's marks by hand only: intake's classifications never teach like_spam.
    markedByHand: async (appId, since, limit) =>
      (
        await many<{ at: string | number; text: string }>(
          q,
          `SELECT at, text FROM (
             SELECT f.spam_marked_at AS at, f.text FROM feedback f JOIN apps a ON a.id = f.app_id
             WHERE f.org_id = a.org_id AND f.app_id = $1 AND f.spam_marked_at IS NOT NULL AND f.spam_marked_at > $2
               AND f.spam_reasons LIKE '["marked\\_by\\_hand"%'
             ORDER BY f.spam_marked_at DESC LIMIT $3) newest ORDER BY at`,
          [appId, since, limit],
        )
      ).map((r) => ({ at: Number(r.at), text: r.text })),
    // The App's "not spam" list (at most 200 ids), then those reports' texts (gone ones are skipped).
    clearedSince: async (appId, since) => {
      const row = await many<{ cleared: string }>(q, 'SELECT cleared FROM spam_learning WHERE app_id = $1', [appId])
      const when = new Map(parseCleared(row[0]?.cleared).filter((c) => c.at > since).map((c) => [c.id, c.at]))
      if (when.size === 0) return []
      const rows = await many<{ id: string; text: string }>(q, 'SELECT id, text FROM feedback WHERE app_id = $1 AND id = ANY($2::text[])', [appId, [...when.keys()]])
      return rows.map((r) => ({ at: when.get(r.id)!, text: r.text }))
    },
  }
}

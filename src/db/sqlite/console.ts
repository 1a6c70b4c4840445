/** SQLite side of modules/admin-api/console-repo.ts. */
import { nameableIds, type AppCostRow, type ConsoleRepo, type KeyActivityRow } from '../../modules/admin-api/console-repo'
import type { SqliteStorage } from './storage'

export function createSqliteConsoleRepo({ sqlite }: SqliteStorage): ConsoleRepo {
  const orgExists = sqlite.query('SELECT 1 FROM orgs WHERE id = ?')
  const appInOrg = sqlite.query('SELECT 1 FROM apps WHERE id = ? AND org_id = ? AND deleted_at IS NULL')
  const keyInOrg = sqlite.query('SELECT 1 FROM api_keys WHERE id = ? AND org_id = ?')
  const feedbackInOrg = sqlite.query('SELECT 1 FROM feedback WHERE id = ? AND org_id = ?')
  return {
    orgExists: async (orgId) => !!orgExists.get(orgId),
    appInOrg: async (orgId, appId) => !!appInOrg.get(appId, orgId),
    keyInOrg: async (orgId, keyId) => !!keyInOrg.get(keyId, orgId),
    feedbackInOrg: async (orgId, id) => !!feedbackInOrg.get(id, orgId),

    sealedSecret: async (orgId, appId) => (sqlite.query('SELECT signing_secret_enc AS enc FROM apps WHERE id = ? AND org_id = ?').get(appId, orgId) as { enc: string } | null)?.enc,

    keyActivity: async (orgId) => {
      const rows = sqlite
        .query('SELECT k.id, a.created_by AS createdBy, a.last_used_at AS lastUsedAt FROM api_keys k LEFT JOIN api_key_activity a ON a.key_id = k.id WHERE k.org_id = ?')
        .all(orgId) as KeyActivityRow[]
      return new Map(rows.map((r) => [r.id, r]))
    },

    adminEmails: async () => new Map((sqlite.query('SELECT id, email FROM admins').all() as { id: string; email: string }[]).map((a) => [`admin:${a.id}`, a.email])),

    auditNames: async (orgId, ids) => {
      const out = new Map<string, string>()
      const list = nameableIds(ids)
      if (!list.length) return out
      const marks = list.map(() => '?').join(',')
      const rows = sqlite
        .query(
          `SELECT id, email AS label FROM admins WHERE id IN (${marks})
           UNION ALL SELECT id, 'App “' || name || '”' FROM apps WHERE org_id = ? AND id IN (${marks})
           UNION ALL SELECT id, 'API key ' || CASE WHEN name <> '' THEN '“' || name || '”' ELSE key_prefix || '…' END FROM api_keys WHERE org_id = ? AND id IN (${marks})
           UNION ALL SELECT id, 'Org “' || name || '”' FROM orgs WHERE id = ? AND id IN (${marks})`,
        )
        .all(...list, orgId, ...list, orgId, ...list, orgId, ...list) as { id: string; label: string }[]
      for (const r of rows) out.set(r.id, r.label)
      return out
    },

    costsSince: async (orgId, since) =>
      sqlite
        .query(
          'SELECT a.id AS appId, COUNT(r.id) AS runs, COALESCE(SUM(r.tokens_in), 0) AS tokensIn, COALESCE(SUM(r.tokens_out), 0) AS tokensOut, COALESCE(SUM(r.cost_usd), 0) AS costUsd ' +
            'FROM apps a LEFT JOIN agent_runs r ON r.app_id = a.id AND r.created_at >= ? WHERE a.org_id = ? AND a.deleted_at IS NULL GROUP BY a.id ORDER BY a.id',
        )
        .all(since, orgId) as AppCostRow[],
  }
}

/**
 * The dashboard's own reads and writes around Orgs, Apps and keys (the tenants service owns the rest):
 * existence checks scoped by Org, the sealed signing secret, key activity, agent cost per App.
 */
import type { Database } from 'bun:sqlite'

export function createConsoleRepo(sqlite: Database) {
  const orgExists = sqlite.query('SELECT 1 FROM orgs WHERE id = ?')
  const appInOrg = sqlite.query('SELECT 1 FROM apps WHERE id = ? AND org_id = ? AND deleted_at IS NULL')
  const keyInOrg = sqlite.query('SELECT 1 FROM api_keys WHERE id = ? AND org_id = ?')
  const feedbackInOrg = sqlite.query('SELECT 1 FROM feedback WHERE id = ? AND org_id = ?')
  return {
    orgExists: (orgId: string): boolean => !!orgExists.get(orgId),
    appInOrg: (orgId: string, appId: string): boolean => !!appInOrg.get(appId, orgId),
    keyInOrg: (orgId: string, keyId: string): boolean => !!keyInOrg.get(keyId, orgId),
    feedbackInOrg: (orgId: string, id: string): boolean => !!feedbackInOrg.get(id, orgId),

    sealedSecret(appId: string): string {
      return (sqlite.query('SELECT signing_secret_enc AS enc FROM apps WHERE id = ?').get(appId) as { enc: string }).enc
    },

    /** Creator and last use of each of the Org's keys, by key id. */
    keyActivity(orgId: string) {
      const rows = sqlite
        .query('SELECT k.id, a.created_by AS createdBy, a.last_used_at AS lastUsedAt FROM api_keys k LEFT JOIN api_key_activity a ON a.key_id = k.id WHERE k.org_id = ?')
        .all(orgId) as { id: string; createdBy: string | null; lastUsedAt: number | null }[]
      return new Map(rows.map((r) => [r.id, r]))
    },

    /** "admin:<id>" → email, to show who created a key. */
    adminEmails(): Map<string, string> {
      return new Map((sqlite.query('SELECT id, email FROM admins').all() as { id: string; email: string }[]).map((a) => [`admin:${a.id}`, a.email]))
    },

    /**
     * Names for one audit page, by id: admins (email), and the Org's own Apps (deleted ones too, as the
     * log outlives them), keys (name or prefix) and the Org itself. Ids of anything else stay unnamed.
     */
    auditNames(orgId: string, ids: string[]): Map<string, string> {
      const out = new Map<string, string>()
      const list = [...new Set(ids)].filter((id) => /^[0-9a-f]{24}$/.test(id))
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

    recordKeyCreator(keyId: string, actor: string): void {
      sqlite.query('INSERT INTO api_key_activity (key_id, created_by) VALUES (?, ?) ON CONFLICT (key_id) DO UPDATE SET created_by = excluded.created_by').run(keyId, actor)
    },

    costsSince(orgId: string, since: number) {
      return sqlite
        .query(
          'SELECT a.id AS appId, COUNT(r.id) AS runs, COALESCE(SUM(r.tokens_in), 0) AS tokensIn, COALESCE(SUM(r.tokens_out), 0) AS tokensOut, COALESCE(SUM(r.cost_usd), 0) AS costUsd ' +
            'FROM apps a LEFT JOIN agent_runs r ON r.app_id = a.id AND r.created_at >= ? WHERE a.org_id = ? AND a.deleted_at IS NULL GROUP BY a.id ORDER BY a.id',
        )
        .all(since, orgId) as { appId: string; runs: number; tokensIn: number; tokensOut: number; costUsd: number }[]
    },
  }
}
export type ConsoleRepo = ReturnType<typeof createConsoleRepo>

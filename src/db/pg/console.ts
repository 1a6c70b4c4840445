/** PostgreSQL side of modules/admin-api/console-repo.ts. */
import { nameableIds, type AppCostRow, type ConsoleRepo, type KeyActivityRow } from '../../modules/admin-api/console-repo'
import { many, one, type PgStorage } from './storage'

export function createPgConsoleRepo({ pool }: PgStorage): ConsoleRepo {
  const exists = async (text: string, params: unknown[]) => !!(await one(pool, text, params))
  return {
    orgExists: (orgId) => exists('SELECT 1 FROM orgs WHERE id = $1', [orgId]),
    appInOrg: (orgId, appId) => exists('SELECT 1 FROM apps WHERE id = $1 AND org_id = $2 AND deleted_at IS NULL', [appId, orgId]),
    keyInOrg: (orgId, keyId) => exists('SELECT 1 FROM api_keys WHERE id = $1 AND org_id = $2', [keyId, orgId]),
    feedbackInOrg: (orgId, id) => exists('SELECT 1 FROM feedback WHERE id = $1 AND org_id = $2', [id, orgId]),

    sealedSecret: async (orgId, appId) => (await one<{ enc: string }>(pool, 'SELECT signing_secret_enc AS enc FROM apps WHERE id = $1 AND org_id = $2', [appId, orgId]))?.enc,

    keyActivity: async (orgId) => {
      const rows = await many<KeyActivityRow>(
        pool,
        'SELECT k.id, a.created_by AS "createdBy", a.last_used_at AS "lastUsedAt" FROM api_keys k LEFT JOIN api_key_activity a ON a.key_id = k.id WHERE k.org_id = $1 ORDER BY k.id',
        [orgId],
      )
      return new Map(rows.map((r) => [r.id, r]))
    },

    adminEmails: async () => new Map((await many<{ id: string; email: string }>(pool, 'SELECT id, email FROM admins ORDER BY id')).map((a) => [`admin:${a.id}`, a.email])),

    auditNames: async (orgId, ids) => {
      const out = new Map<string, string>()
      const list = nameableIds(ids)
      if (!list.length) return out
      const rows = await many<{ id: string; label: string }>(
        pool,
        `SELECT id, email AS label FROM admins WHERE id = ANY($1::text[])
         UNION ALL SELECT id, 'App “' || name || '”' FROM apps WHERE org_id = $2 AND id = ANY($1::text[])
         UNION ALL SELECT id, 'API key ' || CASE WHEN name <> '' THEN '“' || name || '”' ELSE key_prefix || '…' END FROM api_keys WHERE org_id = $2 AND id = ANY($1::text[])
         UNION ALL SELECT id, 'Org “' || name || '”' FROM orgs WHERE id = $2 AND id = ANY($1::text[])`,
        [list, orgId],
      )
      for (const r of rows) out.set(r.id, r.label)
      return out
    },

    costsSince: (orgId, since) =>
      many<AppCostRow>(
        pool,
        'SELECT a.id AS "appId", COUNT(r.id)::int AS runs, COALESCE(SUM(r.tokens_in), 0)::bigint AS "tokensIn", COALESCE(SUM(r.tokens_out), 0)::bigint AS "tokensOut", ' +
          'COALESCE(SUM(r.cost_usd), 0)::float8 AS "costUsd" ' +
          'FROM apps a LEFT JOIN agent_runs r ON r.app_id = a.id AND r.created_at >= $1 WHERE a.org_id = $2 AND a.deleted_at IS NULL GROUP BY a.id ORDER BY a.id',
        [since, orgId],
      ),
  }
}

/** PostgreSQL side of src/modules/reporters/repo.ts over the shared statements of src/db/sql/report-removal.ts. */
import type { ReportersRepo } from '../../modules/reporters/repo'
import { ownedByRemovedSql } from '../sql/upload-shares'
import { cleanup, compact, handOverShared, ownIds, promote, narrowedIds, reporterMatch, successors, successorsWaiting, uploadKeysOf, type RemovalDialect } from '../sql/report-removal'
import type { PgLifecycle } from './lifecycle'
import { logRemoved } from './removal-log'
import { many, type PgQueryable, type PgStorage } from './storage'

/** Runs a shared statement with the values it uses of (ids, orgId[, lead, successor]). */
function run<T>(q: PgQueryable, text: string, values: unknown[]): Promise<T[]> {
  const { sql, pick } = compact(text, '$')
  return many<T>(q, sql, pick(values))
}

const DIALECT: RemovalDialect = {
  ids: '(SELECT unnest($1::text[]))',
  org: '$2',
  scrubbedEventData: `(data::jsonb || '{"externalUserId": null}'::jsonb)::text`,
  pairs: 'unnest($3::text[], $4::text[]) AS p(lead, next)',
}

/**
 * Every row the removal writes (the reports, the duplicates it promotes, the leads it recounts, the
 * reports whose suggestion it clears), in id order and in one statement.
 */
const ROWS_WRITTEN = `WITH mine AS (SELECT id, duplicate_of_id FROM feedback WHERE org_id = $2 AND id = ANY($1::text[]))
  SELECT id FROM feedback WHERE id IN (
    SELECT id FROM mine
    UNION SELECT id FROM feedback WHERE duplicate_of_id IN (SELECT id FROM mine)
    UNION SELECT duplicate_of_id FROM mine WHERE duplicate_of_id IS NOT NULL
    UNION SELECT id FROM feedback WHERE suggested_lead_id IN (SELECT id FROM mine))
  ORDER BY id COLLATE "C" FOR UPDATE`

/**
 * A removal takes the locks of a merge by hand, in the same order (src/db/pg/dedup.ts `lockForTriage`):
 * the App's merge lock first (one per App, Apps in id order: an Org-wide erasure spans them), then every
 * row it writes, in id order, before it writes any. It locked its reports, then the duplicates it
 * promotes and the leads it recounts as it went: an erasure racing a merge or unmerge of those clusters
 * held a row the merge waited for while waiting for one the merge held, and PostgreSQL rolled one of them
 * back (a 503 for the erasure or the merge).
 */
async function lockAsMerges(client: PgQueryable, orgId: string, ids: readonly string[]): Promise<void> {
  const apps = await many<{ app_id: string }>(client, 'SELECT app_id FROM feedback WHERE org_id = $2 AND id = ANY($1::text[]) GROUP BY app_id ORDER BY app_id COLLATE "C"', [ids, orgId])
  for (const { app_id } of apps) await client.query("SELECT pg_advisory_xact_lock(hashtextextended('fixloop.merge:' || $1::text, 0))", [app_id])
  await client.query(ROWS_WRITTEN, [ids, orgId])
}

/** ReportersRepo.eraseBatch on PostgreSQL. */
export const PG_ERASE_BATCH = 1_000

/** `lifecycle`: queues a promoted successor's `process` job in the removal's transaction. */
export function createPgReportersRepo(storage: PgStorage, lifecycle: Pick<PgLifecycle, 'enqueueProcessOf'>): ReportersRepo {
  const { pool } = storage
  return {
    eraseBatch: PG_ERASE_BATCH,
    addressesOf: (orgId, ids) =>
      many(
        pool,
        `SELECT app_id AS "appId", email, NULL AS "emailHash" FROM feedback WHERE org_id = $2 AND id = ANY($1::text[]) AND email IS NOT NULL
         UNION SELECT app_id AS "appId", NULL AS email, email_hash AS "emailHash" FROM mail_outbox WHERE org_id = $2 AND feedback_id = ANY($1::text[])`,
        [ids, orgId],
      ),
    forgetAddresses: async (pairs) => {
      if (pairs.length === 0) return 0
      const apps = pairs.map((p) => p.appId)
      const hashes = pairs.map((p) => p.emailHash)
      return storage.tx(async (client) => {
        let n = 0
        for (const table of ['mail_unsubscribes', 'mail_confirmations']) {
          n += (await client.query(`DELETE FROM ${table} t USING unnest($1::text[], $2::text[]) AS p(app_id, email_hash) WHERE t.app_id = p.app_id AND t.email_hash = p.email_hash`, [apps, hashes])).rowCount ?? 0
        }
        return n
      })
    },
    retainingApps: () => many(pool, 'SELECT id, org_id AS "orgId", retention_days AS days FROM apps WHERE retention_days > 0'),
    expiredIds: async (app, before, limit) =>
      (await many<{ id: string }>(pool, 'SELECT id FROM feedback WHERE app_id = $1 AND org_id = $2 AND created_at < $3 ORDER BY id COLLATE "C" LIMIT $4', [app.id, app.orgId, before, limit])).map((r) => r.id),
    reportIds: async (q) => {
      const match = reporterMatch(q.who, '$2')
      const read = (before: string | undefined, limit: number) => {
        const params: unknown[] = [q.orgId, match.value]
        const conds = ['org_id = $1', match.sql]
        if (q.appId) params.push(q.appId), conds.push(`app_id = $${params.length}`)
        if (before) params.push(before), conds.push(`id COLLATE "C" < $${params.length}`)
        params.push(limit)
        return many<{ id: string; email: string | null }>(pool, `SELECT id, email FROM feedback WHERE ${conds.join(' AND ')} ORDER BY id COLLATE "C" DESC LIMIT $${params.length}`, params)
      }
      return match.keep ? narrowedIds(read, match.keep, q.before, q.limit) : (await read(q.before, q.limit)).map((r) => r.id)
    },
    removeReports: (orgId, ids) =>
      storage.tx(async (client, _db, onCommit) => {
        await lockAsMerges(client, orgId, ids)
        // Locked in id order, so two removals of overlapping reports (an erase racing the retention) queue.
        const mine = (await run<{ id: string }>(client, `${ownIds(DIALECT)} ORDER BY id COLLATE "C" FOR UPDATE`, [ids, orgId])).map((r) => r.id)
        if (mine.length === 0) return { removed: 0, uploadKeys: [] }
        // Their uploads locked before the hand-over decides: a submission attaching one waits, or is waited for (src/db/sql/upload-shares.ts).
        await run(client, `${ownedByRemovedSql(DIALECT.ids)} ORDER BY key COLLATE "C" FOR UPDATE`, [mine, orgId])
        for (const sql of handOverShared(DIALECT)) await run(client, sql, [mine, orgId])
        const uploadKeys = (await run<{ key: string }>(client, uploadKeysOf(DIALECT), [mine, orgId])).map((r) => r.key)
        const pairs = await run<{ lead: string; next: string }>(client, successors(DIALECT), [mine, orgId])
        if (pairs.length > 0) {
          const values = [mine, orgId, pairs.map((p) => p.lead), pairs.map((p) => p.next)]
          for (const sql of promote(DIALECT)) await run(client, sql, values)
          for (const { id } of await run<{ id: string }>(client, successorsWaiting(DIALECT), values)) await lifecycle.enqueueProcessOf({ client, onCommit }, id)
        }
        for (const sql of cleanup(DIALECT)) await run(client, sql, [mine, orgId])
        // Last: every node's similarity index drops them from the log (removal-log.ts takes its lock here).
        await logRemoved(client, mine)
        return { removed: mine.length, uploadKeys }
      }),
  }
}

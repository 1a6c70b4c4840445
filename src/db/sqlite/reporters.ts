/** SQLite side of src/modules/reporters/repo.ts over the shared statements of src/db/sql/report-removal.ts. */
import type { ReportersRepo } from '../../modules/reporters/repo'
import { cleanup, compact, handOverShared, ownIds, promote, narrowedIds, reporterMatch, successors, successorsWaiting, uploadKeysOf, type RemovalDialect } from '../sql/report-removal'
import type { SqliteLifecycle } from './lifecycle'
import type { SqliteStorage } from './storage'

const DIALECT: RemovalDialect = {
  ids: '(SELECT value FROM json_each(?1))',
  org: '?2',
  scrubbedEventData: "json_set(data, '$.externalUserId', NULL)",
  pairs: "(SELECT json_extract(value, '$[0]') AS lead, json_extract(value, '$[1]') AS next FROM json_each(?3)) AS p",
}

/** ReportersRepo.eraseBatch on SQLite. */
export const SQLITE_ERASE_BATCH = 200

/** `lifecycle`: queues a promoted successor's `process` job in the removal's transaction. */
export function createSqliteReportersRepo({ sqlite }: SqliteStorage, lifecycle: Pick<SqliteLifecycle, 'enqueueProcessOf'>): ReportersRepo {
  // Each statement takes (ids JSON, orgId[, (lead, successor) pairs JSON]) and binds the ones it uses.
  const prep = <R>(text: string) => {
    const { sql, pick } = compact(text, '?')
    const stmt = sqlite.prepare<R, string[]>(sql)
    return { all: (...v: string[]) => stmt.all(...pick(v)), get: (...v: string[]) => stmt.get(...pick(v)), run: (...v: string[]) => void stmt.run(...pick(v)) }
  }
  const own = prep<{ id: string }>(ownIds(DIALECT))
  const handOver = handOverShared(DIALECT).map((sql) => prep<unknown>(sql))
  const keys = prep<{ key: string }>(uploadKeysOf(DIALECT))
  const successorsOf = prep<{ lead: string; next: string }>(successors(DIALECT))
  const promotion = promote(DIALECT).map((sql) => prep<unknown>(sql))
  const waiting = prep<{ id: string }>(successorsWaiting(DIALECT))
  const rest = cleanup(DIALECT).map((sql) => prep<unknown>(sql))
  const remove = sqlite.transaction((orgId: string, ids: readonly string[]) => {
    const mine = own.all(JSON.stringify(ids), orgId).map((r) => r.id)
    if (mine.length === 0) return { removed: 0, uploadKeys: [] }
    const json = JSON.stringify(mine)
    for (const stmt of handOver) stmt.run(json, orgId)
    const uploadKeys = keys.all(json, orgId).map((r) => r.key)
    const pairs = successorsOf.all(json, orgId)
    if (pairs.length > 0) {
      const pairsJson = JSON.stringify(pairs.map((p) => [p.lead, p.next]))
      for (const stmt of promotion) stmt.run(json, orgId, pairsJson)
      for (const { id } of waiting.all(json, orgId, pairsJson)) lifecycle.enqueueProcessOf(id)
    }
    for (const stmt of rest) stmt.run(json, orgId)
    return { removed: mine.length, uploadKeys }
  })
  const retaining = sqlite.prepare<{ id: string; orgId: string; days: number }, []>('SELECT id, org_id AS orgId, retention_days AS days FROM apps WHERE retention_days > 0')
  // feedback_app_id_idx (app_id, id): ids rise with time, so the expired ones come first.
  const expired = sqlite.prepare<{ id: string }, [string, string, number, number]>('SELECT id FROM feedback WHERE app_id = ?1 AND org_id = ?2 AND created_at < ?3 ORDER BY id LIMIT ?4')
  const addresses = sqlite.prepare<{ appId: string; email: string | null; emailHash: string | null }, [string, string]>(
    `SELECT app_id AS appId, email, NULL AS emailHash FROM feedback WHERE org_id = ?2 AND id IN (SELECT value FROM json_each(?1)) AND email IS NOT NULL
     UNION SELECT app_id AS appId, NULL AS email, email_hash AS emailHash FROM mail_outbox WHERE org_id = ?2 AND feedback_id IN (SELECT value FROM json_each(?1))`,
  )
  const forgetUnsubscribe = sqlite.prepare<unknown, [string, string]>('DELETE FROM mail_unsubscribes WHERE app_id = ? AND email_hash = ?')
  const forgetConfirmation = sqlite.prepare<unknown, [string, string]>('DELETE FROM mail_confirmations WHERE app_id = ? AND email_hash = ?')
  const forget = sqlite.transaction((pairs: readonly { appId: string; emailHash: string }[]) => {
    let n = 0
    for (const p of pairs) n += forgetUnsubscribe.run(p.appId, p.emailHash).changes + forgetConfirmation.run(p.appId, p.emailHash).changes
    return n
  })
  return {
    eraseBatch: SQLITE_ERASE_BATCH,
    addressesOf: async (orgId, ids) => addresses.all(JSON.stringify(ids), orgId),
    forgetAddresses: async (pairs) => (pairs.length === 0 ? 0 : forget.immediate(pairs)),
    retainingApps: async () => retaining.all(),
    expiredIds: async (app, before, limit) => expired.all(app.id, app.orgId, before, limit).map((r) => r.id),
    reportIds: async (q) => {
      const match = reporterMatch(q.who, '?')
      const read = async (before: string | undefined, limit: number) => {
        const conds = ['org_id = ?', match.sql]
        const params: (string | number)[] = [q.orgId, match.value]
        if (q.appId) conds.push('app_id = ?'), params.push(q.appId)
        if (before) conds.push('id < ?'), params.push(before)
        return sqlite.query(`SELECT id, email FROM feedback WHERE ${conds.join(' AND ')} ORDER BY id DESC LIMIT ?`).all(...params, limit) as { id: string; email: string | null }[]
      }
      return match.keep ? narrowedIds(read, match.keep, q.before, q.limit) : (await read(q.before, q.limit)).map((r) => r.id)
    },
    removeReports: async (orgId, ids) => remove.immediate(orgId, ids),
  }
}

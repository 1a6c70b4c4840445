/** PostgreSQL side of modules/audit/repo.ts. */
import type { Clock } from '../../core/clock'
import { cursorTimeFallback, type AuditRepo, type AuditRow } from '../../modules/audit/repo'
import { exec, many, type PgStorage } from './storage'

const COLUMNS = 'id, org_id AS "orgId", actor, action, target_id AS "targetId", data, ip, created_at AS "createdAt"'
import { writeAuditPg } from './audit-writer'

export function createPgAuditRepo(storage: PgStorage, clock: Clock): AuditRepo {
  const { pool } = storage
  return {
    // Oldest first by created_at, ids breaking ties, on audit_log_org_time_idx (see the SQLite side).
    pageForward: async (q) => {
      const cursor = q.after
        ? await many<{ createdAt: number }>(pool, 'SELECT created_at AS "createdAt" FROM audit_log WHERE id = $1 AND org_id IS NOT DISTINCT FROM $2', [q.after, q.orgId])
        : []
      const at = q.after ? (cursor[0] ? Number(cursor[0].createdAt) : cursorTimeFallback(q.after)) : -1
      const from = Math.max(q.since ?? 0, at)
      return q.orgId === null
        ? many<AuditRow>(
            pool,
            `SELECT ${COLUMNS} FROM audit_log WHERE org_id IS NULL AND created_at >= $1 AND (created_at > $2 OR id COLLATE "C" > $3) ORDER BY created_at, id COLLATE "C" LIMIT $4`,
            [from, at, q.after ?? '', q.limit],
          )
        : many<AuditRow>(
            pool,
            `SELECT ${COLUMNS} FROM audit_log WHERE org_id = $1 AND created_at >= $2 AND (created_at > $3 OR id COLLATE "C" > $4) ORDER BY created_at, id COLLATE "C" LIMIT $5`,
            [q.orgId, from, at, q.after ?? '', q.limit],
          )
    },
    // Ids rise with time (core/ids.ts), so the oldest rows are the lowest ids.
    purgeBefore: (before, limit) =>
      exec(pool, 'DELETE FROM audit_log WHERE id IN (SELECT id FROM audit_log WHERE created_at < $1 ORDER BY id COLLATE "C" LIMIT $2)', [before, limit]),
    // One INSERT: its own (autocommit) transaction.
    append: (e) => writeAuditPg(pool, clock, e),
    page: async (q) => {
      const conds: string[] = []
      const params: unknown[] = []
      if (q.orgId) {
        params.push(q.orgId)
        conds.push(`org_id = $${params.length}`)
      } else if (q.orgIds) {
        params.push(q.orgIds)
        conds.push(`org_id = ANY($${params.length}::text[])`)
      }
      if (q.before) {
        params.push(q.before)
        conds.push(`id < $${params.length}`)
      }
      params.push(q.limit)
      const where = conds.length ? `WHERE ${conds.join(' AND ')}` : ''
      return many<AuditRow>(
        pool,
        `SELECT ${COLUMNS} FROM audit_log ${where} ORDER BY id DESC LIMIT $${params.length}`,
        params,
      )
    },
  }
}

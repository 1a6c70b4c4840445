/** PostgreSQL side of modules/audit/repo.ts. */
import type { Clock } from '../../core/clock'
import type { AuditRepo, AuditRow } from '../../modules/audit/repo'
import { many, type PgStorage } from './storage'
import { writeAuditPg } from './audit-writer'

export function createPgAuditRepo(storage: PgStorage, clock: Clock): AuditRepo {
  const { pool } = storage
  return {
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
        `SELECT id, org_id AS "orgId", actor, action, target_id AS "targetId", data, ip, created_at AS "createdAt" FROM audit_log ${where} ORDER BY id DESC LIMIT $${params.length}`,
        params,
      )
    },
  }
}

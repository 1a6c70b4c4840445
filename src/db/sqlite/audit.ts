/** SQLite side of modules/audit/repo.ts. */
import type { Clock } from '../../core/clock'
import type { AuditRepo, AuditRow } from '../../modules/audit/repo'
import type { SqliteStorage } from './storage'
import { sqliteAuditWriter } from './audit-writer'

interface RawAuditRow {
  id: string
  org_id: string | null
  actor: string
  action: string
  target_id: string | null
  data: string
  ip: string | null
  created_at: number
}

const toRow = (r: RawAuditRow): AuditRow => ({ id: r.id, orgId: r.org_id, actor: r.actor, action: r.action, targetId: r.target_id, data: r.data, ip: r.ip, createdAt: r.created_at })

export function createSqliteAuditRepo({ sqlite }: SqliteStorage, clock: Clock): AuditRepo {
  const write = sqliteAuditWriter(sqlite, clock)
  // audit_log_org_idx (org_id, id) serves the forward page; created_at is filtered on the way.
  const forward = sqlite.prepare<RawAuditRow, [string, string, number, number]>(
    'SELECT * FROM audit_log WHERE org_id = ?1 AND id > ?2 AND created_at >= ?3 ORDER BY id LIMIT ?4',
  )
  const instanceForward = sqlite.prepare<RawAuditRow, [string, number, number]>(
    'SELECT * FROM audit_log WHERE org_id IS NULL AND id > ?1 AND created_at >= ?2 ORDER BY id LIMIT ?3',
  )
  // Ids rise with time (core/ids.ts), so the oldest rows are the lowest ids.
  const purge = sqlite.prepare<unknown, [number, number]>('DELETE FROM audit_log WHERE id IN (SELECT id FROM audit_log WHERE created_at < ?1 ORDER BY id LIMIT ?2)')
  return {
    pageForward: async (q) =>
      (q.orgId === null ? instanceForward.all(q.after ?? '', q.since ?? 0, q.limit) : forward.all(q.orgId, q.after ?? '', q.since ?? 0, q.limit)).map(toRow),
    purgeBefore: async (before, limit) => purge.run(before, limit).changes,
    // One INSERT: its own (autocommit) transaction.
    append: async (e) => write(e),
    page: async (q) => {
      const conds: string[] = []
      const params: (string | number)[] = []
      if (q.orgId) {
        conds.push('org_id = ?')
        params.push(q.orgId)
      } else if (q.orgIds) {
        conds.push(`org_id IN (${q.orgIds.map(() => '?').join(',') || 'NULL'})`)
        params.push(...q.orgIds)
      }
      if (q.before) {
        conds.push('id < ?')
        params.push(q.before)
      }
      const where = conds.length ? `WHERE ${conds.join(' AND ')}` : ''
      const rows = sqlite.query(`SELECT * FROM audit_log ${where} ORDER BY id DESC LIMIT ?`).all(...params, q.limit) as RawAuditRow[]
      return rows.map(toRow)
    },
  }
}

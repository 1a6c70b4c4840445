/** SQLite side of modules/audit/repo.ts. */
import type { Clock } from '../../core/clock'
import { cursorTimeFallback, type AuditRepo, type AuditRow } from '../../modules/audit/repo'
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
  // Oldest first is by created_at, ids breaking ties (AuditForwardQuery in modules/audit/repo.ts), on
  // audit_log_org_time_idx: from the later of `since` and the cursor's time, then past the cursor row.
  const forward = sqlite.prepare<RawAuditRow, [string, number, number, string, number]>(
    'SELECT * FROM audit_log WHERE org_id = ?1 AND created_at >= ?2 AND (created_at > ?3 OR id > ?4) ORDER BY created_at, id LIMIT ?5',
  )
  const instanceForward = sqlite.prepare<RawAuditRow, [number, number, string, number]>(
    'SELECT * FROM audit_log WHERE org_id IS NULL AND created_at >= ?1 AND (created_at > ?2 OR id > ?3) ORDER BY created_at, id LIMIT ?4',
  )
  const cursorTime = sqlite.prepare<{ created_at: number }, [string, string | null]>('SELECT created_at FROM audit_log WHERE id = ?1 AND org_id IS ?2')
  // Ids rise with time (core/ids.ts), so the oldest rows are the lowest ids.
  const purge = sqlite.prepare<unknown, [number, number]>('DELETE FROM audit_log WHERE id IN (SELECT id FROM audit_log WHERE created_at < ?1 ORDER BY id LIMIT ?2)')
  return {
    pageForward: async (q) => {
      const at = q.after ? (cursorTime.get(q.after, q.orgId)?.created_at ?? cursorTimeFallback(q.after)) : -1
      const from = Math.max(q.since ?? 0, at)
      const rows = q.orgId === null ? instanceForward.all(from, at, q.after ?? '', q.limit) : forward.all(q.orgId, from, at, q.after ?? '', q.limit)
      return rows.map(toRow)
    },
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

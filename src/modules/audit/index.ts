/**
 * The audit log: who did what to which Org's settings and secrets, from the dashboard, the CLI or the
 * system. Rows carry ids and setting names, never secret values. record() runs inside the caller's
 * transaction when there is one, so an action and its audit row commit together.
 */
import type { Database } from 'bun:sqlite'
import type { Clock } from '../../core/clock'
import { isoUtc } from '../../core/clock'
import { newId } from '../../core/ids'

import type { AuditEntry } from './entry'
export type { ActedBy, AuditEntry } from './entry'

export interface AuditRecord {
  id: string
  orgId: string | null
  actor: string
  action: string
  targetId: string | null
  data: Record<string, unknown>
  ip: string | null
  createdAt: string
}

interface AuditRow {
  id: string
  org_id: string | null
  actor: string
  action: string
  target_id: string | null
  data: string
  ip: string | null
  created_at: number
}

export function createAuditLog(sqlite: Database, clock: Clock) {
  const insert = sqlite.query(
    'INSERT INTO audit_log (id, org_id, actor, action, target_id, data, ip, created_at) VALUES ($id, $orgId, $actor, $action, $targetId, $data, $ip, $createdAt)',
  )
  return {
    /** Appends one entry; returns its id. */
    record(e: AuditEntry): string {
      const id = newId(clock)
      insert.run({
        id,
        orgId: e.orgId,
        actor: e.actor,
        action: e.action,
        targetId: e.targetId ?? null,
        data: JSON.stringify(e.data ?? {}),
        ip: e.ip ?? null,
        createdAt: clock.now(),
      })
      return id
    },

    /** Newest first, cursor-paged by id; `orgIds` null means every Org (the instance owner). */
    list(orgIds: string[] | null, q: { cursor?: string; limit: number; orgId?: string }): { data: AuditRecord[]; nextCursor: string | null } {
      const conds: string[] = []
      const params: (string | number)[] = []
      if (q.orgId) {
        conds.push('org_id = ?')
        params.push(q.orgId)
      } else if (orgIds) {
        conds.push(`org_id IN (${orgIds.map(() => '?').join(',') || 'NULL'})`)
        params.push(...orgIds)
      }
      if (q.cursor) {
        conds.push('id < ?')
        params.push(q.cursor)
      }
      const where = conds.length ? `WHERE ${conds.join(' AND ')}` : ''
      const rows = sqlite.query(`SELECT * FROM audit_log ${where} ORDER BY id DESC LIMIT ?`).all(...params, q.limit + 1) as AuditRow[]
      const more = rows.length > q.limit
      const page = more ? rows.slice(0, q.limit) : rows
      return {
        data: page.map((r) => ({
          id: r.id,
          orgId: r.org_id,
          actor: r.actor,
          action: r.action,
          targetId: r.target_id,
          data: JSON.parse(r.data) as Record<string, unknown>,
          ip: r.ip,
          createdAt: isoUtc(r.created_at),
        })),
        nextCursor: more ? page[page.length - 1].id : null,
      }
    },
  }
}
export type AuditLog = ReturnType<typeof createAuditLog>

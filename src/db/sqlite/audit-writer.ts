/**
 * Appends audit rows on a SQLite connection, inside whatever transaction the calling repository method
 * has open: a change and its audit row commit together (modules/audit/index.ts).
 */
import type { Database } from 'bun:sqlite'
import type { Clock } from '../../core/clock'
import { newId } from '../../core/ids'
import type { AuditEntry } from '../../modules/audit/entry'

export type SqliteAuditWriter = (e: AuditEntry) => string

export function sqliteAuditWriter(sqlite: Database, clock: Clock): SqliteAuditWriter {
  const insert = sqlite.query(
    'INSERT INTO audit_log (id, org_id, actor, action, target_id, data, ip, created_at) VALUES ($id, $orgId, $actor, $action, $targetId, $data, $ip, $createdAt)',
  )
  return (e) => {
    const id = newId(clock)
    insert.run({ id, orgId: e.orgId, actor: e.actor, action: e.action, targetId: e.targetId ?? null, data: JSON.stringify(e.data ?? {}), ip: e.ip ?? null, createdAt: clock.now() })
    return id
  }
}

/** The audit rows of a change: fixed, or computed from what the change returned. */
export type AuditRows<T> = AuditEntry[] | ((out: T) => AuditEntry[])

/**
 * `audited(audit, change)`: `change` and its audit rows in one IMMEDIATE transaction (the write lock before
 * the first read); a change that reports `false` (nothing written) records nothing.
 */
export function sqliteAudited(sqlite: Database, clock: Clock) {
  const writeAudit = sqliteAuditWriter(sqlite, clock)
  return <T>(audit: AuditRows<T>, change: () => T): T =>
    sqlite
      .transaction(() => {
        const out = change()
        if (out !== false) for (const e of typeof audit === 'function' ? audit(out) : audit) writeAudit(e)
        return out
      })
      .immediate()
}

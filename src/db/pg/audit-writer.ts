/**
 * Appends audit rows on a PostgreSQL connection, inside the transaction the calling repository method
 * has open: a change and its audit row commit together (modules/audit/index.ts).
 */
import type { Clock } from '../../core/clock'
import { newId } from '../../core/ids'
import type { AuditEntry } from '../../modules/audit/entry'
import type { PoolClient } from 'pg'
import type { PgDb, PgQueryable, PgStorage } from './storage'

export async function writeAuditPg(q: PgQueryable, clock: Clock, e: AuditEntry): Promise<string> {
  const id = newId(clock)
  await q.query('INSERT INTO audit_log (id, org_id, actor, action, target_id, data, ip, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)', [
    id, e.orgId, e.actor, e.action, e.targetId ?? null, JSON.stringify(e.data ?? {}), e.ip ?? null, clock.now(),
  ])
  return id
}

/** The audit rows of a change: fixed, or computed from what the change returned. */
export type AuditRows<T> = AuditEntry[] | ((out: T) => AuditEntry[])

/**
 * `audited(audit, change)`: `change` and its audit rows in one transaction; a change that reports `false`
 * (nothing written) records nothing.
 */
export function pgAudited(storage: PgStorage, clock: Clock) {
  return <T>(audit: AuditRows<T>, change: (client: PoolClient, db: PgDb) => Promise<T>): Promise<T> =>
    storage.tx(async (client, db) => {
      const out = await change(client, db)
      if (out !== false) for (const e of typeof audit === 'function' ? audit(out) : audit) await writeAuditPg(client, clock, e)
      return out
    })
}

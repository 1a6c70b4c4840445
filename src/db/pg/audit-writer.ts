/**
 * Appends audit rows on a PostgreSQL connection, inside the transaction the calling repository method
 * has open: a change and its audit row commit together (modules/audit/index.ts).
 */
import type { Clock } from '../../core/clock'
import { newId } from '../../core/ids'
import type { AuditEntry } from '../../modules/audit/entry'
import type { PgQueryable } from './storage'

export async function writeAuditPg(q: PgQueryable, clock: Clock, e: AuditEntry): Promise<string> {
  const id = newId(clock)
  await q.query('INSERT INTO audit_log (id, org_id, actor, action, target_id, data, ip, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)', [
    id, e.orgId, e.actor, e.action, e.targetId ?? null, JSON.stringify(e.data ?? {}), e.ip ?? null, clock.now(),
  ])
  return id
}

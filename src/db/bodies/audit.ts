/** An audit row in the transaction of its change, written once for both dialects (src/db/tx-body.ts). */
import type { Clock } from '../../core/clock'
import { newId } from '../../core/ids'
import type { AuditEntry } from '../../modules/audit/entry'
import { run, sql, type Body } from '../tx-body'

const INSERT_AUDIT = sql('INSERT INTO audit_log (id, org_id, actor, action, target_id, data, ip, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)')

/** Appends `e` to the audit log; the row's id. */
export function* writeAudit(clock: Clock, e: AuditEntry): Body<string> {
  const id = newId(clock)
  yield* run(INSERT_AUDIT, id, e.orgId, e.actor, e.action, e.targetId ?? null, JSON.stringify(e.data ?? {}), e.ip ?? null, clock.now())
  return id
}

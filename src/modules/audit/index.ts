/**
 * The audit log: who did what to which Org's settings and secrets, from the dashboard, the CLI or the
 * system. Rows carry ids and setting names, never secret values. `record()` appends in its own
 * transaction; a change that must commit with its audit row passes the entries into its own repository
 * method (src/db/{sqlite,pg}/audit-writer.ts), so an action and its audit row commit together.
 */
import type { Clock } from '../../core/clock'
import { isoUtc } from '../../core/clock'
import type { AuditRepo } from './repo'
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

export function createAuditLog(repo: AuditRepo, clock: Clock) {
  return {
    /** Appends one entry in its own transaction; returns its id. */
    record: (e: AuditEntry): Promise<string> => repo.append(e),

    /** Newest first, cursor-paged by id; `orgIds` null means every Org (the instance owner). */
    async list(orgIds: string[] | null, q: { cursor?: string; limit: number; orgId?: string }): Promise<{ data: AuditRecord[]; nextCursor: string | null }> {
      const rows = await repo.page({ orgId: q.orgId, orgIds, before: q.cursor, limit: q.limit + 1 })
      const more = rows.length > q.limit
      const page = more ? rows.slice(0, q.limit) : rows
      return {
        data: page.map((r) => ({
          id: r.id,
          orgId: r.orgId,
          actor: r.actor,
          action: r.action,
          targetId: r.targetId,
          data: JSON.parse(r.data) as Record<string, unknown>,
          ip: r.ip,
          createdAt: isoUtc(r.createdAt),
        })),
        nextCursor: more ? page[page.length - 1].id : null,
      }
    },
  }
}
export type AuditLog = ReturnType<typeof createAuditLog>

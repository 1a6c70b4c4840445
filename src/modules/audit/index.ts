/**
 * The audit log: who did what to which Org's settings and secrets, from the dashboard, the CLI or the
 * system. Rows carry ids and setting names, never secret values. `record()` appends in its own
 * transaction; a change that must commit with its audit row passes the entries into its own repository
 * method (src/db/{sqlite,pg}/audit-writer.ts), so an action and its audit row commit together.
 */
import type { Clock } from '../../core/clock'
import { isoUtc } from '../../core/clock'
import type { AuditRepo, AuditRow } from './repo'

/** Rows one purge statement deletes at most (each its own short transaction, so writers never wait long). */
export const AUDIT_PURGE_BATCH = 1000
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

const present = (r: AuditRow): AuditRecord => ({
  id: r.id,
  orgId: r.orgId,
  actor: r.actor,
  action: r.action,
  targetId: r.targetId,
  data: JSON.parse(r.data) as Record<string, unknown>,
  ip: r.ip,
  createdAt: isoUtc(r.createdAt),
})

export function createAuditLog(repo: AuditRepo, clock: Clock) {
  return {
    /**
     * One Org's log oldest first (GET /v1/audit, `fixloop audit export`), or with `orgId` null the
     * instance's own (`fixloop audit export --instance`): rows after the cursor (the previous page's last
     * id) created at or after `since` (epoch ms); nextCursor is null on the last page.
     */
    async export(orgId: string | null, q: { after?: string; since?: number; limit: number }): Promise<{ data: AuditRecord[]; nextCursor: string | null }> {
      const rows = await repo.pageForward({ orgId, after: q.after, since: q.since, limit: q.limit + 1 })
      const more = rows.length > q.limit
      const page = more ? rows.slice(0, q.limit) : rows
      return { data: page.map(present), nextCursor: more ? page[page.length - 1].id : null }
    },

    /** Deletes rows older than `days` (FIXLOOP_AUDIT_RETENTION_DAYS; 0 keeps them), in batches; how many. */
    async purgeOlderThan(days: number): Promise<number> {
      if (days <= 0) return 0
      const before = clock.now() - days * 24 * 3600_000
      let total = 0
      for (;;) {
        const n = await repo.purgeBefore(before, AUDIT_PURGE_BATCH)
        total += n
        if (n < AUDIT_PURGE_BATCH) return total
      }
    },

    /** Appends one entry in its own transaction; returns its id. */
    record: (e: AuditEntry): Promise<string> => repo.append(e),

    /** Newest first, cursor-paged by id; `orgIds` null means every Org (the instance owner). */
    async list(orgIds: string[] | null, q: { cursor?: string; limit: number; orgId?: string }): Promise<{ data: AuditRecord[]; nextCursor: string | null }> {
      const rows = await repo.page({ orgId: q.orgId, orgIds, before: q.cursor, limit: q.limit + 1 })
      const more = rows.length > q.limit
      const page = more ? rows.slice(0, q.limit) : rows
      return { data: page.map(present), nextCursor: more ? page[page.length - 1].id : null }
    },
  }
}
export type AuditLog = ReturnType<typeof createAuditLog>

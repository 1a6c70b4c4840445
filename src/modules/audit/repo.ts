/**
 * The audit log's rows: one append in its own transaction (a change that must commit with its audit row
 * passes `AuditEntry[]` into its own repository method instead, written by src/db/{sqlite,pg}/audit-writer.ts)
 * and the newest-first page read.
 *
 * The port: one interface, a SQLite (src/db/sqlite/audit.ts) and a PostgreSQL (src/db/pg/audit.ts)
 * implementation, both held to test/repos/audit.test.ts.
 */
import type { auditLog } from '../../db/schema'
import type { AuditEntry } from './entry'

export type AuditRow = typeof auditLog.$inferSelect

export interface AuditPageQuery {
  /** Only this Org's rows (wins over `orgIds`). */
  orgId?: string
  /** Only rows of these Orgs (an empty list: none); null or absent: every row. */
  orgIds?: string[] | null
  /** Rows with an id below this one. */
  before?: string
  limit: number
}

/**
 * One Org's rows, or the instance's own, oldest first (GET /v1/audit, `fixloop audit export`): ordered by
 * created_at, then id. Not by id alone: ids sort by time only within one process (4 bytes of seconds,
 * then bytes random per process, core/ids.ts), and the CLI writes rows beside the server, so an App the
 * CLI created within the second of its Org listed before the Org.
 */
export interface AuditForwardQuery {
  /** The Org's rows; null: the instance's own (no Org: sign-ins, step-ups, TOTP, sessions, admins). */
  orgId: string | null
  /** Rows after this one (the previous page's last id) in that order. */
  after?: string
  /** Rows created at or after this epoch ms. */
  since?: number
  limit: number
}

export interface AuditRepo {
  /** Appends one entry in its own transaction; returns its id. */
  append(e: AuditEntry): Promise<string>
  /** Newest first (by id), at most `limit` rows. */
  page(q: AuditPageQuery): Promise<AuditRow[]>
  /** Oldest first (created_at, then id), at most `limit` rows of one Org (or of none: the instance's own). */
  pageForward(q: AuditForwardQuery): Promise<AuditRow[]>
  /** Deletes up to `limit` rows created before `before` (epoch ms), oldest first; how many went. */
  purgeBefore(before: number, limit: number): Promise<number>
}


/**
 * Where a forward page starts when its cursor row is gone (purged by retention) or was never this Org's:
 * the second its id was made in (an id starts with 4 bytes of unix seconds). No cursor: before every row.
 */
export function cursorTimeFallback(after: string | undefined): number {
  if (!after) return -1
  const seconds = Number.parseInt(after.slice(0, 8), 16)
  return Number.isFinite(seconds) ? seconds * 1000 : -1
}

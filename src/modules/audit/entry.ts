/** What an audit row says; written by modules/audit/index.ts, or by a repository in the change's own transaction. */

/** Who made a change and from where: "admin:<id>", "key:<id>" (an sk_ key), "cli" or "system". */
export interface ActedBy {
  actor: string
  ip?: string | null
  /** How the dashboard's key list names this actor as a key's creator (default: `actor`). */
  label?: string
  /** Merged into the entry's data (e.g. `{ via: 'serve --demo' }`). */
  note?: Record<string, unknown>
}

export interface AuditEntry {
  orgId: string | null
  /** "admin:<id>", "key:<id>", "cli" or "system". */
  actor: string
  action: string
  targetId?: string | null
  data?: Record<string, unknown>
  ip?: string | null
}

/** The entry for `action` on `targetId` by `by`, or null when nobody is to be recorded. */
export function auditEntry(by: ActedBy | undefined, orgId: string | null, action: string, targetId: string | null, data: Record<string, unknown> = {}): AuditEntry | null {
  if (!by) return null
  return { orgId, actor: by.actor, action, targetId, data: { ...data, ...by.note }, ip: by.ip ?? null }
}

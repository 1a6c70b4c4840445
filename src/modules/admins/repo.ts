/**
 * Dashboard administrators' rows: admins, Org memberships, the first-run setup token, sessions, and the
 * `sk_` keys' last use (api_key_activity). The rules (passwords, TOTP codes, session lifetimes) stay in
 * service.ts and sessions.ts; each write here is one transaction.
 *
 * The port: one interface, a SQLite (src/db/sqlite/admins.ts) and a PostgreSQL (src/db/pg/admins.ts)
 * implementation, both held to test/repos/admins.test.ts.
 */
import type { adminSessions, admins } from '../../db/schema'
import type { AuditEntry } from '../audit/entry'

export type AdminRow = typeof admins.$inferSelect
/** A session as the sign-in code reads it (its step-up re-authentication is read and written on its own). */
export type SessionRow = Omit<typeof adminSessions.$inferSelect, 'reauthPurpose' | 'reauthAt' | 'idTokenSealed'>
export type OrgRole = 'owner' | 'member'

export interface Membership {
  orgId: string
  role: OrgRole
}

/** What an admin was in an Org before a role change: its membership's role, or the instance's owner. */
export type RoleBefore = OrgRole | 'instance_owner'

/**
 * A role change's outcome: 'changed' (written with its audit rows) or 'unchanged' (already that role,
 * nothing written); or nothing written because there is no such admin ('missing'), the admin is not in
 * the Org ('not_member'), it is the instance's only owner ('last_owner') or the Org's only owner ('last_org_owner').
 */
export type RoleChange = { outcome: 'changed' | 'unchanged'; from: RoleBefore } | { outcome: 'missing' | 'not_member' | 'last_owner' | 'last_org_owner' }

export interface AdminsRepo {
  count(): Promise<number>
  byEmail(email: string): Promise<AdminRow | undefined>
  byId(adminId: string): Promise<AdminRow | undefined>
  /** The admin's Orgs and roles, by Org id. */
  memberships(adminId: string): Promise<Membership[]>
  orgExists(orgId: string): Promise<boolean>
  /** Inserts the admin and its memberships together; false (nothing written) when the email is taken. */
  insertAdmin(row: AdminRow, memberships: Membership[]): Promise<boolean>
  /** Sets the password hash and revokes every live session of the admin, together. */
  setPassword(adminId: string, passwordHash: string, now: number): Promise<void>
  /**
   * Compare-and-set of the last used TOTP step: true when `step` is later than the stored one (now stored).
   * Of two sign-ins racing with the same code, exactly one gets true.
   */
  claimTotpStep(adminId: string, step: number): Promise<boolean>
  setTotp(adminId: string, sealedSecret: string | null, lastStep: number | null, now: number): Promise<void>
  /** The Org's admins, by email. */
  listForOrg(orgId: string): Promise<{ id: string; email: string; role: OrgRole; createdAt: number }[]>
  /** Drops every unused setup token and stores this one. */
  replaceSetupToken(tokenHash: string, now: number, expiresAt: number): Promise<void>
  /**
   * Marks the token used and inserts the instance owner, together; false (nothing written) when the token
   * is unknown, used, expired at `now`, or any admin already exists.
   */
  redeemSetupToken(tokenHash: string, now: number, owner: AdminRow): Promise<boolean>

  /** A new (unrevoked) session; `idTokenSealed`: a single sign-on session's ID token, sealed. */
  insertSession(row: Omit<SessionRow, 'revokedAt'> & { idTokenSealed?: string | null }): Promise<void>
  /** The sealed ID token of the session when it is the admin's and unrevoked (an SSO session), else undefined. */
  sessionIdToken(adminId: string, sessionId: string): Promise<string | undefined>
  sessionByTokenHash(tokenHash: string): Promise<SessionRow | undefined>
  touchSession(sessionId: string, now: number): Promise<void>
  /** Unrevoked, unexpired sessions seen after `seenAfter`, newest first, at most 100. */
  liveSessions(adminId: string, now: number, seenAfter: number): Promise<SessionRow[]>
  /**
   * Deletes the sessions that ended before `before` (revoked then, expired then, or idle since `idleBefore`):
   * how many. src/db/sql/dead-sessions.ts.
   */
  purgeDeadSessions(before: number, idleBefore: number): Promise<number>
  /** Revokes one of the admin's sessions (and forgets its ID token); false when it is not theirs or already revoked. */
  revokeSession(adminId: string, sessionId: string, now: number): Promise<boolean>
  /**
   * Records a step-up re-authentication (`purpose` at `at`) on a live session of the admin, replacing any
   * earlier one; false (nothing written) when the session is not theirs, revoked or expired at `at`.
   */
  markReauthenticated(sessionId: string, adminId: string, purpose: string, at: number): Promise<boolean>
  /**
   * Uses the session's re-authentication up, once: clears it and answers true when it is for `purpose`
   * and was made at `notBefore` or later, on an unrevoked session. One statement, so of two requests
   * racing for the same re-authentication (on any node) exactly one gets true.
   */
  consumeReauthentication(sessionId: string, purpose: string, notBefore: number): Promise<boolean>
  /** The session's unused re-authentication, if any (whatever its age). */
  reauthentication(sessionId: string): Promise<{ purpose: string; at: number } | undefined>

  /** Remembers when an `sk_` key was last used. */
  keyUsed(keyId: string, at: number): Promise<void>
  /** Every admin, by email (`fixloop admin list`). */
  all(): Promise<AdminRow[]>
  /**
   * Removes the admin, its sessions, memberships and read marks, with `audit`, in one transaction:
   * 'last_owner' (nothing written) when it is the instance's only owner, 'missing' when there is no such admin.
   */
  remove(adminId: string, audit: AuditEntry[]): Promise<'removed' | 'last_owner' | 'missing'>
  /**
   * Sets the admin's role in the Org, with `audit(from)`, in one transaction. A member or Org owner gets
   * its membership's role changed; an instance owner stops owning the instance and keeps only this Org,
   * with this role. Refused (nothing written) for the instance's only owner and the Org's only owner; on
   * PostgreSQL the owners' rows are locked first (as `remove` does), so two owners demoting each other
   * at once leave one.
   */
  setRole(adminId: string, orgId: string, role: OrgRole, audit: (from: RoleBefore) => AuditEntry[], now: number): Promise<RoleChange>
}


/** SQLite side of modules/admins/repo.ts. */
import type { AdminRow, AdminsRepo, Membership, RoleBefore, RoleChange, SessionRow } from '../../modules/admins/repo'
import type { SqliteStorage } from './storage'
import type { Clock } from '../../core/clock'
import { sqliteAudited } from './audit-writer'
import { otherOwnersSql, removeAdminSql } from '../sql/admin-removal'
import { deadSessionsSql } from '../sql/dead-sessions'
import { leaveInstanceSql, membershipSql, otherOrgOwnersSql, setMembershipRoleSql } from '../sql/admin-role'

const ADMIN_COLUMNS =
  'id, email, password_hash AS passwordHash, is_owner AS isOwner, totp_secret_enc AS totpSecretEnc, totp_last_step AS totpLastStep, created_at AS createdAt, updated_at AS updatedAt'
const SESSION_COLUMNS =
  'id, token_hash AS tokenHash, admin_id AS adminId, csrf_token AS csrfToken, user_agent AS userAgent, ip, created_at AS createdAt, last_seen_at AS lastSeenAt, expires_at AS expiresAt, revoked_at AS revokedAt'

/** SQLite hands `is_owner` back as 0/1. */
const admin = (row: (Omit<AdminRow, 'isOwner'> & { isOwner: number }) | null): AdminRow | undefined => (row ? { ...row, isOwner: row.isOwner === 1 } : undefined)

export function createSqliteAdminsRepo({ sqlite }: SqliteStorage, clock: Clock): AdminsRepo {
  const audited = sqliteAudited(sqlite, clock)
  const allAdmins = sqlite.query(`SELECT ${ADMIN_COLUMNS} FROM admins ORDER BY email`)
  const otherOwners = sqlite.query(otherOwnersSql('?'))
  const removal = removeAdminSql('?').map((sql) => sqlite.query(sql))
  const membership = sqlite.query(membershipSql('?1', '?2'))
  const otherOrgOwners = sqlite.query(otherOrgOwnersSql('?1', '?2'))
  const setMembershipRole = sqlite.query(setMembershipRoleSql('?1', '?2', '?3'))
  const leaveInstance = sqlite.query(leaveInstanceSql('?'))
  const byEmail = sqlite.query(`SELECT ${ADMIN_COLUMNS} FROM admins WHERE email = ?`)
  const byId = sqlite.query(`SELECT ${ADMIN_COLUMNS} FROM admins WHERE id = ?`)
  const count = sqlite.query('SELECT COUNT(*) AS n FROM admins')
  const memberships = sqlite.query('SELECT org_id AS orgId, role FROM admin_memberships WHERE admin_id = ? ORDER BY org_id')
  const orgExists = sqlite.query('SELECT 1 FROM orgs WHERE id = ?')
  const insertAdmin = sqlite.query('INSERT INTO admins (id, email, password_hash, is_owner, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)')
  const addMember = sqlite.query('INSERT INTO admin_memberships (admin_id, org_id, role, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (admin_id, org_id) DO UPDATE SET role = excluded.role')
  const claimTotpStep = sqlite.query('UPDATE admins SET totp_last_step = ?1 WHERE id = ?2 AND (totp_last_step IS NULL OR totp_last_step < ?3)')
  const byToken = sqlite.query(`SELECT ${SESSION_COLUMNS} FROM admin_sessions WHERE token_hash = ?`)
  const touch = sqlite.query('UPDATE admin_sessions SET last_seen_at = ? WHERE id = ?')
  const keyUsed = sqlite.query('INSERT INTO api_key_activity (key_id, last_used_at) VALUES (?, ?) ON CONFLICT (key_id) DO UPDATE SET last_used_at = excluded.last_used_at')

  const adminCount = () => (count.get() as { n: number }).n
  const insert = (row: AdminRow, members: Membership[]) => {
    insertAdmin.run(row.id, row.email, row.passwordHash, row.isOwner ? 1 : 0, row.createdAt, row.updatedAt)
    for (const m of members) addMember.run(row.id, m.orgId, m.role, row.createdAt)
  }

  return {
    count: async () => adminCount(),
    byEmail: async (email) => admin(byEmail.get(email) as never),
    byId: async (adminId) => admin(byId.get(adminId) as never),
    memberships: async (adminId) => memberships.all(adminId) as Membership[],
    orgExists: async (orgId) => !!orgExists.get(orgId),
    insertAdmin: async (row, members) =>
      sqlite
        .transaction(() => {
          if (byEmail.get(row.email)) return false
          insert(row, members)
          return true
        })
        .immediate(),
    setPassword: async (adminId, passwordHash, now) =>
      sqlite.transaction(() => {
        sqlite.query('UPDATE admins SET password_hash = ?, updated_at = ? WHERE id = ?').run(passwordHash, now, adminId)
        sqlite.query('UPDATE admin_sessions SET revoked_at = ?, id_token_sealed = NULL WHERE admin_id = ? AND revoked_at IS NULL').run(now, adminId)
      })(),
    // One conditional write: of two sign-ins racing with the same code, one wins.
    claimTotpStep: async (adminId, step) => claimTotpStep.run(step, adminId, step).changes === 1,
    setTotp: async (adminId, sealedSecret, lastStep, now) =>
      void sqlite.query('UPDATE admins SET totp_secret_enc = ?, totp_last_step = ?, updated_at = ? WHERE id = ?').run(sealedSecret, lastStep, now, adminId),
    listForOrg: async (orgId) =>
      sqlite
        .query('SELECT a.id, a.email, m.role, a.created_at AS createdAt FROM admin_memberships m JOIN admins a ON a.id = m.admin_id WHERE m.org_id = ? ORDER BY a.email')
        .all(orgId) as { id: string; email: string; role: Membership['role']; createdAt: number }[],
    replaceSetupToken: async (tokenHash, now, expiresAt) =>
      sqlite.transaction(() => {
        sqlite.query('DELETE FROM admin_setup_tokens WHERE used_at IS NULL').run()
        sqlite.query('INSERT INTO admin_setup_tokens (token_hash, created_at, expires_at) VALUES (?, ?, ?)').run(tokenHash, now, expiresAt)
      })(),
    redeemSetupToken: async (tokenHash, now, owner) =>
      sqlite
        .transaction(() => {
          const row = sqlite.query('SELECT * FROM admin_setup_tokens WHERE token_hash = ?').get(tokenHash) as { expires_at: number; used_at: number | null } | null
          if (!row || row.used_at !== null || row.expires_at <= now || adminCount() > 0) return false
          sqlite.query('UPDATE admin_setup_tokens SET used_at = ? WHERE token_hash = ?').run(now, tokenHash)
          insert({ ...owner, isOwner: true }, [])
          return true
        })
        .immediate(),

    insertSession: async (r) =>
      void sqlite
        .query('INSERT INTO admin_sessions (id, token_hash, admin_id, csrf_token, user_agent, ip, created_at, last_seen_at, expires_at, id_token_sealed) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)')
        .run(r.id, r.tokenHash, r.adminId, r.csrfToken, r.userAgent, r.ip, r.createdAt, r.lastSeenAt, r.expiresAt, r.idTokenSealed ?? null),
    sessionIdToken: async (adminId, sessionId) =>
      (sqlite.query('SELECT id_token_sealed AS sealed FROM admin_sessions WHERE id = ? AND admin_id = ? AND revoked_at IS NULL').get(sessionId, adminId) as { sealed: string | null } | null)?.sealed ?? undefined,
    sessionByTokenHash: async (tokenHash) => (byToken.get(tokenHash) as SessionRow | null) ?? undefined,
    touchSession: async (sessionId, now) => void touch.run(now, sessionId),
    liveSessions: async (adminId, now, seenAfter) =>
      sqlite
        .query(`SELECT ${SESSION_COLUMNS} FROM admin_sessions WHERE admin_id = ? AND revoked_at IS NULL AND expires_at > ? AND last_seen_at > ? ORDER BY id DESC LIMIT 100`)
        .all(adminId, now, seenAfter) as SessionRow[],
    revokeSession: async (adminId, sessionId, now) =>
      sqlite.query('UPDATE admin_sessions SET revoked_at = ?, id_token_sealed = NULL WHERE id = ? AND admin_id = ? AND revoked_at IS NULL').run(now, sessionId, adminId).changes === 1,
    markReauthenticated: async (sessionId, adminId, purpose, at) =>
      sqlite
        .query('UPDATE admin_sessions SET reauth_purpose = ?, reauth_at = ? WHERE id = ? AND admin_id = ? AND revoked_at IS NULL AND expires_at > ?')
        .run(purpose, at, sessionId, adminId, at).changes === 1,
    consumeReauthentication: async (sessionId, purpose, notBefore) =>
      sqlite
        .query('UPDATE admin_sessions SET reauth_purpose = NULL, reauth_at = NULL WHERE id = ? AND reauth_purpose = ? AND reauth_at >= ? AND revoked_at IS NULL')
        .run(sessionId, purpose, notBefore).changes === 1,
    reauthentication: async (sessionId) =>
      (sqlite.query('SELECT reauth_purpose AS purpose, reauth_at AS at FROM admin_sessions WHERE id = ? AND reauth_purpose IS NOT NULL AND reauth_at IS NOT NULL').get(sessionId) as {
        purpose: string
        at: number
      } | null) ?? undefined,

    keyUsed: async (keyId, at) => void sqlite.transaction(() => keyUsed.run(keyId, at)).immediate(),
    all: async () => (allAdmins.all() as (Omit<AdminRow, 'isOwner'> & { isOwner: number })[]).map((r) => admin(r)!),
    remove: async (adminId, audit) => {
      let outcome: 'removed' | 'last_owner' | 'missing' = 'missing'
      audited(audit, () => {
        const row = admin(byId.get(adminId) as (Omit<AdminRow, 'isOwner'> & { isOwner: number }) | null)
        if (!row) return false
        if (row.isOwner && (otherOwners.get(adminId) as { n: number }).n === 0) return ((outcome = 'last_owner'), false)
        for (const stmt of removal) stmt.run(adminId)
        outcome = 'removed'
        return true
      })
      return outcome
    },
    // One IMMEDIATE transaction: the write lock is taken before the owners are counted, so no other
    // change of owners comes between the count and the write.
    purgeDeadSessions: async (before, idleBefore) => sqlite.query(deadSessionsSql('?1', '?2')).run(before, idleBefore).changes,
    setRole: async (adminId, orgId, role, audit, now) => {
      let result: RoleChange = { outcome: 'missing' }
      audited(
        (from: RoleBefore | false) => (from === false ? [] : audit(from)),
        (): RoleBefore | false => {
          const row = admin(byId.get(adminId) as (Omit<AdminRow, 'isOwner'> & { isOwner: number }) | null)
          if (!row) return false
          if (row.isOwner) {
            if ((otherOwners.get(adminId) as { n: number }).n === 0) return ((result = { outcome: 'last_owner' }), false)
            sqlite.query('UPDATE admins SET is_owner = 0, updated_at = ? WHERE id = ?').run(now, adminId)
            leaveInstance.run(adminId)
            addMember.run(adminId, orgId, role, now)
            result = { outcome: 'changed', from: 'instance_owner' }
            return 'instance_owner'
          }
          const from = (membership.get(adminId, orgId) as { role: Membership['role'] } | null)?.role
          if (!from) return ((result = { outcome: 'not_member' }), false)
          if (from === role) return ((result = { outcome: 'unchanged', from }), false)
          if (from === 'owner' && (otherOrgOwners.get(adminId, orgId) as { n: number }).n === 0) return ((result = { outcome: 'last_org_owner' }), false)
          setMembershipRole.run(role, adminId, orgId)
          result = { outcome: 'changed', from }
          return from
        },
      )
      return result
    },
  }
}

/** PostgreSQL side of modules/admins/repo.ts. */
import type { AdminRow, AdminsRepo, Membership, RoleBefore, RoleChange, SessionRow } from '../../modules/admins/repo'
import { exec, isUniqueViolation, many, one, type PgQueryable, type PgStorage } from './storage'
import type { Clock } from '../../core/clock'
import { pgAudited } from './audit-writer'
import { otherOwnersSql, removeAdminSql } from '../sql/admin-removal'
import { deadSessionsSql } from '../sql/dead-sessions'
import { leaveInstanceSql, membershipSql, otherOrgOwnersSql, setMembershipRoleSql } from '../sql/admin-role'

const ADMIN_COLUMNS =
  'id, email, password_hash AS "passwordHash", is_owner AS "isOwner", totp_secret_enc AS "totpSecretEnc", totp_last_step AS "totpLastStep", created_at AS "createdAt", updated_at AS "updatedAt"'
const SESSION_COLUMNS =
  'id, token_hash AS "tokenHash", admin_id AS "adminId", csrf_token AS "csrfToken", user_agent AS "userAgent", ip, created_at AS "createdAt", last_seen_at AS "lastSeenAt", expires_at AS "expiresAt", revoked_at AS "revokedAt"'

export function createPgAdminsRepo(storage: PgStorage, clock: Clock): AdminsRepo {
  const { pool } = storage
  const audited = pgAudited(storage, clock)
  const insert = async (q: PgQueryable, row: AdminRow, members: Membership[]) => {
    await q.query('INSERT INTO admins (id, email, password_hash, is_owner, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6)', [
      row.id, row.email, row.passwordHash, row.isOwner, row.createdAt, row.updatedAt,
    ])
    for (const m of members) {
      await q.query('INSERT INTO admin_memberships (admin_id, org_id, role, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT (admin_id, org_id) DO UPDATE SET role = excluded.role', [
        row.id, m.orgId, m.role, row.createdAt,
      ])
    }
  }
  return {
    count: async () => (await one<{ n: number }>(pool, 'SELECT COUNT(*)::int AS n FROM admins'))!.n,
    byEmail: (email) => one<AdminRow>(pool, `SELECT ${ADMIN_COLUMNS} FROM admins WHERE email = $1`, [email]),
    byId: (adminId) => one<AdminRow>(pool, `SELECT ${ADMIN_COLUMNS} FROM admins WHERE id = $1`, [adminId]),
    memberships: (adminId) => many<Membership>(pool, 'SELECT org_id AS "orgId", role FROM admin_memberships WHERE admin_id = $1 ORDER BY org_id', [adminId]),
    orgExists: async (orgId) => !!(await one(pool, 'SELECT 1 FROM orgs WHERE id = $1', [orgId])),
    // The email's unique index settles two creations racing for one address.
    insertAdmin: async (row, members) => {
      try {
        await storage.tx((client) => insert(client, row, members))
        return true
      } catch (e) {
        if (isUniqueViolation(e, 'admins_email_uq')) return false
        throw e
      }
    },
    setPassword: (adminId, passwordHash, now) =>
      storage.tx(async (client) => {
        await client.query('UPDATE admins SET password_hash = $1, updated_at = $2 WHERE id = $3', [passwordHash, now, adminId])
        await client.query('UPDATE admin_sessions SET revoked_at = $1, id_token_sealed = NULL WHERE admin_id = $2 AND revoked_at IS NULL', [now, adminId])
      }),
    // One conditional UPDATE: the second of two racing claims waits for the first's row lock, then
    // re-checks the condition on the committed row and changes nothing.
    claimTotpStep: async (adminId, step) =>
      (await exec(pool, 'UPDATE admins SET totp_last_step = $1 WHERE id = $2 AND (totp_last_step IS NULL OR totp_last_step < $1)', [step, adminId])) === 1,
    setTotp: async (adminId, sealedSecret, lastStep, now) =>
      void (await exec(pool, 'UPDATE admins SET totp_secret_enc = $1, totp_last_step = $2, updated_at = $3 WHERE id = $4', [sealedSecret, lastStep, now, adminId])),
    listForOrg: (orgId) =>
      many(pool, 'SELECT a.id, a.email, m.role, a.created_at AS "createdAt" FROM admin_memberships m JOIN admins a ON a.id = m.admin_id WHERE m.org_id = $1 ORDER BY a.email, a.id', [orgId]),
    replaceSetupToken: (tokenHash, now, expiresAt) =>
      storage.tx(async (client) => {
        await client.query('DELETE FROM admin_setup_tokens WHERE used_at IS NULL')
        await client.query('INSERT INTO admin_setup_tokens (token_hash, created_at, expires_at) VALUES ($1, $2, $3)', [tokenHash, now, expiresAt])
      }),
    redeemSetupToken: async (tokenHash, now, owner) => {
      try {
        return await storage.tx(async (client) => {
          // The token row is locked: of two redemptions at once, the second sees it used.
          const row = await one<{ expiresAt: number; usedAt: number | null }>(
            client,
            'SELECT expires_at AS "expiresAt", used_at AS "usedAt" FROM admin_setup_tokens WHERE token_hash = $1 FOR UPDATE',
            [tokenHash],
          )
          if (!row || row.usedAt !== null || row.expiresAt <= now) return false
          // And the first owner is made once: two nodes started in the same instant each left a live link
          // (each deleted the unused tokens committed before its own), and two redemptions at once each
          // counted no admin yet. The count waits for the other's commit.
          await client.query("SELECT pg_advisory_xact_lock(hashtextextended('fixloop.first-admin', 0))")
          if ((await one<{ n: number }>(client, 'SELECT COUNT(*)::int AS n FROM admins'))!.n > 0) return false
          await client.query('UPDATE admin_setup_tokens SET used_at = $1 WHERE token_hash = $2', [now, tokenHash])
          await insert(client, { ...owner, isOwner: true }, [])
          return true
        })
      } catch (e) {
        if (isUniqueViolation(e, 'admins_email_uq')) return false
        throw e
      }
    },

    insertSession: async (r) =>
      void (await exec(
        pool,
        'INSERT INTO admin_sessions (id, token_hash, admin_id, csrf_token, user_agent, ip, created_at, last_seen_at, expires_at, id_token_sealed) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)',
        [r.id, r.tokenHash, r.adminId, r.csrfToken, r.userAgent, r.ip, r.createdAt, r.lastSeenAt, r.expiresAt, r.idTokenSealed ?? null],
      )),
    sessionIdToken: async (adminId, sessionId) =>
      (await one<{ sealed: string | null }>(pool, 'SELECT id_token_sealed AS sealed FROM admin_sessions WHERE id = $1 AND admin_id = $2 AND revoked_at IS NULL', [sessionId, adminId]))?.sealed ?? undefined,
    sessionByTokenHash: (tokenHash) => one<SessionRow>(pool, `SELECT ${SESSION_COLUMNS} FROM admin_sessions WHERE token_hash = $1`, [tokenHash]),
    touchSession: async (sessionId, now) => void (await exec(pool, 'UPDATE admin_sessions SET last_seen_at = $1 WHERE id = $2', [now, sessionId])),
    liveSessions: (adminId, now, seenAfter) =>
      many<SessionRow>(
        pool,
        `SELECT ${SESSION_COLUMNS} FROM admin_sessions WHERE admin_id = $1 AND revoked_at IS NULL AND expires_at > $2 AND last_seen_at > $3 ORDER BY id DESC LIMIT 100`,
        [adminId, now, seenAfter],
      ),
    revokeSession: async (adminId, sessionId, now) =>
      (await exec(pool, 'UPDATE admin_sessions SET revoked_at = $1, id_token_sealed = NULL WHERE id = $2 AND admin_id = $3 AND revoked_at IS NULL', [now, sessionId, adminId])) === 1,
    markReauthenticated: async (sessionId, adminId, purpose, at) =>
      (await exec(pool, 'UPDATE admin_sessions SET reauth_purpose = $1, reauth_at = $2 WHERE id = $3 AND admin_id = $4 AND revoked_at IS NULL AND expires_at > $2', [
        purpose, at, sessionId, adminId,
      ])) === 1,
    consumeReauthentication: async (sessionId, purpose, notBefore) =>
      (await exec(pool, 'UPDATE admin_sessions SET reauth_purpose = NULL, reauth_at = NULL WHERE id = $1 AND reauth_purpose = $2 AND reauth_at >= $3 AND revoked_at IS NULL', [
        sessionId, purpose, notBefore,
      ])) === 1,
    reauthentication: (sessionId) =>
      one<{ purpose: string; at: number }>(pool, 'SELECT reauth_purpose AS purpose, reauth_at AS at FROM admin_sessions WHERE id = $1 AND reauth_purpose IS NOT NULL AND reauth_at IS NOT NULL', [sessionId]),

    keyUsed: async (keyId, at) =>
      void (await exec(pool, 'INSERT INTO api_key_activity (key_id, last_used_at) VALUES ($1, $2) ON CONFLICT (key_id) DO UPDATE SET last_used_at = excluded.last_used_at', [keyId, at])),
    all: () => many<AdminRow>(pool, `SELECT ${ADMIN_COLUMNS} FROM admins ORDER BY email, id`),
    remove: async (adminId, audit) => {
      let outcome: 'removed' | 'last_owner' | 'missing' = 'missing'
      await audited(audit, async (c) => {
        // The owners' rows locked: two owners removing each other at once cannot both pass the check.
        await c.query('SELECT id FROM admins WHERE is_owner ORDER BY id FOR UPDATE')
        const row = await one<{ isOwner: boolean }>(c, 'SELECT is_owner AS "isOwner" FROM admins WHERE id = $1 FOR UPDATE', [adminId])
        if (!row) return false
        if (row.isOwner && Number((await one<{ n: string }>(c, otherOwnersSql('$1'), [adminId]))!.n) === 0) return ((outcome = 'last_owner'), false)
        for (const sql of removeAdminSql('$1')) await exec(c, sql, [adminId])
        outcome = 'removed'
        return true
      })
      return outcome
    },
    purgeDeadSessions: (before, idleBefore) => exec(pool, deadSessionsSql('$1', '$2'), [before, idleBefore]),
    setRole: async (adminId, orgId, role, audit, now) => {
      let result: RoleChange = { outcome: 'missing' }
      await audited(
        (from: RoleBefore | false) => (from === false ? [] : audit(from)),
        async (c): Promise<RoleBefore | false> => {
          // Locked in `remove`'s order (the instance owners' rows, then this admin's), then the Org's owner
          // memberships: two owners demoting each other at once (or one removed while the other is demoted)
          // cannot both pass the count; the second waits, then counts what the first committed.
          await c.query('SELECT id FROM admins WHERE is_owner ORDER BY id FOR UPDATE')
          const row = await one<{ isOwner: boolean }>(c, 'SELECT is_owner AS "isOwner" FROM admins WHERE id = $1 FOR UPDATE', [adminId])
          if (!row) return false
          if (row.isOwner) {
            if (Number((await one<{ n: string }>(c, otherOwnersSql('$1'), [adminId]))!.n) === 0) return ((result = { outcome: 'last_owner' }), false)
            await exec(c, 'UPDATE admins SET is_owner = false, updated_at = $2 WHERE id = $1', [adminId, now])
            await exec(c, leaveInstanceSql('$1'), [adminId])
            await exec(c, 'INSERT INTO admin_memberships (admin_id, org_id, role, created_at) VALUES ($1, $2, $3, $4)', [adminId, orgId, role, now])
            result = { outcome: 'changed', from: 'instance_owner' }
            return 'instance_owner'
          }
          await c.query("SELECT admin_id FROM admin_memberships WHERE org_id = $1 AND role = 'owner' ORDER BY admin_id FOR UPDATE", [orgId])
          const from = (await one<{ role: Membership['role'] }>(c, `${membershipSql('$1', '$2')} FOR UPDATE`, [adminId, orgId]))?.role
          if (!from) return ((result = { outcome: 'not_member' }), false)
          if (from === role) return ((result = { outcome: 'unchanged', from }), false)
          if (from === 'owner' && Number((await one<{ n: string }>(c, otherOrgOwnersSql('$1', '$2'), [adminId, orgId]))!.n) === 0) return ((result = { outcome: 'last_org_owner' }), false)
          await exec(c, setMembershipRoleSql('$1', '$2', '$3'), [role, adminId, orgId])
          result = { outcome: 'changed', from }
          return from
        },
      )
      return result
    },
  }
}

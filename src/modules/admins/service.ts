/**
 * Dashboard administrators: creation (CLI, env bootstrap, first-run setup link), password checks,
 * Org membership and TOTP. There are no default credentials: an instance without an admin prints a
 * single-use setup link on start instead.
 */
import type { Database } from 'bun:sqlite'
import { randomBytes } from 'node:crypto'
import type { Clock } from '../../core/clock'
import { isoUtc } from '../../core/clock'
import { ApiError } from '../../core/errors'
import { newId } from '../../core/ids'
import type { SecretBox } from '../../core/crypto'
import { sha256Hex } from '../../core/secrets'
import { base32Decode, matchTotp } from './totp'

export const PASSWORD_MIN_LENGTH = 10
export const PASSWORD_MAX_LENGTH = 1024
export const SETUP_LINK_TTL_MS = 30 * 60_000
export type OrgRole = 'owner' | 'member'

export interface AdminRow {
  id: string
  email: string
  password_hash: string
  is_owner: number
  totp_secret_enc: string | null
  totp_last_step: number | null
  created_at: number
}

/** Who is signed in, with the Orgs they may see (null: every Org, the instance owner). */
export interface AdminIdentity {
  id: string
  email: string
  isOwner: boolean
  totpEnabled: boolean
  /** Org id → role; empty for the instance owner, who has every role everywhere. */
  roles: Map<string, OrgRole>
}

const EMAIL_RE = /^[^\s@]{1,64}@[^\s@]{1,255}$/

export function normalizeEmail(email: string): string {
  const e = email.trim().toLowerCase()
  if (!EMAIL_RE.test(e)) throw new ApiError('invalid_body', { issues: [{ path: '/email', message: 'the email is not an email address' }] })
  return e
}

export function checkPassword(password: string): void {
  if (password.length < PASSWORD_MIN_LENGTH || password.length > PASSWORD_MAX_LENGTH) {
    throw new ApiError('invalid_body', { issues: [{ path: '/password', message: `the password must be ${PASSWORD_MIN_LENGTH} to ${PASSWORD_MAX_LENGTH} characters` }] })
  }
}

// Verified when the email is unknown, so a miss costs as long as a wrong password (no user enumeration).
let dummyHash: Promise<string> | undefined

export function createAdminsService(sqlite: Database, box: SecretBox, clock: Clock) {
  const byEmail = sqlite.query('SELECT * FROM admins WHERE email = ?')
  const byId = sqlite.query('SELECT * FROM admins WHERE id = ?')
  const memberships = sqlite.query('SELECT org_id AS orgId, role FROM admin_memberships WHERE admin_id = ?')
  const claimTotpStep = sqlite.query('UPDATE admins SET totp_last_step = ?1 WHERE id = ?2 AND (totp_last_step IS NULL OR totp_last_step < ?3)')

  function identityOf(row: AdminRow): AdminIdentity {
    const roles = new Map<string, OrgRole>()
    for (const m of memberships.all(row.id) as { orgId: string; role: OrgRole }[]) roles.set(m.orgId, m.role)
    return { id: row.id, email: row.email, isOwner: row.is_owner === 1, totpEnabled: row.totp_secret_enc !== null, roles }
  }

  const service = {
    count: (): number => (sqlite.query('SELECT COUNT(*) AS n FROM admins').get() as { n: number }).n,

    /** Creates an admin; without Orgs the admin owns the instance (sees and administers every Org). */
    async create(email: string, password: string, orgIds: string[] = [], role: OrgRole = 'owner'): Promise<{ id: string; email: string }> {
      const e = normalizeEmail(email)
      checkPassword(password)
      for (const orgId of orgIds) {
        if (!sqlite.query('SELECT 1 FROM orgs WHERE id = ?').get(orgId)) throw new ApiError('not_found', { orgId }, `No Org ${orgId}.`)
      }
      const hash = await Bun.password.hash(password, { algorithm: 'argon2id' })
      const id = newId(clock)
      const now = clock.now()
      sqlite.transaction(() => {
        if (byEmail.get(e)) throw new ApiError('email_taken', { email: e })
        sqlite.query('INSERT INTO admins (id, email, password_hash, is_owner, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)').run(id, e, hash, orgIds.length === 0 ? 1 : 0, now, now)
        for (const orgId of orgIds) service.addMember(id, orgId, role)
      }).immediate()
      return { id, email: e }
    },

    addMember(adminId: string, orgId: string, role: OrgRole): void {
      sqlite.query('INSERT INTO admin_memberships (admin_id, org_id, role, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (admin_id, org_id) DO UPDATE SET role = excluded.role').run(adminId, orgId, role, clock.now())
    },

    /** Sets a new password and revokes every session of the admin (a reset means "lock everyone out"). */
    async resetPassword(email: string, password: string): Promise<{ id: string; email: string }> {
      const e = normalizeEmail(email)
      checkPassword(password)
      const row = byEmail.get(e) as AdminRow | null
      if (!row) throw new ApiError('not_found', { email: e }, `No admin with email ${e}.`)
      const hash = await Bun.password.hash(password, { algorithm: 'argon2id' })
      const now = clock.now()
      sqlite.transaction(() => {
        sqlite.query('UPDATE admins SET password_hash = ?, updated_at = ? WHERE id = ?').run(hash, now, row.id)
        sqlite.query('UPDATE admin_sessions SET revoked_at = ? WHERE admin_id = ? AND revoked_at IS NULL').run(now, row.id)
      })()
      return { id: row.id, email: e }
    },

    /**
     * Checks email + password (+ TOTP code when enabled). Every failure is the same invalid_credentials,
     * except a missing code for a TOTP admin, which the sign-in form needs to know to ask for it.
     */
    async verifyLogin(email: string, password: string, totp: string | undefined): Promise<AdminIdentity> {
      const row = byEmail.get(email.trim().toLowerCase()) as AdminRow | null
      if (!row) {
        dummyHash ??= Bun.password.hash(randomBytes(16).toString('hex'), { algorithm: 'argon2id' })
        await Bun.password.verify(password, await dummyHash)
        throw new ApiError('invalid_credentials')
      }
      if (!(await Bun.password.verify(password, row.password_hash))) throw new ApiError('invalid_credentials')
      if (row.totp_secret_enc) {
        if (!totp) throw new ApiError('invalid_credentials', { totpRequired: true }, 'Enter the 6-digit code from your authenticator app.')
        const step = matchTotp(box.open(row.totp_secret_enc), totp.trim(), clock.now(), row.totp_last_step)
        // The claim is one conditional write: of two sign-ins racing with the same code, one wins.
        if (step === undefined || claimTotpStep.run(step, row.id, step).changes !== 1) throw new ApiError('invalid_credentials', { totpRequired: true })
      }
      return identityOf(row)
    },

    /** Re-checks the password of a signed-in admin (before a secret is revealed or TOTP changed). */
    async confirmPassword(adminId: string, password: string): Promise<void> {
      const row = byId.get(adminId) as AdminRow | null
      if (!row || !(await Bun.password.verify(password, row.password_hash))) throw new ApiError('invalid_credentials', undefined, 'The password is not correct.')
    },

    identity(adminId: string): AdminIdentity | undefined {
      const row = byId.get(adminId) as AdminRow | null
      return row ? identityOf(row) : undefined
    },

    /** Turns TOTP on with a secret the admin proved they hold (a valid code), or off with null. */
    setTotp(adminId: string, secretBase32: string | null, code?: string): void {
      let sealed: string | null = null
      let step: number | undefined
      if (secretBase32 !== null) {
        let secret: Buffer
        try {
          secret = base32Decode(secretBase32)
        } catch {
          throw new ApiError('invalid_body', { issues: [{ path: '/secret', message: 'must be base32' }] })
        }
        step = secret.length < 10 ? undefined : matchTotp(secret, code ?? '', clock.now())
        if (step === undefined) throw new ApiError('invalid_credentials', { totpRequired: true }, 'The code does not match this secret.')
        sealed = box.seal(secret)
      }
      // The code that turned TOTP on is used: it does not sign in afterwards.
      sqlite.query('UPDATE admins SET totp_secret_enc = ?, totp_last_step = ?, updated_at = ? WHERE id = ?').run(sealed, step ?? null, clock.now(), adminId)
    },

    listForOrg(orgId: string) {
      return (
        sqlite
          .query('SELECT a.id, a.email, m.role, a.created_at AS createdAt FROM admin_memberships m JOIN admins a ON a.id = m.admin_id WHERE m.org_id = ? ORDER BY a.email')
          .all(orgId) as { id: string; email: string; role: OrgRole; createdAt: number }[]
      ).map((a) => ({ ...a, createdAt: isoUtc(a.createdAt) }))
    },

    /** A single-use setup token valid 30 minutes; only its hash is stored. Older unused ones are dropped. */
    issueSetupToken(): { token: string; expiresAt: number } {
      const token = randomBytes(24).toString('base64url')
      const now = clock.now()
      sqlite.transaction(() => {
        sqlite.query('DELETE FROM admin_setup_tokens WHERE used_at IS NULL').run()
        sqlite.query('INSERT INTO admin_setup_tokens (token_hash, created_at, expires_at) VALUES (?, ?, ?)').run(sha256Hex(token), now, now + SETUP_LINK_TTL_MS)
      })()
      return { token, expiresAt: now + SETUP_LINK_TTL_MS }
    },

    /** Redeems a setup token for the first (instance-owner) admin. Refused once any admin exists. */
    async redeemSetupToken(token: string, email: string, password: string): Promise<{ id: string; email: string }> {
      const e = normalizeEmail(email)
      checkPassword(password)
      const hash = await Bun.password.hash(password, { algorithm: 'argon2id' })
      const id = newId(clock)
      const now = clock.now()
      sqlite.transaction(() => {
        const row = sqlite.query('SELECT * FROM admin_setup_tokens WHERE token_hash = ?').get(sha256Hex(token)) as { expires_at: number; used_at: number | null } | null
        if (!row || row.used_at !== null || row.expires_at <= now || service.count() > 0) throw new ApiError('invalid_setup_token')
        sqlite.query('UPDATE admin_setup_tokens SET used_at = ? WHERE token_hash = ?').run(now, sha256Hex(token))
        sqlite.query('INSERT INTO admins (id, email, password_hash, is_owner, created_at, updated_at) VALUES (?, ?, ?, 1, ?, ?)').run(id, e, hash, now, now)
      }).immediate()
      return { id, email: e }
    },
  }
  return service
}
export type AdminsService = ReturnType<typeof createAdminsService>

/** May this admin see the Org? A miss is answered 404 by the caller, as for any other tenant. */
export function canSee(admin: AdminIdentity, orgId: string): boolean {
  return admin.isOwner || admin.roles.has(orgId)
}

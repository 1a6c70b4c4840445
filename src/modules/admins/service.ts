/**
 * Dashboard administrators: creation (CLI, env bootstrap, first-run setup link), password checks,
 * Org membership and TOTP. There are no default credentials: an instance without an admin prints a
 * single-use setup link on start instead.
 */
import { randomBytes } from 'node:crypto'
import type { Clock } from '../../core/clock'
import { isoUtc } from '../../core/clock'
import { ApiError } from '../../core/errors'
import { newId } from '../../core/ids'
import type { SecretBox } from '../../core/crypto'
import { sha256Hex } from '../../core/secrets'
import { base32Decode, matchTotp } from './totp'
import { type AdminRow, type AdminsRepo, type OrgRole, type RoleBefore } from './repo'
import { passwordHasher, type PasswordHasher } from './password-hash'

export const PASSWORD_MIN_LENGTH = 10
export const PASSWORD_MAX_LENGTH = 1024
export const SETUP_LINK_TTL_MS = 30 * 60_000
/**
 * The password hash of an admin created without a password (`fixloop admin create --no-password`, who signs
 * in with SSO only): not a hash any password verifies against, so the row needs no schema change. Such an
 * admin cannot sign in with a password at all until an operator sets one (`fixloop admin reset-password`).
 */
export const NO_PASSWORD = '!no-password'
export type { AdminRow, OrgRole, RoleBefore } from './repo'
export const ORG_ROLES: readonly OrgRole[] = ['owner', 'member']

/** Who is signed in, with the Orgs they may see (null: every Org, the instance owner). */
export interface AdminIdentity {
  id: string
  email: string
  isOwner: boolean
  totpEnabled: boolean
  /** False for an SSO-only admin (created with --no-password): re-authenticates at the identity provider instead. */
  hasPassword: boolean
  /** Org id → role; empty for the instance owner, who has every role everywhere. */
  roles: Map<string, OrgRole>
}

const EMAIL_RE = /^[^\s@]{1,64}@[^\s@]{1,255}$/

/**
 * Lower case, except where a non-ASCII character lowercases to an ASCII one: the Kelvin sign `K`
 * (U+212A) lowercases to `k`, so `Kate@x` (as an identity provider might verify it, a different
 * mailbox) would otherwise sign in as the admin `kate@x`.
 */
function foldCase(email: string): string {
  if (!/[^\x00-\x7f]/.test(email)) return email.toLowerCase()
  let out = ''
  for (const ch of email) {
    const lower = ch.toLowerCase()
    out += ch.charCodeAt(0) > 0x7f && /^[\x00-\x7f]+$/.test(lower) ? ch : lower
  }
  return out
}

export function normalizeEmail(email: string): string {
  const e = foldCase(email.trim())
  if (!EMAIL_RE.test(e)) throw new ApiError('invalid_body', { issues: [{ path: '/email', message: 'the email is not an email address' }] })
  return e
}

export function checkPassword(password: string): void {
  if (password.length < PASSWORD_MIN_LENGTH || password.length > PASSWORD_MAX_LENGTH) {
    throw new ApiError('invalid_body', { issues: [{ path: '/password', message: `the password must be ${PASSWORD_MIN_LENGTH} to ${PASSWORD_MAX_LENGTH} characters` }] })
  }
}

/**
 * `passwords`: how new passwords are hashed (FIXLOOP_PASSWORD_HASH_MIB, the runtime's config); the
 * default's 64 MiB when not given.
 */
export function createAdminsService(repo: AdminsRepo, box: SecretBox, clock: Clock, passwords: PasswordHasher = passwordHasher()) {

  async function identityOf(row: AdminRow): Promise<AdminIdentity> {
    const roles = new Map<string, OrgRole>()
    for (const m of await repo.memberships(row.id)) roles.set(m.orgId, m.role)
    return { id: row.id, email: row.email, isOwner: row.isOwner, totpEnabled: row.totpSecretEnc !== null, hasPassword: row.passwordHash !== NO_PASSWORD, roles }
  }

  const service = {
    count: (): Promise<number> => repo.count(),

    /**
     * Creates an admin; without Orgs the admin owns the instance (sees and administers every Org). A null
     * password creates an SSO-only admin (NO_PASSWORD).
     */
    async create(email: string, password: string | null, orgIds: string[] = [], role: OrgRole = 'owner'): Promise<{ id: string; email: string }> {
      const e = normalizeEmail(email)
      if (password !== null) checkPassword(password)
      for (const orgId of orgIds) {
        if (!(await repo.orgExists(orgId))) throw new ApiError('not_found', { orgId }, `No Org ${orgId}.`)
      }
      const hash = password === null ? NO_PASSWORD : await passwords.hash(password)
      const id = newId(clock)
      const now = clock.now()
      const row: AdminRow = { id, email: e, passwordHash: hash, isOwner: orgIds.length === 0, totpSecretEnc: null, totpLastStep: null, createdAt: now, updatedAt: now }
      if (!(await repo.insertAdmin(row, orgIds.map((orgId) => ({ orgId, role }))))) throw new ApiError('email_taken', { email: e })
      return { id, email: e }
    },

    /** Every admin as `fixloop admin list` shows them: whether a password or TOTP is set, never either. */
    async list() {
      return Promise.all(
        (await repo.all()).map(async (r) => ({
          id: r.id,
          email: r.email,
          owner: r.isOwner,
          password: r.passwordHash !== NO_PASSWORD,
          totp: r.totpSecretEnc !== null,
          orgs: await repo.memberships(r.id),
          createdAt: isoUtc(r.createdAt),
        })),
      )
    },

    /**
     * Removes an admin (someone who left): signed out at once everywhere, gone from every Org, audited
     * where the admin was (each Org of its memberships, the instance for an owner) in the same
     * transaction. The instance's only owner stays: nobody could create or reach an owner's things then.
     * An Org whose only owner leaves is not blocked (someone who left must be removable): the instance's
     * owners still manage it, and `ownerlessOrgs` names it so the operator can give it an owner.
     */
    async remove(email: string, actor: string): Promise<{ id: string; email: string; ownerlessOrgs: string[] }> {
      const e = normalizeEmail(email)
      const row = await repo.byEmail(e)
      if (!row) throw new ApiError('not_found', { email: e }, `No admin with email ${e}.`)
      const memberships = row.isOwner ? [] : await repo.memberships(row.id)
      const orgs = row.isOwner ? [null] : memberships.map((m) => m.orgId)
      const audit = (orgs.length ? orgs : [null]).map((orgId) => ({ orgId, actor, action: 'admin.removed', targetId: row.id, data: {} }))
      const outcome = await repo.remove(row.id, audit)
      if (outcome === 'missing') throw new ApiError('not_found', { email: e }, `No admin with email ${e}.`)
      if (outcome === 'last_owner') {
        throw new ApiError('invalid_argument', { email: e }, `${e} is the instance's only owner: create another owner first (fixloop admin create without --org), then remove this one.`)
      }
      const ownerlessOrgs: string[] = []
      for (const m of memberships) {
        if (m.role === 'owner' && !(await repo.listForOrg(m.orgId)).some((a) => a.role === 'owner')) ownerlessOrgs.push(m.orgId)
      }
      return { id: row.id, email: e, ownerlessOrgs }
    },

    /**
     * Changes what an admin is in an Org (someone changing teams, least privilege): a member made owner, an
     * owner made member, an instance owner made owner or member of this one Org only (no longer of every
     * Org). Audited in the Org as `admin.role_changed` {from, to} (and in the instance's log when instance
     * ownership ends), in the change's transaction; the same role again writes nothing. The admin's signed-in
     * sessions act with the new role from their next request: the role is read per request, never kept
     * in the session. The instance's only owner and the Org's only owner are not demoted.
     */
    async setRole(
      email: string,
      orgId: string,
      role: OrgRole,
      actor: string,
      opts: { leaveInstance?: boolean } = {},
    ): Promise<{ id: string; email: string; orgId: string; from: RoleBefore; to: OrgRole }> {
      const e = normalizeEmail(email)
      if (!ORG_ROLES.includes(role)) throw new ApiError('invalid_argument', { role }, `The role must be ${ORG_ROLES.join(' or ')}.`)
      const row = await repo.byEmail(e)
      if (!row) throw new ApiError('not_found', { email: e }, `No admin with email ${e}.`)
      if (!(await repo.orgExists(orgId))) throw new ApiError('not_found', { orgId }, `No Org ${orgId}.`)
      // "Owner of this Org" reads like a grant to an instance owner, who owns every Org already: taking the
      // instance away is asked for by name, never a side effect of a command that names one Org.
      if (row.isOwner && !opts.leaveInstance) {
        throw new ApiError(
          'invalid_argument',
          { email: e },
          `${e} owns the instance (every Org). To make them ${role} of Org ${orgId} only, ending their instance ownership, add --leave-instance.`,
        )
      }
      const entry = (org: string | null, from: RoleBefore) => ({ orgId: org, actor, action: 'admin.role_changed', targetId: row.id, data: org ? { from, to: role } : { from, to: role, orgId } })
      const out = await repo.setRole(row.id, orgId, role, (from) => (from === 'instance_owner' ? [entry(orgId, from), entry(null, from)] : [entry(orgId, from)]), clock.now())
      switch (out.outcome) {
        case 'changed':
        case 'unchanged':
          return { id: row.id, email: e, orgId, from: out.from, to: role }
        case 'missing':
          throw new ApiError('not_found', { email: e }, `No admin with email ${e}.`)
        case 'not_member':
          throw new ApiError('not_found', { email: e, orgId }, `${e} is not an admin of Org ${orgId}: fixloop admin list shows their Orgs.`)
        case 'last_owner':
          throw new ApiError('invalid_argument', { email: e }, `${e} is the instance's only owner: create another owner first (fixloop admin create without --org), then change this one.`)
        case 'last_org_owner':
          throw new ApiError('invalid_argument', { email: e, orgId }, `${e} is the only owner of Org ${orgId}: make another admin its owner first (fixloop admin role --email OTHER --org ${orgId} --role owner).`)
      }
    },

    /** Sets a new password and revokes every session of the admin (a reset means "lock everyone out"). */
    async resetPassword(email: string, password: string): Promise<{ id: string; email: string }> {
      const e = normalizeEmail(email)
      checkPassword(password)
      const row = await repo.byEmail(e)
      if (!row) throw new ApiError('not_found', { email: e }, `No admin with email ${e}.`)
      const hash = await passwords.hash(password)
      await repo.setPassword(row.id, hash, clock.now())
      return { id: row.id, email: e }
    },

    /**
     * Checks email + password (+ TOTP code when enabled). Every failure is the same invalid_credentials,
     * except a missing code for a TOTP admin, which the sign-in form needs to know to ask for it.
     */
    async verifyLogin(email: string, password: string, totp: string | undefined): Promise<AdminIdentity> {
      const row = await repo.byEmail(foldCase(email.trim()))
      // An SSO-only admin fails exactly like an unknown email (same work, same answer).
      if (!row || row.passwordHash === NO_PASSWORD) {
        // Checked all the same, so a miss costs as long as a wrong password (no user enumeration).
        await passwords.verifyNothing(password)
        throw new ApiError('invalid_credentials')
      }
      if (!(await passwords.verify(password, row.passwordHash))) throw new ApiError('invalid_credentials')
      if (row.totpSecretEnc) {
        if (!totp) throw new ApiError('invalid_credentials', { totpRequired: true }, 'Enter the 6-digit code from your authenticator app.')
        const step = matchTotp(box.open(row.totpSecretEnc), totp.trim(), clock.now(), row.totpLastStep)
        // The claim is one compare-and-set: of two sign-ins racing with the same code, one wins.
        if (step === undefined || !(await repo.claimTotpStep(row.id, step))) throw new ApiError('invalid_credentials', { totpRequired: true })
      }
      return identityOf(row)
    },

    /** Re-checks the password of a signed-in admin (before a secret is revealed or TOTP changed). */
    async confirmPassword(adminId: string, password: string): Promise<void> {
      const row = await repo.byId(adminId)
      if (row?.passwordHash === NO_PASSWORD) throw new ApiError('invalid_credentials', { noPassword: true }, 'This admin has no password (signs in with SSO only): an operator sets one with `fixloop admin reset-password` for this action.')
      if (!row || !(await passwords.verify(password, row.passwordHash))) throw new ApiError('invalid_credentials', undefined, 'The password is not correct.')
    },

    /**
     * The admin an SSO sign-in is for: the one whose email is the ID token's verified email, or undefined.
     * TOTP is not asked: the identity provider authenticated the person (docs/security.md "Single sign-on").
     */
    async forVerifiedEmail(email: string): Promise<AdminIdentity | undefined> {
      // Not trimmed: the provider verified this exact string, and " kate@x" is not the address it verified as kate@x.
      const e = foldCase(email)
      if (!EMAIL_RE.test(e)) return undefined
      const row = await repo.byEmail(e)
      return row ? identityOf(row) : undefined
    },

    async identity(adminId: string): Promise<AdminIdentity | undefined> {
      const row = await repo.byId(adminId)
      return row ? identityOf(row) : undefined
    },

    /** Turns TOTP on with a secret the admin proved they hold (a valid code), or off with null. */
    async setTotp(adminId: string, secretBase32: string | null, code?: string): Promise<void> {
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
      await repo.setTotp(adminId, sealed, step ?? null, clock.now())
    },

    async listForOrg(orgId: string) {
      return (await repo.listForOrg(orgId)).map((a) => ({ ...a, createdAt: isoUtc(a.createdAt) }))
    },

    /** A single-use setup token valid 30 minutes; only its hash is stored. Older unused ones are dropped. */
    async issueSetupToken(): Promise<{ token: string; expiresAt: number }> {
      const token = randomBytes(24).toString('base64url')
      const now = clock.now()
      await repo.replaceSetupToken(sha256Hex(token), now, now + SETUP_LINK_TTL_MS)
      return { token, expiresAt: now + SETUP_LINK_TTL_MS }
    },

    /** Redeems a setup token for the first (instance-owner) admin. Refused once any admin exists. */
    async redeemSetupToken(token: string, email: string, password: string): Promise<{ id: string; email: string }> {
      const e = normalizeEmail(email)
      checkPassword(password)
      const hash = await passwords.hash(password)
      const id = newId(clock)
      const now = clock.now()
      const owner: AdminRow = { id, email: e, passwordHash: hash, isOwner: true, totpSecretEnc: null, totpLastStep: null, createdAt: now, updatedAt: now }
      if (!(await repo.redeemSetupToken(sha256Hex(token), now, owner))) throw new ApiError('invalid_setup_token')
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

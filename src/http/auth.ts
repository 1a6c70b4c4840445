/**
 * The credentials of spec part 5, as Elysia plugins that derive the caller before validation runs,
 * so an unauthenticated request is refused (401) before its body is judged.
 *
 * widgetAuth: `pub_` key → App; Origin rule; user token (private mode) or public mode; rate limit.
 * orgAuth:    `sk_` key → Org; per-key rate limit.
 */
import { Elysia } from 'elysia'
import { ApiError } from '../core/errors'
import type { Clock } from '../core/clock'
import type { CredentialDirectory, KnownApp } from '../auth/directory'
import { verifyUserToken, type UserIdentity } from '../auth/user-token'
import type { Limiter, RateScope } from './rate-limit'
import { addressKey, clientAddress } from './client-address'
import { noteCaller } from './request-caller'
import { authenticateAdmin, grantIn, hasSessionCookie, ORG_HEADER, requireOrg, resolveSession, type AdminAuthDeps } from './admin-auth'
import { canSee } from '../modules/admins/service'
import type { ActedBy } from '../modules/audit/index'
import { accessGuard } from './access-guard'
import type { OrgCaller } from './org-caller'
import type { PasswordReentry } from '../modules/admin-api/password-reentry'
import type { ReauthPurpose } from '../modules/admins/sessions'

export interface AuthDeps {
  directory: CredentialDirectory
  limiters: Record<RateScope, Limiter>
  clock: Clock
  trustProxy: boolean
  /** Dashboard sessions may call the Org routes too (cookie + X-Fixloop-Org + CSRF on mutations). */
  admin?: AdminAuthDeps & { orgExists(orgId: string): Promise<boolean> }
  /** Told of every accepted `sk_` key (its last-used time, kept by the dashboard); a promise when it writes. */
  keyUsed?: (keyId: string) => Promise<void> | undefined
  /** Asks a dashboard session for a fresh re-authentication before an action that outlives it (`confirmSessionCaller`). */
  reentry?: Pick<PasswordReentry, 'confirmSession'>
}

/** RFC 6750: the scheme name is case-insensitive ("bearer", "BEARER"); one or more spaces follow it. */
const BEARER_RE = /^Bearer +([A-Za-z0-9_\-.~+/]+=*)$/i

function bearerToken(header: string | null): string {
  if (header === null || header === '') throw new ApiError('missing_authorization')
  const m = BEARER_RE.exec(header.trim())
  if (!m) throw new ApiError('invalid_authorization', { reason: 'expected "Bearer <key>"' })
  return m[1]
}

/** Enforces allowedOrigins when the App has a non-empty list (spec 7: missing Origin is refused too). */
export function checkOrigin(app: KnownApp, origin: string | null): void {
  if (app.allowedOrigins.size === 0) return
  if (origin === null) throw new ApiError('origin_not_allowed', { origin }, NO_ORIGIN)
  if (!app.allowedOrigins.has(origin)) throw new ApiError('origin_not_allowed', { origin }, `The Origin ${origin} is not one of this App's allowed origins (fixloop app update APP_ID --allowed-origins …).`)
}

/**
 * A curl or backend script has no Origin: the default message ("The Origin is not allowed") reads as if
 * it had a wrong one, and the fix (send one of the App's origins, or empty the list) was in security.md only.
 */
const NO_ORIGIN = 'This App accepts requests only from its allowed origins and this request has no Origin header: a server-side submitter sends one of them as Origin (docs/security.md, "Browsers and CORS").'

export interface WidgetCaller {
  app: KnownApp
  user: UserIdentity | undefined
  clientIp: string
  /** What every per-address limit counts this caller under (client-address.ts `addressKey`: IPv6 per /64). */
  clientKey: string
  /** Takes `extra` more tokens from the bucket this request was let in by (an expensive submission). */
  charge(extra: number): void | Promise<void>
}

/**
 * `mine` (GET /v1/me/feedback) reads one user's reports: it needs a user token and shares the upload-URL buckets.
 * `config` (GET /v1/widget/config, once per page load) has buckets of its own, sized like the challenge's, so
 * page loads never eat the challenges a submission needs.
 */
export type WidgetRequestKind = 'submit' | 'presign' | 'challenge' | 'config' | 'mine'
const PRIVATE_SCOPE: Record<WidgetRequestKind, RateScope> = { submit: 'privateSubmit', presign: 'privatePresign', challenge: 'privateChallenge', config: 'privateConfig', mine: 'privatePresign' }
const PUBLIC_SCOPE: Record<Exclude<WidgetRequestKind, 'mine'>, RateScope> = { submit: 'publicSubmit', presign: 'publicPresign', challenge: 'publicChallenge', config: 'publicConfig' }

/**
 * Authenticates a widget request. `submit`, `presign`, `challenge` and `config` differ only in which buckets they draw from.
 * A `mine` request without a user token is a missing credential (401 invalid_user_token) on any App:
 * `public_disabled` (403) is about submitting without one, and says nothing true about a read.
 */
export async function authenticateWidget(deps: AuthDeps, request: Request, server: Parameters<typeof clientAddress>[1], kind: WidgetRequestKind): Promise<WidgetCaller> {
  const key = bearerToken(request.headers.get('authorization'))
  if (!key.startsWith('pub_')) throw new ApiError('invalid_authorization', { reason: 'widget routes take an App public key (pub_...)' })
  const app = await deps.directory.appByPublicKey(key)
  if (!app) throw new ApiError('unknown_app')
  noteCaller(request, { orgId: app.row.orgId, appId: app.row.id })
  checkOrigin(app, request.headers.get('origin'))
  const token = request.headers.get('x-service-user-token')
  const clientIp = clientAddress(request, server, deps.trustProxy)
  const clientKey = addressKey(clientIp)
  if (token) {
    const user = await verifyUserToken(token, app.row.id, app.signingSecret, deps.clock.now())
    const limiter = deps.limiters[PRIVATE_SCOPE[kind]]
    const bucket = `${app.row.id}|${user.sub}`
    const taken = limiter.take(bucket)
    if (taken) await taken
    return { app, user, clientIp, clientKey, charge: (extra) => limiter.charge(bucket, extra) }
  }
  if (kind === 'mine') throw new ApiError('invalid_user_token', { reason: "X-Service-User-Token is required: this route lists the signed-in user's reports" })
  if (!app.row.publicSubmissionEnabled) throw new ApiError('public_disabled')
  const limiter = deps.limiters[PUBLIC_SCOPE[kind]]
  const bucket = `${app.row.id}|${clientKey}`
  const taken = limiter.take(bucket)
  if (taken) await taken // a shared (Redis) limiter answers later; the in-memory one has answered
  return { app, user: undefined, clientIp, clientKey, charge: (extra) => limiter.charge(bucket, extra) }
}

export type { OrgCaller }

/**
 * A signed-in dashboard admin acting on one of their Orgs: same routes, same rules, so everything the
 * dashboard does is something a script with an `sk_` key can do too.
 */
async function authenticateAdminAsOrg(deps: AuthDeps & { admin: NonNullable<AuthDeps['admin']> }, request: Request): Promise<OrgCaller> {
  const { session, admin } = await authenticateAdmin(deps.admin, request)
  const orgId = request.headers.get(ORG_HEADER) ?? ''
  if (!/^[0-9a-f]{24}$/.test(orgId)) throw new ApiError('invalid_authorization', { reason: 'a dashboard session names its Org in X-Fixloop-Org' })
  await requireOrg(admin, orgId, deps.admin.orgExists)
  noteCaller(request, { orgId })
  const taken = deps.limiters.orgKey.take(`session:${session.id}`)
  if (taken) await taken
  return { orgId, keyId: `session:${session.id}`, grant: grantIn(admin, orgId), actor: `admin:${admin.id}`, session: { id: session.id, adminId: admin.id } }
}

export async function authenticateOrg(deps: AuthDeps, request: Request): Promise<OrgCaller> {
  if (deps.admin && !request.headers.has('authorization') && hasSessionCookie(deps.admin, request)) return authenticateAdminAsOrg(deps as Parameters<typeof authenticateAdminAsOrg>[0], request)
  const key = bearerToken(request.headers.get('authorization'))
  if (!key.startsWith('sk_')) throw new ApiError('invalid_authorization', { reason: 'this route takes an Org API key (sk_...)' })
  const known = await deps.directory.orgForApiKey(key)
  if (!known) throw new ApiError('invalid_authorization', { reason: 'unknown or revoked API key' })
  noteCaller(request, { orgId: known.orgId })
  // Keyed by key id, never by the key itself: no credential is held in limiter memory.
  const taken = deps.limiters.orgKey.take(known.keyId)
  if (taken) await taken
  await deps.keyUsed?.(known.keyId)
  return { orgId: known.orgId, keyId: known.keyId, grant: 'api_key', actor: `key:${known.keyId}` }
}

/**
 * Whether the credential `org` was authenticated with on `request` still stands: the `sk_` key is not
 * revoked or rotated away, or the dashboard session is not signed out or expired and its admin still
 * sees the Org. For long-lived responses (the event stream), which authenticate once when they open.
 * No limiter token is taken and no use is recorded: nothing is being called.
 */
export async function stillAuthorized(deps: AuthDeps, request: Request, org: OrgCaller): Promise<boolean> {
  try {
    if (org.keyId.startsWith('session:')) {
      if (!deps.admin) return false
      // A heartbeat's check is not the admin's activity: it keeps no idle session alive.
      const session = await resolveSession(deps.admin, request, { touch: false })
      if (!session || `session:${session.id}` !== org.keyId) return false
      const admin = await deps.admin.admins.identity(session.adminId)
      return admin !== undefined && canSee(admin, org.orgId) && (await deps.admin.orgExists(org.orgId))
    }
    const known = await deps.directory.orgForApiKey(bearerToken(request.headers.get('authorization')))
    return known !== null && known.keyId === org.keyId && known.orgId === org.orgId
  } catch {
    return false
  }
}

/**
 * Before an action that keeps sending the Org's data somewhere after the session that set it (a webhook
 * endpoint, a Slack channel, a tracker, an SMTP server): a dashboard session must hold an unused
 * re-authentication for `purpose`, at most 5 minutes old (password at POST /admin/api/me/reauth/password,
 * or the identity provider), used up here; else 401 invalid_credentials with `details.reauthRequired`.
 * An `sk_` key is not asked: its request bodies stay as documented, and it outlives sessions anyway.
 */
export async function confirmSessionCaller(deps: AuthDeps, org: OrgCaller, purpose: ReauthPurpose, request: Request, server: Parameters<typeof clientAddress>[1], targetId?: string): Promise<void> {
  if (!org.session) return
  // No way to ask is no way through: a session is never let past by a wiring mistake.
  if (!deps.reentry) throw new ApiError('invalid_credentials', { reauthRequired: true }, 'This action cannot be confirmed on this server.')
  await deps.reentry.confirmSession(org, { purpose, ip: clientAddress(request, server, deps.trustProxy), targetId: targetId ?? null })
}

/** The audit log's "who" for an Org caller's change (the address only when it is written). */
export function actedBy(deps: AuthDeps, org: OrgCaller, request: Request, server: Parameters<typeof clientAddress>[1]): ActedBy {
  return { actor: org.actor, ip: clientAddress(request, server, deps.trustProxy) }
}

/** Scoped plugin: routes after `.use(orgAuth(deps))` get `org` in their context and the `access` option. */
export function orgAuth(deps: AuthDeps) {
  return new Elysia({ name: 'org-auth' }).use(accessGuard()).derive({ as: 'scoped' }, async ({ request }) => ({ org: await authenticateOrg(deps, request) }))
}

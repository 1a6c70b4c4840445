/**
 * Step-up re-authentication at the identity provider, in place of a password re-entry (SSO admins may
 * have no password): a signed-in admin starts it for one purpose (POST /admin/api/me/reauth, session
 * cookie + X-CSRF-Token like every dashboard mutation), the provider authenticates the person anew
 * (`prompt=login`, `max_age=0`), and the one callback (/admin/oidc/callback, sso-routes.ts) hands the
 * answer to `completeReauth` here, which marks the CURRENT session "re-authenticated for P at T" when:
 *   - the flow was started from this very session (bound in the sealed flow, never read from the query);
 *   - the ID token passed every sign-in check (signature, issuer, audience, expiry, nonce, state, PKCE)
 *     and its email is verified;
 *   - its `auth_time` is present and not older than the flow's start, less REAUTH_CLOCK_SKEW_MS (the
 *     provider's clock and ours differ a little), nor later than now plus the same skew;
 *   - its email is that of the session's admin: someone else signing in at the provider proves nothing.
 * No session is opened. The mark is used once, within REAUTH_TTL_MS, by the action (password-reentry.ts).
 * Each outcome is audited: admin.reauthenticated, or admin.reauthentication_failed with the reason.
 */
import { Elysia, t } from 'elysia'
import { ApiError } from '../core/errors'
import type { Clock } from '../core/clock'
import { isoUtc } from '../core/clock'
import { authenticateAdmin, resolveSession, type AdminAuthDeps } from '../http/admin-auth'
import { accessGuard } from '../http/access-guard'
import { errorSchemas } from '../http/error-docs'
import type { ReauthFlow, SsoFlows } from '../http/sso-flow'
import type { AuditLog } from '../modules/audit/index'
import { SsoError, type OidcRelyingParty, type SsoIdentity } from '../modules/admins/oidc'
import { REAUTH_PURPOSES, type ActiveSession } from '../modules/admins/sessions'
import { REAUTH_START_PATH } from '../modules/admin-api/password-reentry'

/**
 * How far the provider's clock may be behind ours when its `auth_time` is compared with the moment the
 * re-authentication started (the tolerance openid-client allows on `iat` and `exp`).
 */
export const REAUTH_CLOCK_SKEW_MS = 30_000

/** The longest page path a re-authentication returns to (a dashboard path is far shorter). */
const MAX_RETURN_CHARS = 300
/**
 * A dashboard page of this server: /admin or below, an optional query, nothing that could leave the
 * origin (no scheme, no "//", no backslash, no "..", no fragment).
 */
const RETURN_TO_RE = /^\/admin(?:\/[A-Za-z0-9\-._~%/]*)?(?:\?[A-Za-z0-9\-._~%=&+]*)?$/

/** The page to come back to, or undefined when `value` is not one of this dashboard's. */
export function safeReturnPath(value: string): string | undefined {
  if (value.length > MAX_RETURN_CHARS || !RETURN_TO_RE.test(value)) return undefined
  const path = value.split('?')[0]
  if (value.includes('//') || path.split('/').includes('..')) return undefined
  // A browser resolves what a URL parser resolves: "%2e%2e" is a ".." segment too (WHATWG URL). A path the
  // parser would rewrite is not the page it names.
  if (new URL(value, 'http://fixloop.invalid').pathname !== path) return undefined
  return value
}

const ReauthBody = t.Object(
  {
    purpose: t.Union(REAUTH_PURPOSES.map((p) => t.Literal(p))),
    returnTo: t.Optional(t.String({ minLength: 1, maxLength: MAX_RETURN_CHARS })),
  },
  { additionalProperties: false },
)

const ReauthStatus = t.Object({
  sso: t.Boolean({ description: 'Single sign-on is configured: a re-authentication at the identity provider can stand in for the password' }),
  provider: t.Union([t.String(), t.Null()], { description: "The identity provider's name on the dashboard's button (its issuer's host)" }),
  hasPassword: t.Boolean({ description: 'Whether a password can confirm: false for an SSO-only admin, and for everyone with password sign-in off (FIXLOOP_PASSWORD_SIGNIN=off)' }),
  reauthenticated: t.Union([t.Object({ purpose: t.String(), at: t.String(), expiresAt: t.String() }), t.Null()], { description: "This session's unused re-authentication, while it can be used" }),
})

export interface ReauthDeps {
  auth: AdminAuthDeps
  relyingParty: OidcRelyingParty | undefined
  /** The provider's name for people (the issuer's host); undefined without SSO. */
  providerName: string | undefined
  flows: SsoFlows
  audit: AuditLog
  clock: Clock
  /** FIXLOOP_PASSWORD_SIGNIN: off, no password confirms (src/modules/admin-api/password-reentry.ts), so none is offered. */
  passwordSignIn?: boolean
}

const AUTH = ['not_signed_in', 'csrf_failed', 'rate_limited'] as const
const doc = (summary: string, description?: string) => ({ summary, description, tags: ['admin'], security: [{ adminSession: [] }] })

/** GET and POST /admin/api/me/reauth: what the dashboard offers, and the start of a re-authentication. */
export function reauthRoutes(deps: ReauthDeps) {
  const { auth, relyingParty, flows, clock } = deps
  return new Elysia({ name: 'admin-sso-reauth' })
    .use(accessGuard())
    .derive(async ({ request }) => ({ caller: await authenticateAdmin(auth, request) }))
    .get(
      REAUTH_START_PATH,
      async ({ caller, set }) => {
        set.headers['cache-control'] = 'no-store'
        const fresh = await auth.sessions.freshReauthentication(caller.session.id)
        return {
          sso: relyingParty !== undefined,
          provider: relyingParty ? (deps.providerName ?? null) : null,
          hasPassword: caller.admin.hasPassword && deps.passwordSignIn !== false,
          reauthenticated: fresh ? { purpose: fresh.purpose, at: isoUtc(fresh.at), expiresAt: isoUtc(fresh.expiresAt) } : null,
        }
      },
      { access: 'signed_in', response: { 200: ReauthStatus, ...errorSchemas(...AUTH) }, detail: doc('How this admin confirms a sensitive action (password, identity provider) and the session\'s unused re-authentication') },
    )
    .post(
      REAUTH_START_PATH,
      async ({ caller, body, request, set }) => {
        if (!relyingParty) throw new ApiError('not_found', { sso: false }, 'Single sign-on is not configured on this server (FIXLOOP_OIDC_ISSUER): confirm with your password.')
        const returnTo = body.returnTo === undefined ? '/admin' : safeReturnPath(body.returnTo)
        if (returnTo === undefined) throw new ApiError('invalid_argument', { field: 'returnTo' }, 'returnTo must be a path of this dashboard (/admin…), without a scheme, a host, "//" or "..".')
        let started
        try {
          started = await relyingParty.start({ reauth: true })
        } catch (e) {
          if (!(e instanceof SsoError)) throw e
          throw new ApiError('not_ready', { sso: true }, `${e.message} Try again later.`)
        }
        const reauth: ReauthFlow = { sessionId: caller.session.id, adminId: caller.admin.id, purpose: body.purpose, startedAt: clock.now(), returnTo }
        set.headers['set-cookie'] = flows.seal(auth, request, started.secrets, reauth)
        set.headers['cache-control'] = 'no-store'
        return { url: started.url }
      },
      {
        access: 'signed_in',
        body: ReauthBody,
        parse: 'json',
        response: { 200: t.Object({ url: t.String({ description: "The identity provider's authorization URL: open it in this browser (top-level)" }) }), ...errorSchemas(...AUTH, 'invalid_body', 'invalid_argument', 'not_found', 'not_ready') },
        detail: doc(
          'Start a re-authentication at the identity provider for one sensitive action',
          'Sets the sealed flow cookie and answers the provider URL (prompt=login, max_age=0). After the provider, the callback marks this session re-authenticated for `purpose` and redirects to `returnTo`; the action then succeeds without a password once, within 5 minutes.',
        ),
      },
    )
}

/** Why a re-authentication was refused: the audit row's reason and the page's words. */
interface Refusal {
  status: number
  reason: string
  message: string
}

/**
 * Checks a re-authentication's callback for the flow's session (everything but the token exchange, which
 * `exchange` does with the sign-in's own checks) and marks it. Answers the redirect back, or why not.
 */
export async function completeReauth(
  deps: Pick<ReauthDeps, 'auth' | 'audit' | 'clock'>,
  flow: ReauthFlow,
  request: Request,
  ip: string,
  stateMatches: boolean,
  exchange: () => Promise<SsoIdentity>,
): Promise<{ ok: true; location: string } | { ok: false; refusal: Refusal }> {
  const { auth, audit, clock } = deps
  const audited = async (r: Refusal) => {
    await audit.record({ orgId: null, actor: `admin:${flow.adminId}`, action: 'admin.reauthentication_failed', targetId: flow.adminId, data: { method: 'oidc', purpose: flow.purpose, reason: r.reason }, ip })
    return { ok: false as const, refusal: r }
  }
  let session: ActiveSession | undefined
  try {
    session = await resolveSession(auth, request)
  } catch {
    session = undefined // two session cookies: not the session the flow was started from
  }
  // Before anything reaches the provider: the browser must still be in the session that started this.
  if (!session || session.id !== flow.sessionId || session.adminId !== flow.adminId) {
    return audited({ status: 403, reason: 'session_mismatch', message: 'This confirmation was started from another session (you signed out, or signed in again since). Start it again from the dashboard.' })
  }
  if (!stateMatches) return audited({ status: 400, reason: 'state_mismatch', message: 'This answer from the identity provider does not belong to the confirmation this browser started. Start it again from the dashboard.' })
  let identity: SsoIdentity
  try {
    identity = await exchange()
  } catch (e) {
    if (!(e instanceof SsoError)) throw e
    return audited({ status: e.reason === 'provider_unreachable' ? 502 : 400, reason: e.reason, message: e.message })
  }
  if (!identity.email) return audited({ status: 403, reason: 'no_email', message: 'The identity provider did not send an email address, so fixloop cannot tell who confirmed.' })
  if (!identity.emailVerified) return audited({ status: 403, reason: 'email_unverified', message: `The identity provider does not vouch for the email address ${identity.email} (email_verified is not true).` })
  const now = clock.now()
  if (identity.authTime === undefined) return audited({ status: 403, reason: 'no_auth_time', message: 'The identity provider did not say when you signed in (no auth_time in the ID token), so this is no proof of a fresh sign-in.' })
  if (identity.authTime < flow.startedAt - REAUTH_CLOCK_SKEW_MS) {
    return audited({ status: 403, reason: 'stale_auth_time', message: 'The identity provider did not ask you to sign in again: its answer is about an earlier sign-in. Try again, and sign in at the provider when it asks.' })
  }
  if (identity.authTime > now + REAUTH_CLOCK_SKEW_MS) return audited({ status: 403, reason: 'auth_time_in_future', message: "The identity provider's sign-in time is in the future: check the clocks of both servers." })
  const admin = await auth.admins.forVerifiedEmail(identity.email)
  if (!admin || admin.id !== flow.adminId) {
    return audited({ status: 403, reason: 'other_person', message: `You signed in at the identity provider as ${identity.email}, which is not the admin of this session. Sign in there as yourself.` })
  }
  if (!(await auth.sessions.markReauthenticated(flow.sessionId, flow.adminId, flow.purpose))) {
    return audited({ status: 403, reason: 'session_ended', message: 'Your dashboard session ended meanwhile. Sign in again.' })
  }
  await audit.record({ orgId: null, actor: `admin:${flow.adminId}`, action: 'admin.reauthenticated', targetId: flow.adminId, data: { method: 'oidc', purpose: flow.purpose }, ip })
  // Checked when the flow started; checked again, so no path out of the origin can ever be followed.
  return { ok: true, location: safeReturnPath(flow.returnTo) ?? '/admin' }
}

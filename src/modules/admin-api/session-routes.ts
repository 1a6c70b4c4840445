/**
 * Dashboard sign-in: first-run setup, sign in and out, the current admin, their sessions, TOTP.
 * Failed sign-ins are throttled per address, per (email, address) and per email (sign-in-throttle.ts);
 * every failure looks the same. The setup link is rate-limited per address.
 */
import { Elysia } from 'elysia'
import { ApiError } from '../../core/errors'
import { errorSchemas } from '../../http/error-docs'
import { authenticateAdmin, clearedCookie, sessionCookie, type AdminAuthDeps } from '../../http/admin-auth'
import { addressKey, clientAddress } from '../../http/client-address'
import { accessGuard } from '../../http/access-guard'
import type { Limiter } from '../../http/rate-limit'
import { createSignInThrottle } from './sign-in-throttle'
import type { ThrottleFactory } from '../../core/failure-throttle'
import type { PasswordReentry } from './password-reentry'
import type { AuditLog } from '../audit/index'
import { newTotpSecret, totpUri } from '../admins/totp'
import { ADMIN_SESSION, LoginBody, Me, PasswordBody, ReauthPasswordBody, SessionParams, SetupBody, TotpEnableBody } from './model'
import { REAUTH_PASSWORD_PATH } from './password-reentry'
import { isoUtc } from '../../core/clock'
import { t } from 'elysia'

const AUTH_ERRORS = ['not_signed_in', 'csrf_failed', 'rate_limited'] as const

/** Which ways of signing in this server offers (FIXLOOP_PASSWORD_SIGNIN, FIXLOOP_OIDC_*): the sign-in page shows those. */
export interface SignInMethods {
  password: boolean
  sso: boolean
}

const PASSWORD_OFF = 'Password sign-in is turned off on this server (FIXLOOP_PASSWORD_SIGNIN=off): use "Sign in with SSO".'

/**
 * The identity provider's logout URL for a single sign-on session that is signing out (its sealed ID
 * token), or undefined to sign out here only (sso-routes.ts `providerSignOut`; absent without SSO).
 */
export type ProviderSignOut = (idTokenSealed: string) => Promise<string | undefined>

export function sessionRoutes(
  deps: AdminAuthDeps,
  audit: AuditLog,
  reentry: PasswordReentry,
  throttles: ThrottleFactory,
  /** Setup-link redemptions per address (RATE_LIMITS.setupLink: shared by a cluster's nodes). */
  setupLimit: Limiter,
  methods: SignInMethods = { password: true, sso: false },
  providerSignOut?: ProviderSignOut,
) {
  const throttle = createSignInThrottle(throttles)
  const { admins, sessions } = deps

  async function signIn(adminId: string, request: Request, ip: string, set: { headers: Record<string, string | number> }) {
    const { token, session } = await sessions.open(adminId, request.headers.get('user-agent') ?? '', ip)
    set.headers['set-cookie'] = sessionCookie(deps, request, token)
    set.headers['cache-control'] = 'no-store'
    const admin = (await admins.identity(adminId))!
    return { id: admin.id, email: admin.email, isOwner: admin.isOwner, totpEnabled: admin.totpEnabled, csrfToken: session.csrfToken, sessionId: session.id }
  }

  return new Elysia({ name: 'admin-session' })
    .use(accessGuard())
    // setupOpen: password sign-in on and no admin yet, so a setup link can still create the first one (the
    // setup page says at once when it cannot, instead of showing a form that is refused on submit).
    .get('/admin/api/sign-in-methods', async () => ({ ...methods, setupOpen: methods.password && (await admins.count()) === 0 }), {
      access: 'anyone',
      response: { 200: t.Object({ password: t.Boolean(), sso: t.Boolean(), setupOpen: t.Boolean() }) },
      detail: { summary: 'The ways of signing in this server offers (password form, "Sign in with SSO" at /admin/oidc/start), and whether a setup link can still create the first admin', tags: ['admin'] },
    })
    .post(
      '/admin/api/setup',
      async ({ body, request, server, set }) => {
        // The setup link creates a password admin: with passwords off it could never sign in again.
        if (!methods.password) throw new ApiError('forbidden', { passwordSignIn: false }, `${PASSWORD_OFF} Create admins with \`fixloop admin create --email EMAIL --no-password\`.`)
        const ip = clientAddress(request, server, deps.trustProxy)
        await setupLimit.take(addressKey(ip))
        const admin = await admins.redeemSetupToken(body.token, body.email, body.password)
        await audit.record({ orgId: null, actor: `admin:${admin.id}`, action: 'admin.created', targetId: admin.id, data: { via: 'setup_link' }, ip })
        return signIn(admin.id, request, ip, set)
      },
      {
        access: 'anyone',
        body: SetupBody,
        parse: 'json',
        response: { 200: Me, ...errorSchemas('invalid_body', 'invalid_setup_token', 'forbidden', 'rate_limited') },
        detail: { summary: 'First run: create the instance owner with the single-use setup link token', tags: ['admin'] },
      },
    )
    .post(
      '/admin/api/session',
      async ({ body, request, server, set }) => {
        if (request.headers.get('sec-fetch-site') === 'cross-site') throw new ApiError('csrf_failed')
        if (!methods.password) throw new ApiError('forbidden', { passwordSignIn: false }, PASSWORD_OFF)
        const ip = clientAddress(request, server, deps.trustProxy)
        const account = body.email.trim().toLowerCase()
        // A missing TOTP code (the form then asks for it) is not a failure; a wrong password or code is.
        const isFailure = (e: unknown) => e instanceof ApiError && e.code === 'invalid_credentials' && !(!body.totp && (e.details as { totpRequired?: boolean } | undefined)?.totpRequired)
        const admin = await throttle.guard(account, ip, () => admins.verifyLogin(body.email, body.password, body.totp), isFailure)
        await audit.record({ orgId: null, actor: `admin:${admin.id}`, action: 'admin.signed_in', targetId: admin.id, data: { method: 'password' }, ip })
        return signIn(admin.id, request, ip, set)
      },
      {
        access: 'anyone',
        body: LoginBody,
        parse: 'json',
        response: { 200: Me, ...errorSchemas('invalid_body', 'invalid_credentials', 'csrf_failed', 'forbidden', 'rate_limited') },
        detail: { summary: 'Sign in (sets the HttpOnly session cookie)', description: 'details.totpRequired is true when the admin has TOTP and the code is missing or wrong.', tags: ['admin'] },
      },
    )
    .derive(async ({ request }) => ({ caller: await authenticateAdmin(deps, request) }))
    .get(
      '/admin/api/session',
      ({ caller, set }) => {
        set.headers['cache-control'] = 'no-store'
        const a = caller.admin
        return { id: a.id, email: a.email, isOwner: a.isOwner, totpEnabled: a.totpEnabled, csrfToken: caller.session.csrfToken, sessionId: caller.session.id }
      },
      { access: 'signed_in', response: { 200: Me, ...errorSchemas(...AUTH_ERRORS) }, detail: { summary: 'The signed-in admin and the CSRF token', tags: ['admin'], security: ADMIN_SESSION } },
    )
    .delete(
      '/admin/api/session',
      async ({ caller, request, set }) => {
        const ended = await sessions.signOut(caller.admin.id, caller.session.id)
        set.headers['set-cookie'] = clearedCookie(deps, request)
        set.headers['cache-control'] = 'no-store'
        // An SSO session ends at the provider too (RP-initiated logout), when the provider offers it: the
        // page sends the browser there. The URL holds the ID token (id_token_hint, as the specification
        // has it), so only this answer, to this session's own page, carries it, never a log.
        const endSessionUrl = ended?.idTokenSealed !== undefined && providerSignOut ? await providerSignOut(ended.idTokenSealed) : undefined
        return endSessionUrl ? { signedOut: true, endSessionUrl } : { signedOut: true }
      },
      {
        access: 'signed_in',
        response: {
          200: t.Object({
            signedOut: t.Boolean(),
            endSessionUrl: t.Optional(
              t.String({ description: "A single sign-on session's: the identity provider's logout (RP-initiated logout, with id_token_hint): send the browser there (top-level) to end the provider's session too, which then comes back to /admin" }),
            ),
          }),
          ...errorSchemas(...AUTH_ERRORS),
        },
        detail: { summary: 'Sign out (an SSO session: answers the provider\'s logout URL to go to)', tags: ['admin'], security: ADMIN_SESSION },
      },
    )
    .get('/admin/api/sessions', async ({ caller }) => ({ data: (await sessions.list(caller.admin.id)).map((s) => ({ ...s, current: s.id === caller.session.id })) }), {
      access: 'signed_in',
      detail: { summary: "The signed-in admin's live sessions", tags: ['admin'], security: ADMIN_SESSION },
      response: { 200: t.NoValidate(t.Object({ data: t.Array(t.Unknown()) })), ...errorSchemas(...AUTH_ERRORS) },
    })
    .delete(
      '/admin/api/sessions/:id',
      async ({ caller, params }) => {
        if (!(await sessions.revoke(caller.admin.id, params.id))) throw new ApiError('not_found')
        await audit.record({ orgId: null, actor: `admin:${caller.admin.id}`, action: 'session.revoked', targetId: params.id })
        return { id: params.id, revoked: true }
      },
      { access: 'signed_in', params: SessionParams, response: { 200: t.Object({ id: t.String(), revoked: t.Boolean() }), ...errorSchemas(...AUTH_ERRORS, 'invalid_id', 'not_found') }, detail: { summary: 'Revoke one of your sessions', tags: ['admin'], security: ADMIN_SESSION } },
    )
    .post(
      REAUTH_PASSWORD_PATH,
      async ({ caller, body, request, server, set }) => {
        await reentry.record({ adminId: caller.admin.id, sessionId: caller.session.id }, body.password, { purpose: body.purpose, ip: clientAddress(request, server, deps.trustProxy) })
        const fresh = (await sessions.freshReauthentication(caller.session.id))!
        set.headers['cache-control'] = 'no-store'
        return { purpose: fresh.purpose, at: isoUtc(fresh.at), expiresAt: isoUtc(fresh.expiresAt) }
      },
      {
        access: 'signed_in',
        body: ReauthPasswordBody,
        parse: 'json',
        response: { 200: t.Object({ purpose: t.String(), at: t.String(), expiresAt: t.String() }), ...errorSchemas(...AUTH_ERRORS, 'invalid_body', 'invalid_credentials') },
        detail: {
          summary: 'Confirm with the password for one sensitive action sent without it',
          description:
            'For the /v1 routes a dashboard session shares with `sk_` keys, whose bodies have no password field (creating a webhook endpoint, connecting Slack or an issue tracker, setting SMTP): marks this session confirmed for `purpose`, good for one such action within 5 minutes, as a re-authentication at the identity provider is. Replaces any earlier unused confirmation. A wrong password is 401 invalid_credentials, audited (admin.password_reentry_failed) and throttled per admin (429 after 5); a right one is audited as admin.reauthenticated with method "password".',
          tags: ['admin'],
          security: ADMIN_SESSION,
        },
      },
    )
    .post('/admin/api/me/totp/secret', ({ caller }) => {
      const secret = newTotpSecret()
      return { secret, uri: totpUri(secret, caller.admin.email) }
    }, {
      access: 'signed_in',
      response: { 200: t.Object({ secret: t.String(), uri: t.String() }), ...errorSchemas(...AUTH_ERRORS) },
      detail: { summary: 'A new TOTP secret to scan (not active until confirmed with PUT /admin/api/me/totp)', tags: ['admin'], security: ADMIN_SESSION },
    })
    .put(
      '/admin/api/me/totp',
      async ({ caller, body, request, server }) => {
        await reentry.confirm({ adminId: caller.admin.id, sessionId: caller.session.id }, body.password, { purpose: 'totp_enable', ip: clientAddress(request, server, deps.trustProxy) })
        await admins.setTotp(caller.admin.id, body.secret, body.code)
        await audit.record({ orgId: null, actor: `admin:${caller.admin.id}`, action: 'admin.totp_enabled', targetId: caller.admin.id })
        return { totpEnabled: true }
      },
      { access: 'signed_in', body: TotpEnableBody, parse: 'json', response: { 200: t.Object({ totpEnabled: t.Boolean() }), ...errorSchemas(...AUTH_ERRORS, 'invalid_body', 'invalid_credentials') }, detail: { summary: 'Turn TOTP on (password, or a re-authentication at the identity provider, + a current code)', tags: ['admin'], security: ADMIN_SESSION } },
    )
    .delete(
      '/admin/api/me/totp',
      async ({ caller, body, request, server }) => {
        await reentry.confirm({ adminId: caller.admin.id, sessionId: caller.session.id }, body.password, { purpose: 'totp_disable', ip: clientAddress(request, server, deps.trustProxy) })
        await admins.setTotp(caller.admin.id, null)
        await audit.record({ orgId: null, actor: `admin:${caller.admin.id}`, action: 'admin.totp_disabled', targetId: caller.admin.id })
        return { totpEnabled: false }
      },
      { access: 'signed_in', body: PasswordBody, parse: 'json', response: { 200: t.Object({ totpEnabled: t.Boolean() }), ...errorSchemas(...AUTH_ERRORS, 'invalid_body', 'invalid_credentials') }, detail: { summary: 'Turn TOTP off (password, or a re-authentication at the identity provider)', tags: ['admin'], security: ADMIN_SESSION } },
    )
}

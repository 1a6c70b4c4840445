/**
 * Single sign-on for the dashboard (OpenID Connect): GET /admin/oidc/start sends the browser to the
 * provider with a fresh state, nonce and PKCE challenge (their secrets in the sealed flow cookie);
 * GET /admin/oidc/callback checks the answer, and signs in the admin whose email is the ID token's
 * verified email. Every refusal is a plain page saying why, with no session; every sign-in is audited
 * (`admin.signed_in`, method "sso"). The same callback finishes a signed-in admin's step-up
 * re-authentication (its flow says so; sso-reauth.ts has its checks and its start route), with the same
 * token checks. docs/security.md "Single sign-on" has the decisions.
 */
import { Elysia } from 'elysia'
import type { Clock } from '../core/clock'
import { ApiError } from '../core/errors'
import { escapeHtml } from '../core/escape-html'
import type { SecretBox } from '../core/crypto'
import type { Logger } from '../core/logger'
import { sessionCookie, type AdminAuthDeps } from '../http/admin-auth'
import { addressKey, clientAddress } from '../http/client-address'
import type { Limiter } from '../http/rate-limit'
import { createSsoFlows, type SpendOnce } from '../http/sso-flow'
import type { AuditLog } from '../modules/audit/index'
import { SsoError, type OidcRelyingParty } from '../modules/admins/oidc'
import { completeReauth, reauthRoutes, safeReturnPath } from './sso-reauth'
import { ASSETS } from './assets'

const styleUrl = ASSETS.find((a) => a.specifier === null)!.url
/** A real callback's query is a few hundred characters; far more is junk, refused before any work. */
const MAX_QUERY_CHARS = 8192

const PAGE_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy': "default-src 'none'; style-src 'self'; img-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  // As every dashboard page: frame-ancestors says it to current browsers, this to older ones and scanners.
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  // The callback's URL holds the code and state: no Referer carries them to anything the page links.
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
}

/** Where a refusal page leads: the sign-in page, or (a refused re-authentication) back to the dashboard page. */
type WayBack = { signedIn: false } | { signedIn: true; to: string }

/** The page a refused sign-in or re-authentication gets: what happened, and the way back. */
function refusalPage(status: number, title: string, explanation: string, setCookie?: string, back: WayBack = { signedIn: false }): Response {
  const way = back.signedIn
    ? `<p>You are still signed in; the action was not confirmed. <a href="${escapeHtml(back.to)}">Back to the dashboard</a></p>`
    : '<p>You are not signed in. <a href="/admin">Back to the sign-in page</a></p>'
  const body = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>${escapeHtml(title)} · fixloop admin</title>
<link rel="stylesheet" href="${styleUrl}">
</head>
<body>
<main id="main" class="narrow">
<h1>${escapeHtml(title)}</h1>
<p role="alert">${escapeHtml(explanation)}</p>
${way}
</main>
</body>
</html>
`
  const headers: Record<string, string> = { ...PAGE_HEADERS }
  if (setCookie) headers['set-cookie'] = setCookie
  return new Response(body, { status, headers })
}

export interface SsoRouteDeps {
  auth: AdminAuthDeps
  /** Undefined when SSO is not configured: the routes then say so (404 page). */
  relyingParty: OidcRelyingParty | undefined
  /** The provider's name on the dashboard's "Confirm with …" button (the issuer's host). */
  providerName: string | undefined
  /** FIXLOOP_PASSWORD_SIGNIN (default on): off, the re-authentication offers no password. */
  passwordSignIn?: boolean
  audit: AuditLog
  box: SecretBox
  clock: Clock
  log: Logger
  trustProxy: boolean
  /**
   * Sign-ins started per client address (RATE_LIMITS.ssoStart, shared by a cluster's nodes): each start
   * hands out a flow whose state the callback then claims as spent for ten minutes, so an unlimited start
   * let anyone grow that memory (this node's, and the shared claims) at will.
   */
  starts: Limiter
  /** The single-use claim every node shares (proof of work's `spend`): a flow spent on one node is spent on all. */
  spend: SpendOnce
}

export function ssoRoutes(deps: SsoRouteDeps) {
  const flows = createSsoFlows(deps.box, deps.clock, deps.spend)
  const { starts } = deps
  const { auth, relyingParty } = deps
  const notConfigured = () => refusalPage(404, 'Single sign-on is not set up', 'This fixloop server has no OpenID Connect provider configured (FIXLOOP_OIDC_ISSUER). Sign in with your email and password.')

  return new Elysia({ name: 'admin-sso' })
    .use(reauthRoutes({ auth, relyingParty, providerName: deps.providerName, flows, audit: deps.audit, clock: deps.clock, passwordSignIn: deps.passwordSignIn }))
    .get(
      '/admin/oidc/start',
      async ({ request, server }) => {
        if (!relyingParty) return notConfigured()
        const ip = clientAddress(request, server, deps.trustProxy)
        try {
          await starts.take(addressKey(ip))
        } catch (e) {
          if (!(e instanceof ApiError) || e.code !== 'rate_limited') throw e
          deps.log.warn('sso: sign-in starts rate limited', { ip })
          const refused = refusalPage(429, 'Too many sign-in attempts', 'This address started too many sign-ins in a short time. Wait a minute, then start again from the sign-in page.')
          for (const [name, value] of Object.entries(e.headers ?? {})) refused.headers.set(name, value)
          return refused
        }
        try {
          const { url, secrets } = await relyingParty.start()
          return new Response(null, { status: 303, headers: { location: url, 'set-cookie': flows.seal(auth, request, secrets), 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' } })
        } catch (e) {
          if (!(e instanceof SsoError)) throw e
          deps.log.warn('sso: sign-in could not start', { reason: e.reason, message: e.message })
          return refusalPage(502, 'The identity provider is unavailable', `${e.message} Try again later, or ask an operator to check FIXLOOP_OIDC_ISSUER.`)
        }
      },
      { detail: { summary: 'Single sign-on: redirects to the OpenID provider (sets a short-lived sealed flow cookie)', tags: ['admin'] } },
    )
    .get(
      '/admin/oidc/callback',
      async ({ request, server }) => {
        if (!relyingParty) return notConfigured()
        // Nothing is cleared nor spent until the callback proves it answers this browser's flow (its state):
        // another site can send the browser here, and must not cancel the sign-in under way (sso-flow.ts).
        const url = new URL(request.url)
        if (url.search.length > MAX_QUERY_CHARS) return refusalPage(400, 'Sign-in failed', 'The answer from the identity provider is malformed (far too long).')
        const query = url.searchParams
        const one = (name: string) => (query.getAll(name).length === 1 ? query.get(name) : null)
        const providerError = one('error')
        const hasAnswer = providerError !== null || (one('code') !== null && one('state') !== null)
        if (!hasAnswer) return refusalPage(400, 'Sign-in failed', 'The answer from the identity provider is incomplete: it needs exactly one "code" and one "state" (or an "error").')
        const taken = await flows.take(auth, request, one('state'))
        if (!taken) {
          return refusalPage(400, 'Sign-in failed', 'This sign-in attempt expired, was already used, or was started in another browser. Start again from the sign-in page.')
        }
        const { flow, stateMatches } = taken
        // Spent: the flow cookie goes, whatever the outcome. Not answered: it stays for the real answer.
        const cleared = stateMatches ? flows.cleared(auth, request) : undefined
        const ip = clientAddress(request, server, deps.trustProxy)
        if (flow.reauth) {
          const reauth = flow.reauth
          // The same checks as a sign-in: the state first, then everything openid-client verifies.
          const done = await completeReauth(deps, reauth, request, ip, stateMatches, () => relyingParty.finish(query, flow))
          if (done.ok) {
            const headers = new Headers({ location: done.location, 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' })
            if (cleared) headers.append('set-cookie', cleared)
            return new Response(null, { status: 303, headers })
          }
          deps.log.warn('sso: re-authentication refused', { reason: done.refusal.reason, ip })
          return refusalPage(done.refusal.status, 'Confirmation failed', done.refusal.message, cleared, { signedIn: true, to: safeReturnPath(reauth.returnTo) ?? '/admin' })
        }
        const refuse = (status: number, title: string, reason: string, message: string) => {
          deps.log.warn('sso: sign-in refused', { reason, ip })
          return refusalPage(status, title, message, cleared)
        }
        // The state is compared before anything is sent to the provider (openid-client checks it again).
        if (!stateMatches) return refuse(400, 'Sign-in failed', 'state_mismatch', 'This answer from the identity provider does not belong to the sign-in attempt this browser started. Start again from the sign-in page.')
        let identity
        try {
          identity = await relyingParty.finish(query, flow)
        } catch (e) {
          if (!(e instanceof SsoError)) throw e
          if (e.reason === 'provider_unreachable') return refuse(502, 'The identity provider is unavailable', e.reason, `${e.message} Try again later.`)
          return refuse(400, 'Sign-in failed', e.reason, `${e.message} Start again from the sign-in page.`)
        }
        if (!identity.email) return refuse(403, 'No email from the identity provider', 'no_email', 'The identity provider did not send an email address for your account, so fixloop cannot tell which admin you are. Ask your operator to release the "email" claim to fixloop.')
        if (!identity.emailVerified) return refuse(403, 'Email address not verified', 'email_unverified', `The identity provider does not vouch for the email address ${identity.email} (email_verified is not true), so fixloop does not sign you in with it. Verify the address at your identity provider, then try again.`)
        const admin = await auth.admins.forVerifiedEmail(identity.email)
        if (!admin) return refuse(403, 'Not a fixloop admin', 'unknown_email', `No fixloop admin has the email address ${identity.email}. Ask an operator to create one: fixloop admin create --email ${identity.email} --no-password`)
        // The ID token stays with the session, sealed, for the provider's logout when the admin signs out.
        const { token } = await auth.sessions.open(admin.id, request.headers.get('user-agent') ?? '', ip, deps.box.seal(Buffer.from(identity.idToken)))
        await deps.audit.record({ orgId: null, actor: `admin:${admin.id}`, action: 'admin.signed_in', targetId: admin.id, data: { method: 'sso' }, ip })
        const headers = new Headers({ location: '/admin', 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' })
        if (cleared) headers.append('set-cookie', cleared)
        headers.append('set-cookie', sessionCookie(auth, request, token))
        return new Response(null, { status: 303, headers })
      },
      { detail: { summary: 'Single sign-on: the OpenID provider redirects here (the redirect URI); signs in, or a page says why not', tags: ['admin'] } },
    )
}

/**
 * The provider's logout URL for an SSO session signing out (session-routes.ts): its ID token unsealed and
 * handed to the relying party as id_token_hint. Undefined (a local sign-out) when the seal does not open
 * (the master key changed since) or the provider has no end_session_endpoint.
 */
export function providerSignOut(relyingParty: OidcRelyingParty, box: SecretBox): (idTokenSealed: string) => Promise<string | undefined> {
  return async (idTokenSealed) => {
    let idToken: string
    try {
      idToken = box.open(idTokenSealed).toString('utf8')
    } catch {
      return undefined
    }
    return relyingParty.endSessionUrl(idToken)
  }
}

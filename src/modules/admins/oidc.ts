/**
 * The OpenID Connect relying party of the dashboard's single sign-on, on `openid-client` (v6, by the
 * author of `oauth4webapi`, which it wraps; it brings discovery, PKCE, state and nonce checks and the
 * ID token's signature check against the issuer's JWKS in a few calls, where `oauth4webapi` alone would
 * leave each step to us). Authorization code flow only, with PKCE (S256), state and nonce.
 *
 * Step-up re-authentication (a signed-in admin proving again who they are before a sensitive action) is
 * the same flow with `prompt=login` and `max_age=0`: the provider must authenticate the person anew, and
 * the ID token's `auth_time` says when it did (the callback compares it with the flow's start).
 *
 * Caching: the discovery document is fetched once and kept for DISCOVERY_TTL_MS (a failed fetch is not
 * kept, so the next sign-in tries again). The JWKS lives inside the kept configuration: openid-client
 * fetches it on first use and again when a token names a key id it does not hold (key rotation), with
 * a cool-down so a flood of forged key ids cannot make us hammer the provider.
 */
import * as oidc from 'openid-client'
import type { SsoConfig } from '../../config'
import type { Clock } from '../../core/clock'
import { clip } from '../../core/clip'

/** A day: providers change their endpoints rarely, and a restart refetches at once. */
export const DISCOVERY_TTL_MS = 24 * 3600_000
/** How long a discovery may take (openid-client's `timeout`, in seconds): a sign-in shows its page after it. */
const DISCOVERY_TIMEOUT_S = 10
/**
 * How long a sign-out waits for the provider's discovery document when it is not at hand (a restart with the
 * provider down): the session is already ended here, and an admin clicking "Sign out" should not watch the
 * whole discovery timeout before the local sign-out the dashboard falls back to.
 */
export const SIGN_OUT_DISCOVERY_WAIT_MS = 2_000
/** How far an ID token's `iat` may be ahead of our clock (openid-client's own tolerance on exp and nbf). */
const ID_TOKEN_CLOCK_TOLERANCE_MS = 30_000

/** What the browser must bring back to finish the flow (kept in the sealed flow cookie). */
export interface FlowSecrets {
  state: string
  nonce: string
  codeVerifier: string
}

/** The verified identity an ID token asserts. */
export interface SsoIdentity {
  subject: string
  email: string | undefined
  emailVerified: boolean
  /** `auth_time` in epoch ms: when the provider last authenticated the person (undefined when it did not say). */
  authTime: number | undefined
  /** The ID token itself: the id_token_hint of the provider's logout (kept sealed with the session, never logged). */
  idToken: string
}

/** Why a callback did not produce an identity; each has its own page (sso-routes.ts). */
export class SsoError extends Error {
  constructor(
    readonly reason: 'provider_error' | 'provider_unreachable' | 'token_rejected',
    message: string,
  ) {
    super(message)
  }
}

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]'])

/**
 * Every call to the provider on a connection of its own. Sign-ins are minutes apart, and a provider (or
 * the proxy before it) closes an idle kept-alive connection after a few seconds (Node's http server: 5 s):
 * fetch's pool then sent the token request down a connection the other side had just closed, the request
 * failed with ECONNRESET and the admin saw "The identity provider could not be reached" (502) on a healthy
 * provider. A new connection per call costs one handshake per sign-in step, nothing anyone waits for.
 */
const onFreshConnection: oidc.CustomFetch = (url, options) => fetch(url, { ...options, keepalive: false } as RequestInit)

export function createOidcRelyingParty(sso: SsoConfig, clock: Clock) {
  let cached: { config: Promise<oidc.Configuration>; at: number } | undefined

  function configuration(): Promise<oidc.Configuration> {
    if (cached && clock.now() - cached.at < DISCOVERY_TTL_MS) return cached.config
    const issuer = new URL(sso.issuer)
    // Plain http only for a provider on this host (config.ts refuses it anywhere else).
    const insecure = issuer.protocol === 'http:' && LOOPBACK.has(issuer.hostname)
    const config = oidc.discovery(issuer, sso.clientId, { client_secret: sso.clientSecret, redirect_uris: [sso.redirectUri], response_types: ['code'] }, oidc.ClientSecretPost(sso.clientSecret), {
      // Non-repudiation checks: the ID token's signature is verified against the issuer's JWKS. Without it
      // openid-client (as OIDC Core 3.1.3.7 allows for a token fetched over TLS) would trust the token
      // endpoint's TLS alone; CONTRACT.md asks for the signature, and plain http on localhost has no TLS.
      execute: insecure ? [oidc.allowInsecureRequests, oidc.enableNonRepudiationChecks] : [oidc.enableNonRepudiationChecks],
      timeout: DISCOVERY_TIMEOUT_S,
      // Kept by the configuration for its later calls (token, JWKS) too.
      [oidc.customFetch]: onFreshConnection,
    })
    const entry = { config, at: clock.now() }
    cached = entry
    // A failed discovery is forgotten, so the next attempt asks the provider again.
    config.catch(() => {
      if (cached === entry) cached = undefined
    })
    return config
  }

  return {
    /**
     * The provider's authorization URL for a new flow, and the secrets the callback must match. `reauth`:
     * a step-up re-authentication, which asks the provider to authenticate the person again now
     * (`prompt=login`, `max_age=0`) even when they hold a session there.
     */
    async start(options: { reauth?: boolean } = {}): Promise<{ url: string; secrets: FlowSecrets }> {
      let config: oidc.Configuration
      try {
        config = await configuration()
      } catch (e) {
        throw new SsoError('provider_unreachable', `The identity provider's discovery document could not be read (${describe(e)}).`)
      }
      const secrets: FlowSecrets = { state: oidc.randomState(), nonce: oidc.randomNonce(), codeVerifier: oidc.randomPKCECodeVerifier() }
      const url = oidc.buildAuthorizationUrl(config, {
        redirect_uri: sso.redirectUri,
        scope: 'openid email profile',
        response_type: 'code',
        code_challenge: await oidc.calculatePKCECodeChallenge(secrets.codeVerifier),
        code_challenge_method: 'S256',
        state: secrets.state,
        nonce: secrets.nonce,
        ...(options.reauth ? { prompt: 'login', max_age: '0' } : {}),
      })
      return { url: url.href, secrets }
    },

    /**
     * Redeems the code of the callback (`query`: its parameters) and verifies the ID token: signature
     * (the issuer's JWKS), issuer, audience (and azp), expiry and issued-at (30 s tolerance), nonce,
     * plus the state and the PKCE verifier at the token endpoint.
     */
    async finish(query: URLSearchParams, secrets: FlowSecrets): Promise<SsoIdentity> {
      let config: oidc.Configuration
      try {
        config = await configuration()
      } catch (e) {
        throw new SsoError('provider_unreachable', `The identity provider's discovery document could not be read (${describe(e)}).`)
      }
      // The provider's refusal of this very flow (its state): said as such. openid-client checks `iss` first,
      // and a provider that sends none with an error would be reported as an ID-token failure.
      const refused = query.get('error')
      if (refused !== null && query.get('state') === secrets.state && !query.has('code')) throw new SsoError('provider_error', `The identity provider answered "${safeCode(refused)}".`)
      // The URL the provider redirected to, rebuilt from FIXLOOP_PUBLIC_URL (never the Host header).
      const current = new URL(sso.redirectUri)
      for (const [k, v] of query) current.searchParams.append(k, v)
      let tokens
      try {
        tokens = await oidc.authorizationCodeGrant(config, current, {
          pkceCodeVerifier: secrets.codeVerifier,
          expectedState: secrets.state,
          expectedNonce: secrets.nonce,
          idTokenExpected: true,
        }, { redirect_uri: sso.redirectUri })
      } catch (e) {
        if (e instanceof oidc.AuthorizationResponseError) throw new SsoError('provider_error', `The identity provider answered "${safeCode(e.error)}".`)
        if (e instanceof oidc.ResponseBodyError) throw new SsoError('token_rejected', `The identity provider refused the sign-in code ("${safeCode(e.error)}"): it may have been used already or have expired.`)
        if (isNetworkError(e)) throw new SsoError('provider_unreachable', `The identity provider could not be reached (${describe(e)}).`)
        throw new SsoError('token_rejected', `The identity provider's ID token did not pass the checks (${describe(e)}).`)
      }
      const claims = tokens.claims()
      if (!claims || !tokens.id_token) throw new SsoError('token_rejected', 'The identity provider sent no ID token.')
      // openid-client bounds exp and nbf but not iat: a token issued "later" than now (beyond the clock
      // tolerance it allows elsewhere) is refused here, as docs/security.md says.
      if (typeof claims.iat === 'number' && claims.iat * 1000 > clock.now() + ID_TOKEN_CLOCK_TOLERANCE_MS) {
        throw new SsoError('token_rejected', 'The identity provider\'s ID token did not pass the checks (its "iat" (issued at) is in the future: check the clocks of both servers).')
      }
      return {
        subject: claims.sub,
        email: typeof claims.email === 'string' ? claims.email : undefined,
        emailVerified: emailVerified(claims),
        // A number of seconds, or nothing: anything else is no statement of when the person signed in.
        authTime: typeof claims.auth_time === 'number' && Number.isFinite(claims.auth_time) ? claims.auth_time * 1000 : undefined,
        idToken: tokens.id_token,
      }
    },

    /**
     * Where to send the browser of an admin signing out of an SSO session, so the provider ends its own
     * session too (OpenID Connect RP-Initiated Logout 1.0): its `end_session_endpoint` with the session's
     * ID token as `id_token_hint` (the provider then knows whose session, and that the request is ours,
     * and may skip asking), `post_logout_redirect_uri` (the sign-in page; it must be registered at the
     * provider) and `client_id`. Undefined when the provider has no such endpoint or its discovery document
     * cannot be read within SIGN_OUT_DISCOVERY_WAIT_MS: the sign-out is then local only, as before.
     */
    async endSessionUrl(idToken: string): Promise<string | undefined> {
      let config: oidc.Configuration | undefined
      let waited: ReturnType<typeof setTimeout> | undefined
      const giveUp = new Promise<undefined>((resolve) => {
        waited = setTimeout(() => resolve(undefined), SIGN_OUT_DISCOVERY_WAIT_MS)
      })
      try {
        config = await Promise.race([configuration(), giveUp])
      } catch {
        return undefined
      } finally {
        clearTimeout(waited)
      }
      // Still fetching: sign out here; the discovery goes on and is kept for the next sign-in.
      if (!config) return undefined
      if (typeof config.serverMetadata().end_session_endpoint !== 'string') return undefined
      try {
        return oidc.buildEndSessionUrl(config, { id_token_hint: idToken, post_logout_redirect_uri: sso.postLogoutRedirectUri }).href
      } catch {
        return undefined // an endpoint that is no URL, or plain http away from this host
      }
    },
  }
}
export type OidcRelyingParty = ReturnType<typeof createOidcRelyingParty>

/**
 * Microsoft Entra ID's issuers (v2.0 endpoint): the global cloud and the US Government and China (21Vianet)
 * clouds, each with the tenant's id (a GUID: Entra's issuer never names the tenant by domain).
 */
const ENTRA_ISSUER = /^https:\/\/login\.(?:microsoftonline\.com|microsoftonline\.us|partner\.microsoftonline\.cn)\/[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\/v2\.0$/

/**
 * Whether the ID token's claims vouch for its email. Only a JSON true in `email_verified` counts: a string
 * "true" (seen from some providers' mappers) is not a verification. Entra ID sends no email_verified; its
 * optional claim xms_edov ("email domain owner verified": the address is in a domain the tenant verified)
 * says the same, and counts as such from Entra ID only: `xms_edov` means nothing in any other provider's
 * token, where whoever controls the claims (a user-editable mapper, a self-hosted provider) could add it to
 * pass an address as verified. `iss` was checked against the configured issuer before this.
 */
export function emailVerified(claims: { iss?: unknown; email_verified?: unknown; xms_edov?: unknown }): boolean {
  if (claims.email_verified === true) return true
  return claims.email_verified === undefined && claims.xms_edov === true && typeof claims.iss === 'string' && ENTRA_ISSUER.test(claims.iss)
}

/** An OAuth error code for a page: its own charset only (RFC 6749 allows %x20-21 / %x23-5B / %x5D-7E), bounded. */
function safeCode(code: unknown): string {
  const text = typeof code === 'string' ? code : 'unknown'
  return text.replace(/[^A-Za-z0-9_.-]/g, '').slice(0, 60) || 'unknown'
}

function isNetworkError(e: unknown): boolean {
  const code = (e as { code?: string; cause?: { code?: string } }).cause?.code ?? (e as { code?: string }).code
  return e instanceof TypeError || code === 'ConnectionRefused' || code === 'ECONNREFUSED' || code === 'OAUTH_TIMEOUT' || (e as Error).name === 'TimeoutError' || (e as Error).name === 'AbortError'
}

/**
 * A short, safe description of a library error: openid-client wraps oauth4webapi's error, whose message
 * names the failed check (e.g. 'unexpected JWT "aud" (audience) claim value'); never a token.
 */
function describe(e: unknown): string {
  let inner = e
  while (inner instanceof Error && inner.cause instanceof Error) inner = inner.cause
  const message = inner instanceof Error ? inner.message : String(inner)
  return clip(message.replace(/[\r\n]+/g, ' '), 200)
}

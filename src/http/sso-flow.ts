/**
 * The browser's half of an SSO flow: state, nonce and PKCE verifier travel in one short-lived cookie,
 * sealed (AES-256-GCM under the master key, so neither readable nor forgeable), HttpOnly and
 * SameSite=Lax: the callback is a cross-site top-level GET from the provider, which Lax lets through and
 * Strict would not. The cookie is cleared by the callback, and its state is remembered as spent until the
 * cookie would have expired, so a replayed callback (with the same cookie) is refused on this node too;
 * on other nodes the provider's single-use authorization code refuses it.
 */
import type { SecretBox } from '../core/crypto'
import type { Clock } from '../core/clock'
import { secureCookie, readCookies, type AdminAuthDeps } from './admin-auth'
import type { FlowSecrets } from '../modules/admins/oidc'

/** Ten minutes to sign in at the provider. */
export const FLOW_TTL_MS = 10 * 60_000
export const FLOW_COOKIE = 'fixloop_oidc'
/** Far above a real sealed flow (~250 characters): a huge cookie is junk, not worth decrypting. */
const MAX_COOKIE_CHARS = 2000

interface SealedFlow extends FlowSecrets {
  expiresAt: number
}

export function flowCookieName(deps: AdminAuthDeps, request: Request): string {
  return secureCookie(deps, request) ? `__Host-${FLOW_COOKIE}` : FLOW_COOKIE
}

function cookie(deps: AdminAuthDeps, request: Request, value: string, maxAgeSeconds: number): string {
  const secure = secureCookie(deps, request) ? '; Secure' : ''
  return `${flowCookieName(deps, request)}=${value}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${maxAgeSeconds}${secure}`
}

export function createSsoFlows(box: SecretBox, clock: Clock) {
  /** Spent states → when their cookie expires (then they could not be replayed anyway). */
  const spent = new Map<string, number>()

  function forgetExpired(now: number): void {
    for (const [state, until] of spent) if (until <= now) spent.delete(state)
  }

  return {
    /** The Set-Cookie header holding `secrets` for FLOW_TTL_MS. */
    seal(deps: AdminAuthDeps, request: Request, secrets: FlowSecrets): string {
      const flow: SealedFlow = { ...secrets, expiresAt: clock.now() + FLOW_TTL_MS }
      const value = box.seal(Buffer.from(JSON.stringify(flow))).slice(3) // the "v1:" prefix is put back on reading
      return cookie(deps, request, encodeURIComponent(value), FLOW_TTL_MS / 1000)
    },

    /** The Set-Cookie header that deletes the flow cookie. */
    cleared(deps: AdminAuthDeps, request: Request): string {
      return cookie(deps, request, '', 0)
    },

    /**
     * The flow of this request's cookie, once: undefined when there is none, it does not open (forged,
     * sealed under another key), it expired, there are two, or it was already used.
     */
    take(deps: AdminAuthDeps, request: Request): FlowSecrets | undefined {
      const values = readCookies(request, flowCookieName(deps, request))
      if (values.length !== 1 || values[0].length > MAX_COOKIE_CHARS) return undefined
      let flow: SealedFlow
      try {
        flow = JSON.parse(box.open(`v1:${decodeURIComponent(values[0])}`).toString('utf8')) as SealedFlow
      } catch {
        return undefined
      }
      const now = clock.now()
      if (typeof flow.state !== 'string' || typeof flow.nonce !== 'string' || typeof flow.codeVerifier !== 'string' || !(flow.expiresAt > now)) return undefined
      forgetExpired(now)
      if (spent.has(flow.state)) return undefined
      spent.set(flow.state, flow.expiresAt)
      return { state: flow.state, nonce: flow.nonce, codeVerifier: flow.codeVerifier }
    },
  }
}
export type SsoFlows = ReturnType<typeof createSsoFlows>

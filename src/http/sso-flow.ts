/**
 * The browser's half of an SSO flow: state, nonce and PKCE verifier travel in one short-lived cookie,
 * sealed (AES-256-GCM under the master key, so neither readable nor forgeable), HttpOnly and
 * SameSite=Lax: the callback is a cross-site top-level GET from the provider, which Lax lets through and
 * Strict would not. The cookie is cleared by the callback, and its state is remembered as spent until the
 * cookie would have expired, so a replayed callback (with the same cookie) is refused: in this node's memory
 * first (free), then by `spend`, the single-use claim every node shares (a proof-of-work solution's: Redis
 * SET NX in cluster mode, the database while Redis cannot answer or on one node). Before that claim was
 * shared, a state spent on one node opened its flow again at another node's callback, and only the
 * provider's single-use authorization code stood in the way (which a provider may not enforce strictly).
 *
 * Only the answer to a flow spends it: a callback must bring both the flow cookie and, in its query, the
 * state sealed in it. Another site can send this browser to the callback (a top-level GET carries the Lax
 * cookie) with no state, another one or an "error"; such a callback gets its page and leaves the flow, and
 * its cookie, as they were, so the sign-in under way still completes. The state alone, without the cookie
 * (from another browser), opens no flow at all.
 *
 * A step-up re-authentication's flow carries what it is for in the same sealed cookie: the session it
 * was started from, the admin, the purpose, when it started and the dashboard page to return to. Only
 * this server can write it (the seal is authenticated), so the callback never takes any of it from its
 * query, and any node of a cluster can finish it.
 */
import { createHash, timingSafeEqual } from 'node:crypto'
import type { SecretBox } from '../core/crypto'
import type { Clock } from '../core/clock'
import { secureCookie, readCookies, type AdminAuthDeps } from './admin-auth'
import type { FlowSecrets } from '../modules/admins/oidc'
import { isReauthPurpose, type ReauthPurpose } from '../modules/admins/sessions'

/** Ten minutes to sign in at the provider. */
export const FLOW_TTL_MS = 10 * 60_000
export const FLOW_COOKIE = 'fixloop_oidc'
/** Far above a real sealed flow (~250 characters): a huge cookie is junk, not worth decrypting. */
const MAX_COOKIE_CHARS = 2000

/** What a re-authentication flow is bound to (absent on a sign-in flow). */
export interface ReauthFlow {
  sessionId: string
  adminId: string
  purpose: ReauthPurpose
  /** When the flow started (server clock, ms): the ID token's auth_time may not be older. */
  startedAt: number
  /** A same-origin dashboard path (checked when the flow started). */
  returnTo: string
}

/** A flow as the callback gets it back. */
export interface TakenFlow extends FlowSecrets {
  reauth?: ReauthFlow
}

/**
 * The browser's flow and whether the callback answered it. `stateMatches` false: the query's state is not
 * the flow's, and the flow was NOT spent (the callback only says so, and leaves the cookie).
 */
export interface CallbackFlow {
  flow: TakenFlow
  stateMatches: boolean
}

interface SealedFlow extends TakenFlow {
  expiresAt: number
}

function isReauthFlow(v: unknown): v is ReauthFlow {
  const r = v as ReauthFlow
  return typeof r === 'object' && r !== null && typeof r.sessionId === 'string' && typeof r.adminId === 'string' && isReauthPurpose(r.purpose) && Number.isFinite(r.startedAt) && typeof r.returnTo === 'string'
}

export function flowCookieName(deps: AdminAuthDeps, request: Request): string {
  return secureCookie(deps, request) ? `__Host-${FLOW_COOKIE}` : FLOW_COOKIE
}

function cookie(deps: AdminAuthDeps, request: Request, value: string, maxAgeSeconds: number): string {
  const secure = secureCookie(deps, request) ? '; Secure' : ''
  return `${flowCookieName(deps, request)}=${value}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${maxAgeSeconds}${secure}`
}

/**
 * Claims `key` until `expiresAt` (epoch ms) across every node: true the first time, false when it was
 * claimed already (src/abuse/pow-service.ts `spend`). Never "true" for not knowing: it falls back to the
 * database, not to accepting.
 */
export type SpendOnce = (key: string, expiresAt: number) => Promise<boolean>

/** The shared claim's key of a state: a digest (fixed size; the state itself stays out of Redis and the database). */
export function spentStateKey(state: string): string {
  return `oidc:${createHash('sha256').update(state).digest('base64url')}`
}

/** `spend`: the shared single-use claim (absent: this node's memory only, as the unit tests use it). */
export function createSsoFlows(box: SecretBox, clock: Clock, spend?: SpendOnce) {
  /**
   * Spent states, in two generations of FLOW_TTL_MS each: a state is remembered at least FLOW_TTL_MS
   * after it was spent, by when its cookie (sealed at most FLOW_TTL_MS before) has expired and could
   * not be replayed anyway. Dropping a whole generation costs nothing per callback; sweeping one map
   * entry by entry on every callback made each callback cost as much as every state spent in the last
   * ten minutes, which anyone can add to (the start route hands out flows to everyone).
   */
  let current = new Set<string>()
  let previous = new Set<string>()
  let rotatedAt = clock.now()

  function isSpent(state: string, now: number): boolean {
    if (now - rotatedAt >= FLOW_TTL_MS) {
      // Two periods or more since the last rotation: both generations are old enough to forget.
      previous = now - rotatedAt >= 2 * FLOW_TTL_MS ? new Set() : current
      current = new Set()
      rotatedAt = now
    }
    return current.has(state) || previous.has(state)
  }

  return {
    /** The Set-Cookie header holding `secrets` (and what a re-authentication is bound to) for FLOW_TTL_MS. */
    seal(deps: AdminAuthDeps, request: Request, secrets: FlowSecrets, reauth?: ReauthFlow): string {
      const flow: SealedFlow = { ...secrets, ...(reauth ? { reauth } : {}), expiresAt: clock.now() + FLOW_TTL_MS }
      const value = box.seal(Buffer.from(JSON.stringify(flow))).slice(3) // the "v1:" prefix is put back on reading
      return cookie(deps, request, encodeURIComponent(value), FLOW_TTL_MS / 1000)
    },

    /** The Set-Cookie header that deletes the flow cookie. */
    cleared(deps: AdminAuthDeps, request: Request): string {
      return cookie(deps, request, '', 0)
    },

    /**
     * The flow of this request's cookie, spent when `answeredState` (the callback's state) is its state
     * (compared in constant time): undefined when there is none, it does not open (forged, sealed under
     * another key), it expired, there are two, or it was already used. A flow whose state is not the one
     * answered is handed back unspent, to refuse that callback without ending the sign-in under way.
     * A flow spent on another node is refused too (`spend`); one answer costs one shared claim, and
     * nothing else does (a refusal before it, a state that is not the flow's).
     */
    async take(deps: AdminAuthDeps, request: Request, answeredState: string | null): Promise<CallbackFlow | undefined> {
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
      if (flow.reauth !== undefined && !isReauthFlow(flow.reauth)) return undefined
      if (isSpent(flow.state, now)) return undefined
      const stateMatches = constantTimeEqual(answeredState ?? '', flow.state)
      if (stateMatches) {
        // Remembered here before the claim's await: a replay racing it on this node is refused at once.
        current.add(flow.state)
        if (spend && !(await spend(spentStateKey(flow.state), flow.expiresAt))) return undefined
      }
      const secrets = { state: flow.state, nonce: flow.nonce, codeVerifier: flow.codeVerifier }
      return { flow: flow.reauth ? { ...secrets, reauth: flow.reauth } : secrets, stateMatches }
    },
  }
}
export type SsoFlows = ReturnType<typeof createSsoFlows>

function constantTimeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a)
  const y = Buffer.from(b)
  return x.length === y.length && timingSafeEqual(x, y)
}

/**
 * Dashboard sessions, held server-side so each can be listed and revoked. The cookie carries a random
 * token; the table keeps only its SHA-256. Each session has its own CSRF token, which the page sends
 * back in X-CSRF-Token on every mutation.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto'
import type { Clock } from '../../core/clock'
import { isoUtc } from '../../core/clock'
import { newId } from '../../core/ids'
import { sha256Hex } from '../../core/secrets'
import type { AdminsRepo } from './repo'

export const SESSION_COOKIE = 'fixloop_admin'
export const SESSION_TTL_MS = 7 * 24 * 3600_000
/** Idle sessions end sooner than the absolute limit. */
export const SESSION_IDLE_MS = 24 * 3600_000

/**
 * The actions that ask a signed-in admin to prove again who they are (password, or the identity provider):
 * each hands out a credential that outlives the session (an sk_ key, the App's signing secret), changes
 * how the admin signs in, sets the commands this server runs for every queued report (the repository
 * connection's agent and verify commands), or sets where the Org's data keeps going on its own (a webhook
 * endpoint, a Slack channel, an issue tracker, the SMTP server that carries reporters' mail), lets someone
 * outside act for the Org on its own (a Slack user allowed to queue reports for the coding agent through
 * `/fixloop`), or hands out the secret that signs what goes there or comes back (a webhook's, a
 * tracker's). A stolen
 * session cookie is then worth what the session can do while it lasts, not a key, a command on the server,
 * a feed of the Org's reports or a Slack account acting for the Org that keeps working after the session
 * is revoked. Each action has its own purpose, so a confirmation given for one is never spent on another.
 */
export const REAUTH_PURPOSES = [
  'secret_reveal',
  'secret_rotate',
  'key_create',
  'totp_enable',
  'totp_disable',
  'repo_connect',
  'webhook_create',
  'webhook_secret_rotate',
  'smtp_change',
  'slack_connect',
  'slack_allow_user',
  'tracker_connect',
] as const
export type ReauthPurpose = (typeof REAUTH_PURPOSES)[number]
export const isReauthPurpose = (v: unknown): v is ReauthPurpose => typeof v === 'string' && (REAUTH_PURPOSES as readonly string[]).includes(v)

/**
 * How long a step-up re-authentication at the identity provider stands in for a password re-entry: long
 * enough to come back to the page and finish (scan a TOTP secret), short enough that a session left open
 * afterwards is not a standing licence. It is used once in any case (docs/security.md "Single sign-on").
 */
export const REAUTH_TTL_MS = 5 * 60_000

export interface ActiveSession {
  id: string
  adminId: string
  csrfToken: string
}

export function createSessionStore(repo: AdminsRepo, clock: Clock) {

  return {
    /**
     * Opens a session; returns the cookie value (shown once) and the CSRF token. `idTokenSealed`: a single
     * sign-on's ID token, sealed, kept with the session for the provider's logout when it ends.
     */
    async open(adminId: string, userAgent: string, ip: string, idTokenSealed?: string): Promise<{ token: string; session: ActiveSession }> {
      const token = randomBytes(32).toString('base64url')
      const csrfToken = randomBytes(24).toString('base64url')
      const id = newId(clock)
      const now = clock.now()
      await repo.insertSession({ id, tokenHash: sha256Hex(token), adminId, csrfToken, userAgent: userAgent.slice(0, 300), ip, createdAt: now, lastSeenAt: now, expiresAt: now + SESSION_TTL_MS, idTokenSealed: idTokenSealed ?? null })
      return { token, session: { id, adminId, csrfToken } }
    },

    /**
     * The live session behind a cookie value, or undefined (unknown, expired, idle too long, revoked).
     * `touch: false`: a check that is not the admin's activity (an open event stream's heartbeat), so
     * it does not keep an idle session alive.
     */
    async resolve(token: string | undefined, { touch = true }: { touch?: boolean } = {}): Promise<ActiveSession | undefined> {
      if (!token || token.length > 100) return undefined
      const row = await repo.sessionByTokenHash(sha256Hex(token))
      const now = clock.now()
      if (!row || row.revokedAt !== null || row.expiresAt <= now || now - row.lastSeenAt > SESSION_IDLE_MS) return undefined
      // One write a minute at most: a busy page does not turn every read into a write.
      if (touch && now - row.lastSeenAt > 60_000) await repo.touchSession(row.id, now)
      return { id: row.id, adminId: row.adminId, csrfToken: row.csrfToken }
    },

    async list(adminId: string) {
      const now = clock.now()
      return (await repo.liveSessions(adminId, now, now - SESSION_IDLE_MS)).map((r) => ({
        id: r.id, userAgent: r.userAgent, ip: r.ip, createdAt: isoUtc(r.createdAt), lastSeenAt: isoUtc(r.lastSeenAt), expiresAt: isoUtc(r.expiresAt),
      }))
    },

    /** Marks the session re-authenticated now for `purpose`; false when it is not the admin's live session. */
    markReauthenticated(sessionId: string, adminId: string, purpose: ReauthPurpose): Promise<boolean> {
      return repo.markReauthenticated(sessionId, adminId, purpose, clock.now())
    },

    /** Uses up the session's re-authentication for `purpose` when it is at most REAUTH_TTL_MS old: true once. */
    consumeReauthentication(sessionId: string, purpose: ReauthPurpose): Promise<boolean> {
      return repo.consumeReauthentication(sessionId, purpose, clock.now() - REAUTH_TTL_MS)
    },

    /** The session's re-authentication while it can still be used: its purpose and when it runs out. */
    async freshReauthentication(sessionId: string): Promise<{ purpose: ReauthPurpose; at: number; expiresAt: number } | undefined> {
      const r = await repo.reauthentication(sessionId)
      if (!r || !isReauthPurpose(r.purpose) || r.at + REAUTH_TTL_MS < clock.now()) return undefined
      return { purpose: r.purpose, at: r.at, expiresAt: r.at + REAUTH_TTL_MS }
    },

    /** Revokes one of the admin's sessions; false when it is not theirs or already gone. */
    revoke(adminId: string, sessionId: string): Promise<boolean> {
      return repo.revokeSession(adminId, sessionId, clock.now())
    },

    /**
     * Signs out of the admin's session: revokes it and hands back its sealed ID token (a single sign-on
     * session's, for the provider's logout), read before the revocation forgets it. Undefined when the
     * session was not live (already signed out, e.g. by a second tab racing this one).
     */
    async signOut(adminId: string, sessionId: string): Promise<{ idTokenSealed: string | undefined } | undefined> {
      const idTokenSealed = await repo.sessionIdToken(adminId, sessionId)
      return (await repo.revokeSession(adminId, sessionId, clock.now())) ? { idTokenSealed } : undefined
    },
  }
}
export type SessionStore = ReturnType<typeof createSessionStore>

/** Constant-time comparison of the presented CSRF token with the session's. */
export function csrfMatches(session: ActiveSession, presented: string | null): boolean {
  if (!presented) return false
  const a = Buffer.from(session.csrfToken)
  const b = Buffer.from(presented)
  return a.length === b.length && timingSafeEqual(a, b)
}

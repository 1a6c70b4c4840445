/**
 * Dashboard sessions, held server-side so each can be listed and revoked. The cookie carries a random
 * token; the table keeps only its SHA-256. Each session has its own CSRF token, which the page sends
 * back in X-CSRF-Token on every mutation.
 */
import type { Database } from 'bun:sqlite'
import { randomBytes, timingSafeEqual } from 'node:crypto'
import type { Clock } from '../../core/clock'
import { isoUtc } from '../../core/clock'
import { newId } from '../../core/ids'
import { sha256Hex } from '../../core/secrets'

export const SESSION_COOKIE = 'fixloop_admin'
export const SESSION_TTL_MS = 7 * 24 * 3600_000
/** Idle sessions end sooner than the absolute limit. */
export const SESSION_IDLE_MS = 24 * 3600_000

export interface ActiveSession {
  id: string
  adminId: string
  csrfToken: string
}

interface SessionRow {
  id: string
  admin_id: string
  csrf_token: string
  user_agent: string
  ip: string
  created_at: number
  last_seen_at: number
  expires_at: number
  revoked_at: number | null
}

export function createSessionStore(sqlite: Database, clock: Clock) {
  const byToken = sqlite.query('SELECT * FROM admin_sessions WHERE token_hash = ?')
  const touch = sqlite.query('UPDATE admin_sessions SET last_seen_at = ? WHERE id = ?')

  return {
    /** Opens a session; returns the cookie value (shown once) and the CSRF token. */
    open(adminId: string, userAgent: string, ip: string): { token: string; session: ActiveSession } {
      const token = randomBytes(32).toString('base64url')
      const csrfToken = randomBytes(24).toString('base64url')
      const id = newId(clock)
      const now = clock.now()
      sqlite
        .query('INSERT INTO admin_sessions (id, token_hash, admin_id, csrf_token, user_agent, ip, created_at, last_seen_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)')
        .run(id, sha256Hex(token), adminId, csrfToken, userAgent.slice(0, 300), ip, now, now, now + SESSION_TTL_MS)
      return { token, session: { id, adminId, csrfToken } }
    },

    /** The live session behind a cookie value, or undefined (unknown, expired, idle too long, revoked). */
    resolve(token: string | undefined): ActiveSession | undefined {
      if (!token || token.length > 100) return undefined
      const row = byToken.get(sha256Hex(token)) as SessionRow | null
      const now = clock.now()
      if (!row || row.revoked_at !== null || row.expires_at <= now || now - row.last_seen_at > SESSION_IDLE_MS) return undefined
      // One write a minute at most: a busy page does not turn every read into a write.
      if (now - row.last_seen_at > 60_000) touch.run(now, row.id)
      return { id: row.id, adminId: row.admin_id, csrfToken: row.csrf_token }
    },

    list(adminId: string) {
      const now = clock.now()
      return (
        sqlite
          .query('SELECT * FROM admin_sessions WHERE admin_id = ? AND revoked_at IS NULL AND expires_at > ? AND last_seen_at > ? ORDER BY id DESC LIMIT 100')
          .all(adminId, now, now - SESSION_IDLE_MS) as SessionRow[]
      ).map((r) => ({ id: r.id, userAgent: r.user_agent, ip: r.ip, createdAt: isoUtc(r.created_at), lastSeenAt: isoUtc(r.last_seen_at), expiresAt: isoUtc(r.expires_at) }))
    },

    /** Revokes one of the admin's sessions; false when it is not theirs or already gone. */
    revoke(adminId: string, sessionId: string): boolean {
      const res = sqlite.query('UPDATE admin_sessions SET revoked_at = ? WHERE id = ? AND admin_id = ? AND revoked_at IS NULL').run(clock.now(), sessionId, adminId)
      return res.changes === 1
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

/**
 * Dashboard sessions that ended (signed out or revoked, expired, or idle past SESSION_IDLE_MS: none of
 * them signs anyone in again, src/modules/admins/sessions.ts) are deleted once they have been over for a
 * while: each holds the address and browser its admin signed in from (and an SSO session until revoked,
 * its sealed ID token), which nothing reads once the session is over. Both dialects run this text with
 * their own placeholders: `${BEFORE}` the cut-off, `${IDLE_BEFORE}` the cut-off less the idle limit.
 */
export const deadSessionsSql = (before: string, idleBefore: string) =>
  `DELETE FROM admin_sessions WHERE (revoked_at IS NOT NULL AND revoked_at < ${before}) OR expires_at < ${before} OR last_seen_at < ${idleBefore}`

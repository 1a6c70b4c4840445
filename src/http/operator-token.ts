/**
 * The operator's bearer token (FIXLOOP_METRICS_TOKEN): what /metrics requires when it is set, and what
 * shows /readyz's details (which Apps' trackers fail, with their answers) instead of its public counts.
 * Compared in constant time (both sides hashed, so the lengths never differ).
 */
import { createHash, timingSafeEqual } from 'node:crypto'

const digest = (s: string) => createHash('sha256').update(s).digest()

/** What a request's Authorization header says about the operator token. */
export type OperatorAuth = 'unset' | 'absent' | 'match' | 'mismatch'

/** A checker for `token` (undefined: no token configured, every request is 'unset'). */
export function operatorToken(token: string | undefined): (request: Request) => OperatorAuth {
  const expected = token ? digest(token) : undefined
  return (request) => {
    if (!expected) return 'unset'
    const header = request.headers.get('authorization')
    if (!header) return 'absent'
    // One or more spaces after the scheme (RFC 6750, RFC 7235's 1*SP), as src/http/auth.ts reads keys.
    const given = /^Bearer +(.+)$/i.exec(header)?.[1] ?? ''
    return timingSafeEqual(digest(given), expected) ? 'match' : 'mismatch'
  }
}

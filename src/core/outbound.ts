/**
 * Small rules shared by every outbound HTTP client that talks to a git host or an issue tracker
 * (src/agent/hosts.ts, src/trackers/*) and by every inbound webhook check (src/modules/git-hooks/,
 * src/modules/trackers/): secrets kept out of messages, Retry-After read the same way, signatures and
 * tokens compared in constant time, and a webhook delivery's id or the hash of its body.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto'

/** `text` with every secret (4 characters or more) replaced by ***: error messages never carry a token. */
export function scrub(text: string, secrets: (string | null | undefined)[]): string {
  let out = text
  for (const s of secrets) if (s && s.length >= 4) out = out.split(s).join('***')
  return out
}

/** Retry-After in ms (seconds or an HTTP date), bounded to [1 s, 1 h]; null when absent or unreadable. */
export function retryAfterMs(value: string | null, now = Date.now()): number | null {
  if (!value) return null
  const seconds = /^\d{1,7}$/.test(value.trim()) ? Number(value.trim()) * 1000 : Date.parse(value) - now
  return Number.isFinite(seconds) ? Math.min(Math.max(seconds, 1000), 3600_000) : null
}

/** GitHub's REST headers for a token (pull requests and issues alike): its media type and pinned API version. */
export function githubHeaders(token: string): Record<string, string> {
  return { accept: 'application/vnd.github+json', authorization: `Bearer ${token}`, 'x-github-api-version': '2022-11-28' }
}

const sha256 = (s: string | Uint8Array) => createHash('sha256').update(s).digest()

/** Equal strings, in time independent of where they differ (both hashed first: lengths never leak). */
export function constantTimeEqual(a: string, b: string): boolean {
  return timingSafeEqual(sha256(a), sha256(b))
}

/** The hex HMAC-SHA256 of a delivery's raw body (GitHub's and Gitea's webhook signatures). */
export const hmacSha256Hex = (secret: string, raw: Uint8Array): string => createHmac('sha256', secret).update(raw).digest('hex')

/**
 * The delivery id a host sent (bounded, printable), or the body's hash when it sent none: a
 * byte-identical replay is then still recognised.
 */
export function deliveryIdOr(id: string | null, raw: Uint8Array): string {
  if (id && /^[\x21-\x7e]{1,128}$/.test(id)) return id
  return `sha256:${sha256(raw).toString('hex')}`
}

/**
 * A URL from a remote answer (a tracker's html_url/web_url, a git host's pull request URL) as fixloop
 * stores and shows it: an absolute http(s) URL without credentials, of at most `max` characters, in its
 * parsed form; else null. A hostile host's `javascript:` or `data:` "URL" must never become a link.
 */
export function remoteHttpUrl(value: unknown, max = 2048): string | null {
  if (typeof value !== 'string' || value.length === 0 || value.length > max) return null
  let url: URL
  try {
    url = new URL(value)
  } catch {
    return null
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.username || url.password) return null
  return url.href
}

/**
 * Browser-side stripping of credentials before anything leaves the page (the server sanitizes again):
 * bearer tokens, JWTs, API-key-shaped strings, key=value secrets, long opaque strings and the page's
 * own cookie values.
 */
import { cookie } from './safe-dom'

const PATTERNS: [RegExp, string][] = [
  [/\bBearer\s+[A-Za-z0-9._~+/=-]+/gi, 'Bearer [redacted]'],
  [/\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*/g, '[redacted-jwt]'],
  [/\b(?:sk|pk|pub|rk|ghp|gho|glpat|xox[abpr])[_-][A-Za-z0-9_-]{8,}/g, '[redacted-key]'],
  [/((?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|authorization|cookie|session(?:id)?|sig(?:nature)?|auth)["']?\s*[:=]\s*["']?)[^\s"'&,;}]+/gi, '$1[redacted]'],
  [/\b[A-Fa-f0-9]{32,}\b/g, '[redacted-hex]'],
  [/\b[A-Za-z0-9+/_-]{40,}={0,2}/g, '[redacted-token]'],
]

function cookieValues(): string[] {
  try {
    return cookie()
      .split(';')
      .map((pair) => pair.slice(pair.indexOf('=') + 1).trim())
      .filter((v) => v.length >= 6)
  } catch {
    return []
  }
}

/** The text with every credential-looking value replaced. */
export function scrub(text: string): string {
  let out = text
  for (const value of cookieValues()) out = out.split(value).join('[redacted-cookie]')
  for (const [re, replacement] of PATTERNS) out = out.replace(re, replacement)
  return out
}

/** A URL with its query values (and fragment) removed: `/api/x?id=&token=`. */
export function stripQueryValues(raw: string): string {
  try {
    const u = new URL(raw, location.href)
    const names = [...new Set([...u.searchParams.keys()])]
    const query = names.length ? '?' + names.map((n) => encodeURIComponent(n) + '=').join('&') : ''
    return scrub(u.origin + u.pathname) + query
  } catch {
    return scrub(String(raw).split(/[?#]/)[0])
  }
}

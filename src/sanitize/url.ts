/**
 * Sanitizes a page URL and keeps it a URL. It is parsed with `URL`; the userinfo, every path segment,
 * every query key and value and the fragment are decoded, run through the rules and, only where something
 * was replaced, encoded again, so tokens appear percent-encoded (`%5BREDACTED%3Aemail%5D`) and decode back
 * to `[REDACTED:email]`. A parameter with a sensitive name (`token`, `code`, `X-Amz-Signature`, …) loses
 * its whole value. A URL in which nothing was replaced is returned exactly as given.
 * The host is kept: it is the customer's own site, and hostnames are where triage starts.
 */
import { isNonSecretValue, isSensitiveParam } from './keys'
import { RULES } from './rules'
import type { Rule } from './rule'
import { countRedaction, sanitizeText, type RedactionCounts } from './sanitize'
import { isOnlyTokens, urlToken } from './tokens'

/** Percent-decoding that leaves malformed escapes as they are instead of throwing. */
function decode(s: string, plusIsSpace = false): string {
  const t = plusIsSpace ? s.replace(/\+/g, ' ') : s
  try {
    return decodeURIComponent(t)
  } catch {
    return t
  }
}

/** Runs a decoded component through the rules; returns the raw component when nothing changed. */
function sanitizeComponent(raw: string, counts: RedactionCounts, rules: readonly Rule[], plusIsSpace = false): string {
  const decoded = decode(raw, plusIsSpace)
  const clean = sanitizeText(decoded, counts, rules)
  return clean === decoded ? raw : encodeURIComponent(clean)
}

/**
 * A path: the rules see the whole decoded path at once (so `/Users/<name>/` is seen in context); changed
 * segments are re-encoded one by one and unchanged ones keep their original spelling.
 */
function sanitizePath(raw: string, counts: RedactionCounts, rules: readonly Rule[]): string {
  const segments = raw.split('/')
  // A segment holding an encoded slash keeps its encoding, so splitting the decoded path stays aligned.
  const decoded = segments.map((s) => (/%2f/i.test(s) ? s : decode(s)))
  const joined = decoded.join('/')
  const clean = sanitizeText(joined, counts, rules)
  if (clean === joined) return raw
  const cleanSegments = clean.split('/')
  if (cleanSegments.length !== segments.length) return cleanSegments.map((s) => encodeURIComponent(s)).join('/')
  return cleanSegments.map((s, i) => (s === decoded[i] ? segments[i] : encodeURIComponent(s))).join('/')
}

/** `a=1&b=2`: a sensitive key loses its value; other keys and values go through the rules. */
function sanitizeQuery(raw: string, counts: RedactionCounts, rules: readonly Rule[]): string {
  return raw
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=')
      if (eq === -1) return sanitizeComponent(pair, counts, rules, true)
      const key = pair.slice(0, eq)
      const value = pair.slice(eq + 1)
      const name = decode(key, true)
      const plain = decode(value, true)
      if (isSensitiveParam(name) && !isNonSecretValue(plain) && !isOnlyTokens(plain)) {
        countRedaction(counts, 'secret')
        return `${sanitizeComponent(key, counts, rules, true)}=${urlToken('secret')}`
      }
      return `${sanitizeComponent(key, counts, rules, true)}=${sanitizeComponent(value, counts, rules, true)}`
    })
    .join('&')
}

/**
 * A fragment is a query (`#access_token=…&state=…`), a client-side route with a query (`#/cb?code=…`)
 * or a route or plain text (`#/users/…`).
 */
function sanitizeFragment(raw: string, counts: RedactionCounts, rules: readonly Rule[]): string {
  const q = raw.indexOf('?')
  if (q !== -1) return sanitizePath(raw.slice(0, q), counts, rules) + '?' + sanitizeQuery(raw.slice(q + 1), counts, rules)
  if (/^[^/]*=/.test(raw)) return sanitizeQuery(raw, counts, rules)
  return sanitizePath(raw, counts, rules)
}

/** `user:password@` goes as a whole when it holds a password; a bare user name goes through the rules. */
function sanitizeUserinfo(u: URL, counts: RedactionCounts, rules: readonly Rule[]): string {
  if (u.password !== '' && !isOnlyTokens(decode(u.username)) && !isNonSecretValue(decode(u.password))) {
    countRedaction(counts, 'url_credentials')
    return urlToken('url_credentials') + '@'
  }
  if (u.username === '' && u.password === '') return ''
  const user = sanitizeComponent(u.username, counts, rules)
  return user + (u.password === '' ? '' : ':' + u.password) + '@'
}

/** The home-folder rule is for `file:` URLs; on a web page `/home/…` and `/Users/…` are routes. */
const webRules = new WeakMap<readonly Rule[], readonly Rule[]>()
function pathRules(u: URL, rules: readonly Rule[]): readonly Rule[] {
  if (u.protocol === 'file:') return rules
  let filtered = webRules.get(rules)
  if (!filtered) webRules.set(rules, (filtered = rules.filter((r) => r.name !== 'username')))
  return filtered
}

/** Sanitizes a URL; the result still parses with `new URL()`. Text that is not a URL is sanitized as text. */
export function sanitizeUrl(raw: string, counts: RedactionCounts, rules: readonly Rule[] = RULES): string {
  let u: URL
  try {
    u = new URL(raw)
  } catch {
    return sanitizeText(raw, counts, rules)
  }
  const found: RedactionCounts = {}
  const userinfo = sanitizeUserinfo(u, found, rules)
  const path = sanitizePath(u.pathname, found, pathRules(u, rules))
  const search = u.search === '' ? '' : '?' + sanitizeQuery(u.search.slice(1), found, rules)
  const hash = u.hash === '' ? '' : '#' + sanitizeFragment(u.hash.slice(1), found, rules)
  if (Object.keys(found).length === 0) return raw
  for (const [name, n] of Object.entries(found)) counts[name] = (counts[name] ?? 0) + n
  const authority = u.href.startsWith(u.protocol + '//') ? '//' + userinfo + u.host : ''
  const out = URL.parse(u.protocol + authority + path + search + hash)
  // Every piece above is either as URL serialized it or percent-encoded, so parsing cannot fail; if it
  // ever did, an unparseable URL must not be stored in place of a valid one. The serialized form is
  // returned so that a second pass parses back exactly what it sees (idempotency).
  return out ? out.href : sanitizeText(raw, counts, rules)
}

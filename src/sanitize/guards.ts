/**
 * The context checks behind the rules' false-positive guards: JWT headers, Basic credentials, and the
 * words around a number that say it is a version, an id or a price rather than an address or a phone.
 */
import type { Candidate } from './rule'

/** The text on the same line just before a candidate (at most `width` characters). */
export function before(c: Candidate, width = 32): string {
  const from = Math.max(0, c.start - width)
  const s = c.text.slice(from, c.start)
  const nl = s.lastIndexOf('\n')
  return nl === -1 ? s : s.slice(nl + 1)
}

/** The text on the same line just after a candidate (at most `width` characters). */
export function after(c: Candidate, width = 16): string {
  const s = c.text.slice(c.end, c.end + width)
  const nl = s.indexOf('\n')
  return nl === -1 ? s : s.slice(0, nl)
}

/** A named group of the candidate's match (e.g. the random part of a vendor token). */
export const group = (c: Candidate, name: string): string | undefined => c.match.groups?.[name]

/** The first segment of a JWT is base64url JSON naming its algorithm. */
export function isJwtHeader(segment: string): boolean {
  try {
    const header = JSON.parse(Buffer.from(segment, 'base64url').toString('utf8'))
    return typeof header === 'object' && header !== null && typeof header.alg === 'string'
  } catch {
    return false
  }
}

/** Basic credentials are base64 of printable `user:password`; "Basic authentication" decodes to noise. */
export function isBasicCredential(value: string): boolean {
  if (value.replace(/=+$/, '').length % 4 === 1) return false
  const decoded = Buffer.from(value, 'base64').toString('latin1')
  return /^[\x20-\x7e]+$/.test(decoded) && decoded.includes(':')
}

/** Words that, just before a dotted number, make it a version rather than an address. */
const VERSION_BEFORE = /(?:\b(?:v|ver|version|build|release|rv|rev|revision|firmware|fw|update[ds]?|upgraded?|patch|sdk|api|os|ios|android|macos|windows|node|bun|npm|chrome|firefox|safari|edge)\.?(?:\s+to)?)[\s:=#-]{0,3}$/i

/**
 * A dotted number is a version when a version word or a product token (`Chrome/`, `Edg/` at the start
 * of a word, not a path segment like `/users/`) precedes it, or a pre-release suffix (`-beta`) follows.
 * `productBefore`: which product tokens count (an IPv4-shaped quad takes `NAMED_PRODUCT_BEFORE` only).
 */
export function isVersionContext(c: Candidate, productBefore = ANY_PRODUCT_BEFORE): boolean {
  const b = before(c)
  return VERSION_BEFORE.test(b) || productBefore.test(b) || /^-[A-Za-z]/.test(after(c))
}
const ANY_PRODUCT_BEFORE = /(?:^|[\s(;,])[A-Za-z][\w.-]*\/$/
/**
 * A product before a slash, for a dotted quad (`Chrome/120.0.0.0`, `SeaMonkey/`, `Build/`): capitalized,
 * no dot or digit in it. Java prints an address as `host/1.2.3.4` (`Call From nn1.example.com/203.0.113.7
 * to …`), so a lower-case, dotted or numbered name before the slash leaves the quad an address.
 */
export const NAMED_PRODUCT_BEFORE = /(?:^|[\s(;,])[A-Z][A-Za-z-]*\/$/

/**
 * "Upgrade jackson-databind to 2.9.10.2", "Bump com.fasterxml.jackson.core:jackson-databind from
 * 2.9.10.1 to 2.9.10.2", "…:jackson-databind:2.9.10.3": a four-part number after an upgrade verb and a
 * package name, or in a Maven coordinate, is that package's version. Trackers file one such issue per
 * version, and the clustering compares the versions to keep them apart (docs/triage.md); redacted, two
 * versions became one placeholder. Only a quad whose first part is below 50 (and not the private 10.*)
 * can be such a version; a quad after a plain word ("update the proxy to …") stays an address too.
 */
// The package name must look like one (`jackson-databind`, `org.foo:bar`, `@scope/pkg`, `log4j`): a plain
// word ("update the proxy to …") may name a host.
const UPGRADE_BEFORE =
  /\b(?:upgrad|bump|updat|downgrad|pin)\w*\s+(?:the\s+)?(?:[\w@/]*[-.:@/][\w.:@/-]*\w|[a-z]+\d[a-z\d]*)\s+(?:(?:dependency|package|library|version)\s+)?(?:from\s+\S+\s+)?(?:from|to)\s+$/i
const MAVEN_BEFORE = /[A-Za-z][\w.-]*:[A-Za-z][\w.-]*:$/

export function isPackageVersionContext(c: Candidate, octets: readonly number[]): boolean {
  // Versions start small (2.9.10.2, 4.1.100.1, 1.78.1.1); most of the address space does not, so an
  // address after "update api-gateway to" mostly stays redacted too.
  if (!versionLikeQuad(octets)) return false
  const line = before(c, 120)
  return UPGRADE_BEFORE.test(line) || MAVEN_BEFORE.test(line) || ARTIFACT_BEFORE.test(line)
}
const versionLikeQuad = (octets: readonly number[]) => octets[0] < 50 && octets[0] !== 10
/** An artifact named with its version (`hadoop-0.20.203.0`, `jackson-databind-2.9.10.2`): a word, then a dash. */
const ARTIFACT_BEFORE = /(?:^|[\s(;,'"`])[A-Za-z][\w.-]*[A-Za-z]-$/

/** Words that make a grouped number an id, a price or a version, not a phone number. */
const ID_BEFORE = /(?:\b(?:order|invoice|ticket|case|ref|reference|sku|id|build|version|ver|v|serial|tracking|iban|bic|account|acct|isbn|ean|upc)\b\.?|#|\$|€|£|¥)[\s:#=-]{0,3}$/i

export const isIdContext = (c: Candidate): boolean => ID_BEFORE.test(before(c))

/** An AWS secret key is 40 base64 characters with an AWS or secret word, or an access key id, close before it. */
export function hasAwsContext(c: Candidate): boolean {
  // Other tokens' names ("[REDACTED:secret]") are not context: they were not in the text first time round.
  const context = before(c, 96).replace(/\[REDACTED:(?!aws_access_key_id\])[a-z0-9_]+\]/g, ' ')
  return /aws|secret|access.?key|\[REDACTED:aws_access_key_id\]/i.test(context)
}

/** Random tokens mix upper case, lower case and digits; words, hex digests and UUIDs do not. */
export const mixesCharacterClasses = (s: string): boolean => /[A-Z]/.test(s) && /[a-z]/.test(s) && /\d/.test(s)

/**
 * The sanitizer's rule table: each rule has a name, a detector and a typed replacement token.
 * Replacement tokens look like `[REDACTED:email]` and match no rule, so sanitizing twice changes nothing.
 * This is the core set; the triage pipeline issue extends the table (vendor tokens, PII, entropy).
 */
export interface Rule {
  name: string
  /** Global regex; every match is replaced. */
  pattern: RegExp
  /** Optional guard: return false to keep a match (a look-alike). */
  keep?: (match: string) => boolean
  /** Credential rules apply to every field, including the user agent; PII rules to free text only. */
  kind: 'credential' | 'pii'
}

export const token = (name: string): string => `[REDACTED:${name}]`

function looksLikeJwt(match: string): boolean {
  try {
    const header = JSON.parse(Buffer.from(match.split('.')[0], 'base64url').toString('utf8'))
    return typeof header === 'object' && header !== null && 'alg' in header
  } catch {
    return false
  }
}

export const RULES: readonly Rule[] = [
  {
    name: 'private_key',
    pattern: /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----/g,
    kind: 'credential',
  },
  { name: 'jwt', pattern: /\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\b/g, keep: (m) => !looksLikeJwt(m), kind: 'credential' },
  { name: 'bearer', pattern: /\b(?<=(?:Bearer|Basic)\s+)[A-Za-z0-9\-._~+/]{8,}=*/g, kind: 'credential' },
  { name: 'fixloop_key', pattern: /\bsk_[A-Za-z0-9_-]{20,}/g, kind: 'credential' },
  { name: 'aws_access_key', pattern: /\b(?:AKIA|ASIA)[A-Z0-9]{16}\b/g, kind: 'credential' },
  { name: 'github_token', pattern: /\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})\b/g, kind: 'credential' },
  { name: 'url_credentials', pattern: /(?<=\b[a-z][a-z0-9+.-]*:\/\/)[^\s/:@]+:[^\s/@]+(?=@)/gi, kind: 'credential' },
  {
    name: 'email',
    pattern: /\b[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b/g,
    // "logo@2x.png" and similar asset names are not addresses.
    keep: (m) => /@\d+x\.(?:png|jpe?g|gif|webp|svg)$/i.test(m),
    kind: 'pii',
  },
]

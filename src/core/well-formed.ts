/**
 * Unpaired UTF-16 surrogates (`"\ud800"` in JSON): a string JavaScript can hold but Unicode cannot. Stored
 * as they came, they left the API's JSON unparseable for strict parsers (jq, serde_json: an audit's
 * export for a SIEM) wherever a field is kept as JSON (metadata, console logs, audit data); a text column
 * turned them into U+FFFD on the way to the database. Now every string a client or a third party sends is
 * made well-formed at the HTTP edge, one rule for every field and store: each unpaired surrogate becomes
 * U+FFFD (a client cutting text by UTF-16 units splits an emoji: the report is kept, not refused). Where a
 * string names someone (a user token's `sub`), two different ill-formed values would become one identity:
 * those are refused instead (src/auth/user-token.ts).
 */

import { setJsonMember } from './json-member'

/** A JSON escape of a surrogate (`\ud800`-`\udfff`): JSON text decoded from valid UTF-8 holds no other kind. */
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/

/**
 * Whether a JSON text may hold an unpaired surrogate: cheap, on the text, so the usual body is never walked.
 * Paired escapes (an emoji written `\ud83d\ude00`) answer true too; the walk then changes nothing.
 */
export const jsonTextMayHoldSurrogate = (text: string): boolean => SURROGATE_ESCAPE.test(text)

/** A parsed JSON value with every string and key well-formed (unpaired surrogates → U+FFFD). */
export function wellFormed<T>(value: T): T {
  if (typeof value === 'string') return (value.isWellFormed() ? value : value.toWellFormed()) as T
  if (value === null || typeof value !== 'object') return value
  if (Array.isArray(value)) return value.map(wellFormed) as T
  const out: Record<string, unknown> = {}
  for (const [key, v] of Object.entries(value)) setJsonMember(out, key.isWellFormed() ? key : key.toWellFormed(), wellFormed(v))
  return out as T
}

/** Whether every string and key of a parsed JSON value is well-formed. */
export function isWellFormedDeep(value: unknown): boolean {
  if (typeof value === 'string') return value.isWellFormed()
  if (value === null || typeof value !== 'object') return true
  if (Array.isArray(value)) return value.every(isWellFormedDeep)
  return Object.entries(value).every(([key, v]) => key.isWellFormed() && isWellFormedDeep(v))
}

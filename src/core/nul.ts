/**
 * NUL (U+0000) in strings that reach the database. PostgreSQL's `text` cannot hold the byte (it refuses
 * the whole statement), SQLite stores it: so the same input must get the same answer on both stores,
 * decided here (docs/security.md "NUL"). What a client sends is refused at the HTTP edge
 * (http/strict-json.ts, http/foundation.ts); what a third party delivers (git-host and tracker
 * webhooks) is stripped, since refusing would make the host retry it forever; the PostgreSQL pool refuses
 * whatever slips through (db/pg/client-options.ts).
 */

import { setJsonMember } from './json-member'
import { firstPathWhere } from './json-walk'
import { jsonTextMayHoldSurrogate, wellFormed } from './well-formed'

/** U+0000, the one character PostgreSQL's `text` cannot hold. */
export const NUL = '\u0000'

/** The refusal's message, the same wherever NUL is refused. */
export const NUL_MESSAGE = 'must not contain NUL (U+0000)'

/** The escape a JSON text writes NUL as (JSON has no other way: a raw control character is invalid). */
const JSON_NUL_ESCAPE = '\\u0000'

/**
 * The JSON pointer of the first string (a value or an object key) holding NUL in a parsed JSON value, or
 * undefined. Keys are pointed at by their own path.
 */
export const nulPath = (value: unknown): string | undefined =>
  firstPathWhere(value, (v) => typeof v === 'string' && v.includes(NUL), (key) => key.includes(NUL))

/**
 * Whether a JSON text may hold NUL: cheap, on the text, so the usual body is never walked. A true answer
 * can be wrong (an escaped backslash followed by "u0000"): nulPath on the parsed value decides.
 */
export const jsonTextMayHoldNul = (text: string): boolean => text.includes(JSON_NUL_ESCAPE)

/** A parsed JSON value with NUL removed from every string and key (a third party's delivery). */
export function stripNul<T>(value: T): T {
  if (typeof value === 'string') return (value.includes(NUL) ? value.replaceAll(NUL, '') : value) as T
  if (value === null || typeof value !== 'object') return value
  if (Array.isArray(value)) return value.map(stripNul) as T
  const out: Record<string, unknown> = {}
  for (const [key, v] of Object.entries(value)) setJsonMember(out, key.replaceAll(NUL, ''), stripNul(v))
  return out as T
}

/**
 * Parses a third party's JSON delivery (UTF-8 bytes; throws on invalid UTF-8 or JSON like JSON.parse),
 * with NUL stripped from every string (a host that got a 4xx would redeliver the same bytes forever) and
 * unpaired surrogates made U+FFFD.
 */
export function parseDeliveryJson(raw: Uint8Array): unknown {
  const text = new TextDecoder('utf-8', { fatal: true }).decode(raw)
  const value = JSON.parse(text) as unknown
  const withoutNul = jsonTextMayHoldNul(text) ? stripNul(value) : value
  // Unpaired surrogates become U+FFFD, as in what a client sends (core/well-formed.ts).
  return jsonTextMayHoldSurrogate(text) ? wellFormed(withoutNul) : withoutNul
}

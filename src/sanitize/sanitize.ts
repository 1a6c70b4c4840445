/**
 * The engine: applies a rule table to a string or a JSON value, counting replacements per rule.
 * Rules run one after another over the text the previous rule left. A candidate made only of tokens is
 * skipped, one that starts inside a token is no candidate, and one that cuts into a token grows to
 * swallow it, so no token is ever split or re-redacted; the passes repeat until the text is stable, so
 * sanitizing twice changes nothing.
 */
import { setJsonMember } from '../core/json-member'
import { isNonSecretValue, isSensitiveKey } from './keys'
import { CREDENTIAL_RULES, RULES } from './rules'
import type { Rule } from './rule'
import { isOnlyTokens, token, tokenSpans } from './tokens'
import { INVISIBLE, isInvisible } from './invisible'

export { CREDENTIAL_RULES, RULES }
export type { Rule }

/** Per-rule counts of replaced values, e.g. `{ email: 2, jwt: 1 }`; never the values themselves. */
export type RedactionCounts = Record<string, number>

export const countRedaction = (counts: RedactionCounts, name: string): void => {
  counts[name] = (counts[name] ?? 0) + 1
}

/** The token span strictly around offset `i` (s < i < e), if any; `spans` is sorted and disjoint. */
function spanAround(spans: [number, number][], i: number): [number, number] | undefined {
  let lo = 0
  let hi = spans.length - 1
  while (lo <= hi) {
    const mid = (lo + hi) >> 1
    const [s, e] = spans[mid]
    if (e <= i) lo = mid + 1
    else if (s >= i) hi = mid - 1
    else return spans[mid]
  }
  return undefined
}

/**
 * Typographic forms of the separators and digits that numbers are written with, which a reader takes
 * for their ASCII forms: no-break, narrow no-break, figure, thin and ideographic spaces (French phone
 * numbers, `&nbsp;` in a number shown on a page), hyphens, non-breaking hyphens and en dashes (a phone
 * number kept from wrapping), and the full-width digits, `+`, `-`, `(`, `)`, `.`, `/` and `@` of CJK
 * input methods. Each maps to one ASCII character, so offsets stay the same. Not the full-width `：`
 * and `＝` (the `key=value` rule reads them itself) nor brackets (`［REDACTED:…］` must stay no token).
 */
const FOLDABLE = /[\u00A0\u1680\u2000-\u200A\u202F\u205F\u3000\u2010-\u2013\u2212\uFE63\uFF08\uFF09\uFF0B\uFF0D-\uFF19\uFF20]/
const FOLDABLE_ALL = new RegExp(FOLDABLE.source, 'g')

function foldChar(ch: string): string {
  const code = ch.charCodeAt(0)
  if (code >= 0xff08) return String.fromCharCode(code - 0xfee0) // full-width form → ASCII
  if ((code >= 0x2010 && code <= 0x2013) || code === 0x2212 || code === 0xfe63) return '-'
  return ' '
}

/** `text` with typographic separators and full-width digits as their ASCII forms, offset for offset. */
export const fold = (text: string): string => text.replace(FOLDABLE_ALL, foldChar)

const INVISIBLE_ALL = new RegExp(INVISIBLE.source, 'g')

/** The text the rules read, and for each of its offsets the offset in the text it came from. */
interface Scan {
  scan: string
  /** `at[i]`: where `scan[i]` is in the text; `at[scan.length]` is the text's length. Absent: the same offsets. */
  at?: Int32Array
}

/** `text` without its invisible characters, with where each kept character was. */
function withoutInvisibles(text: string): Scan {
  const scan = text.replace(INVISIBLE_ALL, '')
  const at = new Int32Array(scan.length + 1)
  let n = 0
  for (let i = 0; i < text.length; i++) if (!isInvisible(text.charCodeAt(i))) at[n++] = i
  at[n] = text.length
  return { scan, at }
}

/**
 * Applies one rule to `text`. The rule reads `scan`: the same text with separators folded (offsets are
 * the same: a number typeset with no-break spaces is the number) and, where `at` is given, its invisible
 * characters left out (`at` maps the scan's offsets back). What is kept is kept as written; a value
 * replaced takes the invisible characters inside it along.
 */
export function applyRule(text: string, rule: Rule, counts: RedactionCounts, scan = text, at?: Int32Array): string {
  if (rule.mayMatch && !rule.mayMatch(scan)) return text
  const tokens = tokenSpans(text)
  // A start is where its first character is; an end is just past its last one (not past the invisible
  // characters that follow it, which stay outside the replacement).
  const startIn = (i: number): number => (at === undefined ? i : at[i])
  const endIn = (i: number): number => (at === undefined || i === 0 ? i : at[i - 1] + 1)
  let out = ''
  let last = 0
  for (const c of rule.detect(scan)) {
    const cStart = startIn(c.start)
    const cEnd = endIn(c.end)
    // A match that begins inside a token read the token's own text (`…:opaque_token]: x` is no key).
    if (cStart < last || spanAround(tokens, startIn(c.match.index))) continue
    // A candidate that cuts into a token grows to cover it; if that leaves nothing but tokens, it was
    // only ever reading a token (`/Users/[REDACTED` of `/Users/[REDACTED:username]`).
    const start = spanAround(tokens, cStart)?.[0] ?? cStart
    const end = spanAround(tokens, cEnd)?.[1] ?? cEnd
    if (start < last || isOnlyTokens(text.slice(start, end)) || rule.keep?.(c)) continue
    out += text.slice(last, start) + rule.token
    last = end
    countRedaction(counts, rule.name)
  }
  return last === 0 ? text : out + text.slice(last)
}

/**
 * Most texts are clean after one pass. A replacement can still open a new boundary (`…52+2848 9596`:
 * once the first number is a token, `+2848 9596` starts a phone number), so a changed text gets another
 * pass until nothing changes. Every pass reads the whole text, so the passes are the sanitizer's cost
 * multiplier: a chain of values glued together (`card+phone+phone+…`, each hidden behind the one before)
 * would take a pass per link. After MAX_PASSES a text that still changes is withheld whole
 * (`[REDACTED:unsanitizable]`): never kept raw, and never more than MAX_PASSES passes of work. Real text
 * needs two passes, rarely three.
 */
export const MAX_PASSES = 4

/** The rule name counted when a text could not be sanitized and was withheld. */
export const WITHHELD = 'unsanitizable'

/** Replaces every value the rules catch with its typed token, to a fixed point (idempotent). */
export function sanitizeText(text: string, counts: RedactionCounts, rules: readonly Rule[] = RULES): string {
  let out = text
  const found: RedactionCounts = {}
  // Tokens hold no foldable or invisible character and replacements only remove text: a text without
  // one never has one.
  const folds = FOLDABLE.test(text)
  const hides = INVISIBLE.test(text)
  const prepare = (t: string): Scan => {
    const folded = folds ? fold(t) : t
    return hides ? withoutInvisibles(folded) : { scan: folded }
  }
  let prepared = text
  let read = prepare(text)
  for (let pass = 0; pass < MAX_PASSES; pass++) {
    const before = out
    for (const rule of rules) {
      // Prepared again only after a rule replaced something (an unchanged text is the same string).
      if ((folds || hides) && out !== prepared) read = prepare((prepared = out))
      out = folds || hides ? applyRule(out, rule, found, read.scan, read.at) : applyRule(out, rule, found)
    }
    if (out === before) {
      for (const [name, n] of Object.entries(found)) counts[name] = (counts[name] ?? 0) + n
      return out
    }
  }
  countRedaction(counts, WITHHELD)
  return token(WITHHELD)
}

/** The token that replaces the whole value of a sensitive key in JSON. */
export const SECRET_VALUE = token('secret')

/** Does the value under a sensitive key hold anything to hide? (null, booleans and "" do not.) */
function holdsSecret(value: unknown): boolean {
  if (value === null || value === undefined || typeof value === 'boolean') return false
  if (typeof value === 'string') return !isNonSecretValue(value) && !isOnlyTokens(value)
  return true
}

/**
 * Sanitizes a JSON value: every string through the rules, recursively. A member whose key is sensitive
 * (`password`, `apiKey`, `set-cookie`, …) has its whole value replaced, whatever its type. Keys are run
 * through the rules too (metadata keyed by email address happens); two keys that sanitize alike are
 * kept apart with a ` (2)` suffix.
 */
export function sanitizeJson(value: unknown, counts: RedactionCounts, rules: readonly Rule[] = RULES): unknown {
  if (typeof value === 'string') return sanitizeText(value, counts, rules)
  if (Array.isArray(value)) return value.map((v) => sanitizeJson(v, counts, rules))
  if (value === null || typeof value !== 'object') return value
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(value)) {
    let key = sanitizeText(k, counts, rules)
    for (let n = 2; Object.hasOwn(out, key); n++) key = `${sanitizeText(k, {}, rules)} (${n})`
    if (isSensitiveKey(k) && holdsSecret(v)) {
      setJsonMember(out, key, SECRET_VALUE)
      countRedaction(counts, 'secret')
    } else {
      setJsonMember(out, key, sanitizeJson(v, counts, rules))
    }
  }
  return out
}

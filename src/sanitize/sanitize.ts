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

/** The text the rules read, and for each of its offsets the offset in the text it came from. */
interface Scan {
  scan: string
  /** `at[i]`: where `scan[i]` is in the text; `at[scan.length]` is the text's length. Absent: the same offsets. */
  at?: Int32Array
}

/** Does a text hold a percent-encoded `+` or space (a number in an encoded URL of a console line)? */
const hasEncodedNumberPart = (text: string): boolean => text.includes('%2')
const isDigit = (code: number): boolean => code >= 48 && code <= 57

/** `%2B` (either case) at `i` of `text`, followed by a digit: an encoded `+` starting a number. */
const encodedPlusAt = (text: string, i: number): boolean =>
  text.charCodeAt(i) === 37 && text.charCodeAt(i + 1) === 50 && (text.charCodeAt(i + 2) | 32) === 98 && isDigit(text.charCodeAt(i + 3))

/**
 * The character an escape at `i` stands for when it is part of an encoded number: `%2B` before a digit
 * (`+`), `%20` between digits (` `, `afterDigit`: the character read before it is one), and the encoded
 * delimiter just before such a `+` (`%3D%2B33…` of an encoded `phone=+33…`: `=`, so the number starts
 * after a delimiter, not after the escape's last letter). -1 for any other escape, read as written.
 */
function numberPart(text: string, i: number, afterDigit: boolean): number {
  if (encodedPlusAt(text, i)) return 43
  if (text.charCodeAt(i + 1) === 50 && text.charCodeAt(i + 2) === 48 && afterDigit && isDigit(text.charCodeAt(i + 3))) return 32
  if (encodedPlusAt(text, i + 3)) {
    const hex = text.slice(i + 1, i + 3)
    const ch = /^[0-9A-Fa-f]{2}$/.test(hex) ? parseInt(hex, 16) : -1
    // `=`, `&`, `/`, `?`, `:`, `,`, `;`, `#`, a space
    if (ch === 61 || ch === 38 || ch === 47 || ch === 63 || ch === 58 || ch === 44 || ch === 59 || ch === 35 || ch === 32) return ch
  }
  return -1
}

/**
 * `text` as the rules read it, with where each of its characters came from: without its invisible
 * characters (`hides`), and (`encodes`) with the percent-encoded `+` before a digit and space between
 * digits of an encoded URL decoded (`?phone=%2B44%2020%207946%200958` in a failed request's console line
 * is `+44 20 7946 0958`). Only those: any other escape stays, so no other rule reads a URL differently.
 */
function readable(text: string, hides: boolean, encodes: boolean): Scan {
  const codes: number[] = []
  const at = new Int32Array(text.length + 1)
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (hides && isInvisible(code)) continue
    if (encodes && code === 37 /* % */) {
      const decoded = numberPart(text, i, codes.length > 0 && isDigit(codes[codes.length - 1]))
      if (decoded !== -1) {
        at[codes.length] = i
        codes.push(decoded)
        i += 2
        continue
      }
    }
    at[codes.length] = i
    codes.push(code)
  }
  at[codes.length] = text.length
  let scan = ''
  for (let i = 0; i < codes.length; i += 8192) scan += String.fromCharCode(...codes.slice(i, i + 8192))
  return { scan, at: at.subarray(0, codes.length + 1) }
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
  // characters that follow it, which stay outside the replacement; past the whole escape when that
  // character was read decoded, a `%` in the text that is none in the scan).
  const startIn = (i: number): number => (at === undefined ? i : at[i])
  const endIn = (i: number): number => {
    if (at === undefined || i === 0) return i
    const last = at[i - 1]
    return last + (text.charCodeAt(last) === 37 && scan.charCodeAt(i - 1) !== 37 ? 3 : 1)
  }
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
  // Tokens hold no foldable or invisible character nor `%` and replacements only remove text: a text
  // without one never has one.
  const folds = FOLDABLE.test(text)
  const hides = INVISIBLE.test(text)
  const encodes = hasEncodedNumberPart(text)
  const reads = folds || hides || encodes
  const prepare = (t: string): Scan => {
    const folded = folds ? fold(t) : t
    return hides || encodes ? readable(folded, hides, encodes) : { scan: folded }
  }
  let prepared = text
  let read = prepare(text)
  for (let pass = 0; pass < MAX_PASSES; pass++) {
    const before = out
    for (const rule of rules) {
      // Prepared again only after a rule replaced something (an unchanged text is the same string).
      if (reads && out !== prepared) read = prepare((prepared = out))
      out = reads ? applyRule(out, rule, found, read.scan, read.at) : applyRule(out, rule, found)
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

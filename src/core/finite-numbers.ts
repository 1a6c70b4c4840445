/**
 * Numbers a JSON text writes that no double holds (`1e309`, 400 digits): JSON.parse reads them as
 * ±Infinity, which JSON.stringify writes back as `null`. A free-form member (a report's `metadata`) would
 * be stored as something the client never sent, so a client's body with one is refused at the HTTP edge
 * (http/strict-json.ts), where a typed field's own schema would refuse it anyway.
 */
import { firstPathWhere } from './json-walk'

/**
 * Whether a JSON text may hold a number past a double's range: an exponent of three digits or more, or a
 * run of 309 digits. Cheap, on the text, so the usual body is never walked; a true answer can be wrong
 * (the same characters inside a string): nonFinitePath on the parsed value decides.
 */
export const jsonTextMayHoldHugeNumber = (text: string): boolean => /[eE][+-]?\d{3}|\d{309}/.test(text)

/** The JSON pointer of the first number in a parsed JSON value that is not finite, or undefined. */
export const nonFinitePath = (value: unknown): string | undefined => firstPathWhere(value, (v) => typeof v === 'number' && !Number.isFinite(v))

/**
 * Replacement tokens. Every redaction leaves a typed token such as `[REDACTED:email]` in place of the value,
 * so a reader still sees what kind of thing was there. Inside URLs the same token is percent-encoded
 * (`%5BREDACTED%3Aemail%5D`), which keeps the URL valid and decodes back to the bracket form.
 * No rule matches a token, and the engine never redacts a candidate made only of tokens: that is what
 * makes sanitizing idempotent.
 */

/** The token that replaces a value caught by rule `name`. */
export const token = (name: string): string => `[REDACTED:${name}]`

/** The URL-safe form of a token, for path segments, query values, fragments and userinfo. */
export const urlToken = (name: string): string => encodeURIComponent(token(name))

/** Matches a token in either form. */
export const TOKEN_PATTERN = /\[REDACTED:[a-z0-9_]+\]|%5BREDACTED%3A[a-z0-9_]+%5D/g

/** Start and end offsets of every token in `text`. */
export function tokenSpans(text: string): [number, number][] {
  if (!text.includes('REDACTED')) return []
  return [...text.matchAll(TOKEN_PATTERN)].map((m) => [m.index, m.index + m[0].length])
}

/** True when `value` holds nothing but tokens and punctuation: there is nothing left to redact. */
export function isOnlyTokens(value: string): boolean {
  return !/[\p{L}\p{N}]/u.test(value.replace(TOKEN_PATTERN, ''))
}

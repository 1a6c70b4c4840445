/**
 * Bounded text that stays Unicode. `s.slice(0, n)` can end between the two halves of a surrogate pair
 * (an emoji), and half of one is not Unicode: a pull request's or tracker issue's title cut that way went
 * out as JSON's "\ud83d", which a strict parser refuses and the rest show as U+FFFD. Every cut of text
 * that leaves fixloop or is stored goes through these. (The widget has its own, widget/src/clip.ts.)
 */

/** The first half of a surrogate pair (a character beyond the Basic Multilingual Plane, as most emoji are). */
export const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff
/** The second half of a surrogate pair. */
export const isLowSurrogate = (code: number) => code >= 0xdc00 && code <= 0xdfff

/** The first `n` UTF-16 code units of `s`, one fewer where the cut would split a surrogate pair. */
export function clip(s: string, n: number): string {
  if (s.length <= n) return s
  return s.slice(0, n > 0 && isHighSurrogate(s.charCodeAt(n - 1)) ? n - 1 : n)
}

/** The last `n` UTF-16 code units of `s`, one fewer where the cut would split a surrogate pair. */
export function clipEnd(s: string, n: number): string {
  if (s.length <= n) return s
  const from = s.length - n
  return s.slice(isLowSurrogate(s.charCodeAt(from)) ? from + 1 : from)
}

/**
 * The first `n` UTF-16 units of `s`, one fewer where the cut would split a surrogate pair (an emoji): half
 * of one is not Unicode (the server turns it into U+FFFD, and strict JSON parsers refuse it).
 */
export function clip(s: string, n: number): string {
  if (s.length <= n) return s
  const last = s.charCodeAt(n - 1)
  return s.slice(0, last >= 0xd800 && last <= 0xdbff ? n - 1 : n)
}

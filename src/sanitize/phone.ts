/**
 * Phone number shapes. A detector candidate is a run of digit groups; this module finds the longest
 * prefix of it that is a plausible phone number:
 * - international: `+` (or `00`) and 8-15 digits in all (E.164);
 * - North American: `(555) 123-4567`, `555-123-4567`, `555.123.4567`, `1-800-555-0199`;
 * - trunk-prefixed national numbers (UK, DE, FR, NL …): a leading 0, 9-12 digits, at least two groups,
 *   e.g. `020 7946 0958`, `030/12345678`, `01 23 45 67 89`.
 * Bare digit runs are never phones (ids, epochs, order numbers), nor are dates, versions or prices.
 */

const NANP = /^(?:1[ .-]?)?(?:\([2-9]\d{2}\) ?|[2-9]\d{2}[ .-])\d{3}[ .-]\d{4}$/
const DATE_LIKE = /^\(?(?:\d{1,2}([./-])\d{1,2}\1\d{2,4}|\d{4}([./-])\d{1,2}\2\d{1,2})(?!\d)/

interface Group {
  text: string
  end: number
}

function groupsOf(s: string): Group[] {
  return [...s.matchAll(/\d+/g)].map((m) => ({ text: m[0], end: m.index + m[0].length }))
}

/** No phone number anywhere has fewer digits than this. */
const MIN_DIGITS = 7

function isShape(s: string, groups: Group[]): boolean {
  const digits = groups.map((g) => g.text).join('')
  if (s.startsWith('+')) return digits.length >= 8 && digits.length <= 15
  if (digits.startsWith('00')) return digits.length >= 10 && digits.length <= 17 && groups.length >= 2
  if (NANP.test(s)) return true
  if (DATE_LIKE.test(s)) return false
  return (
    digits.startsWith('0') &&
    digits.length >= 9 &&
    digits.length <= 12 &&
    groups.length >= 2 &&
    groups[0].text.length >= 2 &&
    groups[0].text.length <= 5 &&
    groups.slice(1).every((g) => g.text.length >= 2)
  )
}

/** True when `s` (digit groups with separators, optionally `+`-led) is shaped like a phone number. */
export const isPhoneShape = (s: string): boolean => isShape(s, groupsOf(s))

/**
 * Length of the longest prefix of `candidate` that ends a digit group and is phone-shaped, or 0.
 * Trimming group by group keeps "call 555-123-4567 2024" from hiding the number behind the year.
 */
export function phoneLength(candidate: string): number {
  const groups = groupsOf(candidate)
  let digits = groups.reduce((n, g) => n + g.text.length, 0)
  for (let n = groups.length; n >= 1 && digits >= MIN_DIGITS; n--) {
    const prefix = candidate.slice(0, groups[n - 1].end)
    if (isShape(prefix, groups.slice(0, n))) return prefix.length
    digits -= groups[n - 1].text.length
  }
  return 0
}

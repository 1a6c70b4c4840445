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

/**
 * The digit groups of a candidate, as offsets into it: `ends[i]` where group i ends, `lengths[i]` its
 * digits. Read in one pass with no allocation per group: this runs for every run of digit groups in a
 * report, and a console full of digits and spaces has one at every other character.
 */
interface Groups {
  count: number
  ends: number[]
  lengths: number[]
}

function groupsOf(s: string, into: Groups = { count: 0, ends: [], lengths: [] }): Groups {
  into.count = 0
  let run = 0
  for (let i = 0; i <= s.length; i++) {
    const code = i < s.length ? s.charCodeAt(i) : -1
    if (code >= 48 && code <= 57) {
      run++
      continue
    }
    if (run > 0) {
      into.ends[into.count] = i
      into.lengths[into.count] = run
      into.count++
      run = 0
    }
  }
  return into
}

/** No phone number anywhere has fewer digits than this. */
const MIN_DIGITS = 7

/** The first `n` groups of `g` (digits `digits` in all) make the phone-shaped prefix `s`. */
function isShape(s: string, g: Groups, n: number, digits: number): boolean {
  if (s.charCodeAt(0) === 43 /* + */) return digits >= 8 && digits <= 15
  const firstGroup = g.lengths[0]
  // The first two digits of the number, wherever separators put them (`0 0…` starts with 00 too).
  let lead = -1
  let second = -1
  for (let i = 0; i < s.length && second < 0; i++) {
    const code = s.charCodeAt(i)
    if (code < 48 || code > 57) continue
    if (lead < 0) lead = code
    else second = code
  }
  if (lead === 48 && second === 48) return digits >= 10 && digits <= 17 && n >= 2
  if ((digits === 10 || digits === 11) && NANP.test(s)) return true
  if (lead !== 48 || digits < 9 || digits > 12 || n < 2 || firstGroup < 2 || firstGroup > 5) return false
  for (let i = 1; i < n; i++) if (g.lengths[i] < 2) return false
  return !DATE_LIKE.test(s)
}

/** True when `s` (digit groups with separators, optionally `+`-led) is shaped like a phone number. */
export function isPhoneShape(s: string): boolean {
  const g = groupsOf(s)
  let digits = 0
  for (let i = 0; i < g.count; i++) digits += g.lengths[i]
  return g.count > 0 && isShape(s, g, g.count, digits)
}

const scratch: Groups = { count: 0, ends: [], lengths: [] }

/**
 * Length of the longest prefix of `candidate` that ends a digit group and is phone-shaped, or 0.
 * Trimming group by group keeps "call 555-123-4567 2024" from hiding the number behind the year.
 */
export function phoneLength(candidate: string): number {
  const g = groupsOf(candidate, scratch)
  let digits = 0
  for (let i = 0; i < g.count; i++) digits += g.lengths[i]
  for (let n = g.count; n >= 1 && digits >= MIN_DIGITS; n--) {
    const end = g.ends[n - 1]
    // Only the shapes' regular expressions need the prefix as a string; the rest is arithmetic.
    if (isShape(end === candidate.length ? candidate : candidate.slice(0, end), g, n, digits)) return end
    digits -= g.lengths[n - 1]
  }
  return 0
}

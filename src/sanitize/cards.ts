/**
 * Payment card numbers: the Luhn checksum plus the issuer prefix and length table. Both must hold, so
 * a 13-digit epoch in milliseconds (starts with 1: no issuer) or a random 16-digit id that happens to
 * pass Luhn with an unknown prefix is left alone.
 */

/** The Luhn (mod 10) checksum over a string of digits (its first `length`). */
export function luhnValid(digits: string, length = digits.length): boolean {
  let sum = 0
  for (let i = 0; i < length; i++) {
    let d = digits.charCodeAt(length - 1 - i) - 48
    if (i % 2 === 1) {
      d *= 2
      if (d > 9) d -= 9
    }
    sum += d
  }
  return length > 0 && sum % 10 === 0
}

interface Brand {
  name: string
  /** Inclusive prefix ranges, compared on the first `lo.length` digits. */
  prefixes: [string, string][]
  lengths: number[]
}

const range = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, i) => from + i)

const BRANDS: Brand[] = [
  { name: 'visa', prefixes: [['4', '4']], lengths: [13, 16, 19] },
  { name: 'mastercard', prefixes: [['51', '55'], ['2221', '2720']], lengths: [16] },
  { name: 'amex', prefixes: [['34', '34'], ['37', '37']], lengths: [15] },
  { name: 'discover', prefixes: [['6011', '6011'], ['644', '649'], ['65', '65']], lengths: range(16, 19) },
  { name: 'diners', prefixes: [['300', '305'], ['36', '36'], ['38', '39']], lengths: range(14, 19) },
  { name: 'jcb', prefixes: [['3528', '3589']], lengths: range(16, 19) },
  { name: 'unionpay', prefixes: [['62', '62']], lengths: range(16, 19) },
  { name: 'maestro', prefixes: [['5018', '5018'], ['5020', '5020'], ['5038', '5038'], ['5893', '5893'], ['6304', '6304'], ['6759', '6759'], ['6761', '6763']], lengths: range(12, 19) },
]

/** The shortest and longest card number of any issuer: other lengths need no look at the table. */
const MIN_LENGTH = 12
const MAX_LENGTH = 19

/**
 * The table as numbers, for a check with no string work: per card length, the issuers' prefix ranges
 * scaled to four digits (`['51', '55']` → 5100..5599), flat. Every card has 12+ digits, so its first
 * four always exist. This runs for every run of 12+ digits in a report.
 */
const RANGES_BY_LENGTH: { name: string; lo: number; hi: number }[][] = Array.from({ length: MAX_LENGTH + 1 }, (_, n) =>
  BRANDS.filter((b) => b.lengths.includes(n)).flatMap((b) =>
    b.prefixes.map(([lo, hi]) => ({ name: b.name, lo: Number(lo) * 10 ** (4 - lo.length), hi: (Number(hi) + 1) * 10 ** (4 - hi.length) - 1 })),
  ),
)

function brandOf(first4: number, length: number): string | undefined {
  if (length < MIN_LENGTH || length > MAX_LENGTH) return undefined
  const ranges = RANGES_BY_LENGTH[length]
  for (let i = 0; i < ranges.length; i++) if (first4 >= ranges[i].lo && first4 <= ranges[i].hi) return ranges[i].name
  return undefined
}

const first4Of = (digits: string): number => ((digits.charCodeAt(0) - 48) * 10 + digits.charCodeAt(1) - 48) * 100 + (digits.charCodeAt(2) - 48) * 10 + digits.charCodeAt(3) - 48

/** The issuer of a card number (digits only; its first `length`), or undefined when no issuer uses that prefix and length. */
export function cardBrand(digits: string, length = digits.length): string | undefined {
  return length < MIN_LENGTH ? undefined : brandOf(first4Of(digits), length)
}

const NOT_DIGITS = /[^0-9]/g

/**
 * Length of the longest prefix of `typed` (digit groups with separators) that ends a group and is a
 * card number, or 0. The digits are gathered once; each prefix is then a length, not a new string.
 */
export function cardLength(typed: string): number {
  const digits = typed.length === 0 ? '' : typed.replace(NOT_DIGITS, '')
  if (digits.length < MIN_LENGTH) return 0
  const ends: number[] = []
  const counts: number[] = []
  let seen = 0
  for (let i = 0; i < typed.length; i++) {
    const code = typed.charCodeAt(i)
    if (code >= 48 && code <= 57) {
      seen++
      const next = typed.charCodeAt(i + 1)
      if (!(next >= 48 && next <= 57)) {
        ends.push(i + 1)
        counts.push(seen)
      }
    } else if (code !== 32 && code !== 45 && code !== 46) return 0
  }
  const first4 = first4Of(digits)
  for (let g = ends.length - 1; g >= 0; g--) {
    const n = counts[g]
    if (n < MIN_LENGTH) break
    if (brandOf(first4, n) !== undefined && luhnValid(digits, n)) return ends[g]
  }
  return 0
}

/** A card number as typed (digits with optional spaces, dashes or dots): a known issuer and a valid checksum. */
export function isCardNumber(typed: string): boolean {
  const digits = typed.replace(/[ .-]/g, '')
  return /^\d+$/.test(digits) && cardBrand(digits) !== undefined && luhnValid(digits)
}

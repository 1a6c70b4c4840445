/**
 * Payment card numbers: the Luhn checksum plus the issuer prefix and length table. Both must hold, so
 * a 13-digit epoch in milliseconds (starts with 1: no issuer) or a random 16-digit id that happens to
 * pass Luhn with an unknown prefix is left alone.
 */

/** The Luhn (mod 10) checksum over a string of digits. */
export function luhnValid(digits: string): boolean {
  let sum = 0
  for (let i = 0; i < digits.length; i++) {
    let d = digits.charCodeAt(digits.length - 1 - i) - 48
    if (i % 2 === 1) {
      d *= 2
      if (d > 9) d -= 9
    }
    sum += d
  }
  return digits.length > 0 && sum % 10 === 0
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

/** The issuer of a card number (digits only), or undefined when no issuer uses that prefix and length. */
export function cardBrand(digits: string): string | undefined {
  for (const b of BRANDS) {
    if (!b.lengths.includes(digits.length)) continue
    for (const [lo, hi] of b.prefixes) {
      const p = digits.slice(0, lo.length)
      if (p >= lo && p <= hi) return b.name
    }
  }
  return undefined
}

/** A card number as typed (digits with optional spaces, dashes or dots): a known issuer and a valid checksum. */
export function isCardNumber(typed: string): boolean {
  const digits = typed.replace(/[ .-]/g, '')
  return /^\d+$/.test(digits) && cardBrand(digits) !== undefined && luhnValid(digits)
}

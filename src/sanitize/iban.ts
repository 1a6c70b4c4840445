/**
 * International bank account numbers: the country's registered length and the ISO 13616 mod-97 check.
 */

/** IBAN length per country (SWIFT IBAN registry). */
const IBAN_LENGTHS: Record<string, number> = {
  AD: 24, AE: 23, AL: 28, AT: 20, AZ: 28, BA: 20, BE: 16, BG: 22, BH: 22, BI: 27, BR: 29, BY: 28,
  CH: 21, CR: 22, CY: 28, CZ: 24, DE: 22, DJ: 27, DK: 18, DO: 28, EE: 20, EG: 29, ES: 24, FI: 18,
  FK: 18, FO: 18, FR: 27, GB: 22, GE: 22, GI: 23, GL: 18, GR: 27, GT: 28, HR: 21, HU: 28, IE: 22,
  IL: 23, IQ: 23, IS: 26, IT: 27, JO: 30, KW: 30, KZ: 20, LB: 28, LC: 32, LI: 21, LT: 20, LU: 20,
  LV: 21, LY: 25, MC: 27, MD: 24, ME: 22, MK: 19, MN: 20, MR: 27, MT: 31, MU: 30, NI: 28, NL: 18,
  NO: 15, OM: 23, PK: 24, PL: 28, PS: 29, PT: 25, QA: 29, RO: 24, RS: 22, RU: 33, SA: 24, SC: 31,
  SD: 18, SE: 24, SI: 19, SK: 24, SM: 27, SO: 23, ST: 25, SV: 28, TL: 23, TN: 24, TR: 26, UA: 29,
  VA: 22, VG: 24, XK: 20, YE: 30,
}

/** The registered IBAN length of a country code, if it has one. */
export const ibanLength = (country: string): number | undefined => IBAN_LENGTHS[country.toUpperCase()]

/** ISO 7064 mod 97-10 over the rearranged IBAN (letters as 10..35); a valid IBAN leaves 1. */
function mod97(iban: string): number {
  const rearranged = iban.slice(4) + iban.slice(0, 4)
  let rest = 0
  for (const ch of rearranged) {
    const code = ch.charCodeAt(0)
    const value = code >= 65 ? code - 55 : code - 48
    rest = (value > 9 ? rest * 100 + value : rest * 10 + value) % 97
  }
  return rest
}

/** A compact IBAN (no spaces, any case): registered country, its exact length and a valid checksum. */
export function isIban(compact: string): boolean {
  const iban = compact.toUpperCase()
  if (!/^[A-Z]{2}\d{2}[A-Z0-9]+$/.test(iban)) return false
  return ibanLength(iban.slice(0, 2)) === iban.length && mod97(iban) === 1
}

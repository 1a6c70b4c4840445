import { describe, expect, test } from 'bun:test'
import { base32Decode, base32Encode, totpCode, verifyTotp } from './totp'

// RFC 6238 appendix B, SHA-1 rows (8 digits; the 6-digit code is the last six).
const SECRET = Buffer.from('12345678901234567890')
const VECTORS: [number, string][] = [
  [59, '94287082'],
  [1111111109, '07081804'],
  [1111111111, '14050471'],
  [1234567890, '89005924'],
  [2000000000, '69279037'],
  [20000000000, '65353130'],
]

describe('totp', () => {
  test.each(VECTORS)('RFC 6238 vector at %d s', (seconds, code) => {
    expect(totpCode(SECRET, seconds * 1000, 8)).toBe(code)
    expect(totpCode(SECRET, seconds * 1000)).toBe(code.slice(2))
  })

  test('base32 round-trips and matches RFC 4648', () => {
    expect(base32Encode(Buffer.from('foobar'))).toBe('MZXW6YTBOI')
    expect(base32Decode('MZXW6YTBOI').toString()).toBe('foobar')
  })

  test('accepts one step of drift, refuses two and junk', () => {
    const now = 1_700_000_000_000
    expect(verifyTotp(SECRET, totpCode(SECRET, now - 30_000), now)).toBe(true)
    expect(verifyTotp(SECRET, totpCode(SECRET, now + 30_000), now)).toBe(true)
    expect(verifyTotp(SECRET, totpCode(SECRET, now - 90_000), now)).toBe(false)
    expect(verifyTotp(SECRET, 'abcdef', now)).toBe(false)
    expect(verifyTotp(SECRET, '1234567', now)).toBe(false)
  })
})

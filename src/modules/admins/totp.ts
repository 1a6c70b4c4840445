/**
 * RFC 6238 time-based one-time passwords (HMAC-SHA1, 30 s steps, 6 digits), as authenticator apps
 * expect them, with the RFC 4648 base32 secrets they scan. Small enough to own rather than depend on.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567'
const STEP_SECONDS = 30

export function base32Encode(bytes: Uint8Array): string {
  let bits = 0
  let value = 0
  let out = ''
  for (const b of bytes) {
    value = (value << 8) | b
    bits += 8
    while (bits >= 5) {
      out += ALPHABET[(value >>> (bits - 5)) & 31]
      bits -= 5
    }
  }
  if (bits > 0) out += ALPHABET[(value << (5 - bits)) & 31]
  return out
}

export function base32Decode(text: string): Buffer {
  const clean = text.toUpperCase().replace(/[\s=]/g, '')
  let bits = 0
  let value = 0
  const out: number[] = []
  for (const ch of clean) {
    const idx = ALPHABET.indexOf(ch)
    if (idx < 0) throw new Error('not base32')
    value = (value << 5) | idx
    bits += 5
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 255)
      bits -= 8
    }
  }
  return Buffer.from(out)
}

/** A new 160-bit secret, base32 (what authenticator apps take). */
export function newTotpSecret(): string {
  return base32Encode(randomBytes(20))
}

/** The 30-second step containing `timeMs`: the counter the code is made from. */
export function totpStep(timeMs: number): number {
  return Math.floor(timeMs / 1000 / STEP_SECONDS)
}

/** The code for one step (RFC 4226 dynamic truncation). */
function stepCode(secret: Uint8Array, step: number, digits: number): string {
  const counter = Buffer.alloc(8)
  counter.writeBigUInt64BE(BigInt(step))
  const mac = createHmac('sha1', secret).update(counter).digest()
  const offset = mac[mac.length - 1] & 0x0f
  const bin = mac.readUInt32BE(offset) & 0x7fffffff
  return String(bin % 10 ** digits).padStart(digits, '0')
}

/** The code for the step containing `timeMs`. */
export function totpCode(secret: Uint8Array, timeMs: number, digits = 6): string {
  return stepCode(secret, totpStep(timeMs), digits)
}

/**
 * The step whose code this is, among the current one and its neighbours (±30 s of clock drift), and
 * only if it is later than `usedStep`, the step of the last code accepted: a code works once (RFC 6238
 * section 5.2), and so does every earlier one. Every candidate is compared, in constant time.
 */
export function matchTotp(secret: Uint8Array, code: string, timeMs: number, usedStep: number | null = null): number | undefined {
  if (!/^\d{6}$/.test(code)) return undefined
  const now = totpStep(timeMs)
  let matched: number | undefined
  for (const step of [now - 1, now, now + 1]) {
    const same = timingSafeEqual(Buffer.from(stepCode(secret, step, 6)), Buffer.from(code))
    if (same && (usedStep === null || step > usedStep)) matched = step
  }
  return matched
}

/** Is this a current code (any step within the drift, used or not)? */
export function verifyTotp(secret: Uint8Array, code: string, timeMs: number): boolean {
  return matchTotp(secret, code, timeMs) !== undefined
}

/** The otpauth:// URI an authenticator app imports (as a QR code or pasted). */
export function totpUri(secretBase32: string, email: string): string {
  return `otpauth://totp/fixloop:${encodeURIComponent(email)}?secret=${secretBase32}&issuer=fixloop&algorithm=SHA1&digits=6&period=30`
}

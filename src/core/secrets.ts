/**
 * Credentials: `sk_` org keys, `pub_` app keys and per-App signing secrets.
 * `sk_` keys are stored only as SHA-256 and compared in constant time; signing secrets are 32 random
 * bytes encrypted at rest (see crypto.ts) and handed to operators as hex.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'

export function newApiKey(): string {
  return 'sk_' + randomBytes(32).toString('base64url')
}

export function newPublicKey(): string {
  return 'pub_' + randomBytes(16).toString('hex')
}

export function newSigningSecret(): Buffer {
  return randomBytes(32)
}

export function sha256Hex(value: string | Uint8Array): string {
  return createHash('sha256').update(value).digest('hex')
}

/** Constant-time equality of two hex digests (length leaks nothing: both are SHA-256). */
export function digestsEqual(aHex: string, bHex: string): boolean {
  const a = Buffer.from(aHex, 'hex')
  const b = Buffer.from(bHex, 'hex')
  return a.length === b.length && timingSafeEqual(a, b)
}

/**
 * Decodes a signing secret given as hex or base64 (spec 2.1: "given as hex or base64 and decoded before
 * use as the HMAC key"). Hex wins when the text is valid hex, since every hex string is also base64.
 */
export function decodeSecret(text: string): Uint8Array {
  const t = text.trim()
  if (t.length > 0 && t.length % 2 === 0 && /^[0-9a-fA-F]+$/.test(t)) return Buffer.from(t, 'hex')
  if (/^[A-Za-z0-9+/_-]+={0,2}$/.test(t)) return Buffer.from(t.replace(/-/g, '+').replace(/_/g, '/'), 'base64')
  throw new Error('secret is neither hex nor base64')
}

/**
 * One-click unsubscribe tokens (RFC 8058): `<appId>.<addressHash>.<mac>`, the MAC an HMAC-SHA256 under a
 * key derived from the master key. The token names the App and the address's keyed hash, never the address:
 * a leaked link unsubscribes one address from one App and reveals nothing else. It does not expire (an
 * unsubscribe link must keep working in an old mail).
 */
import { createHmac, timingSafeEqual } from 'node:crypto'
import { ID_PATTERN } from '../../core/ids'

const TOKEN_RE = new RegExp(`^(${ID_PATTERN.replace(/^\^|\$$/g, '')})\\.([0-9a-f]{64})\\.([0-9a-f]{64})$`)

/** The keys of the mail feature, each derived from the URL-signing key (itself from the master key) by label. */
export function mailKeys(urlSigningKey: Uint8Array): { addressHashKey: Buffer; unsubscribeKey: Buffer; confirmKey: Buffer } {
  const derive = (label: string) => createHmac('sha256', urlSigningKey).update(`fixloop mail ${label}`).digest()
  return { addressHashKey: derive('address-hash'), unsubscribeKey: derive('unsubscribe'), confirmKey: derive('confirm') }
}

const macOf = (key: Uint8Array, appId: string, emailHash: string) => createHmac('sha256', key).update(`${appId}.${emailHash}`).digest('hex')

export function unsubscribeToken(key: Uint8Array, appId: string, emailHash: string): string {
  return `${appId}.${emailHash}.${macOf(key, appId, emailHash)}`
}

/** The App and address hash of a genuine token; null for anything else (compared in constant time). */
export function verifyUnsubscribeToken(key: Uint8Array, token: string): { appId: string; emailHash: string } | null {
  if (token.length > 200) return null
  const m = TOKEN_RE.exec(token)
  if (!m) return null
  const [, appId, emailHash, mac] = m
  const want = Buffer.from(macOf(key, appId, emailHash), 'hex')
  const got = Buffer.from(mac, 'hex')
  return got.length === want.length && timingSafeEqual(got, want) ? { appId, emailHash } : null
}

const CONFIRM_RE = new RegExp(`^(${ID_PATTERN.replace(/^\^|\$$/g, '')})\\.([0-9a-f]{64})\\.([0-9a-f]{32})\\.([0-9a-f]{64})$`)
const confirmMacOf = (key: Uint8Array, appId: string, emailHash: string, nonce: string) =>
  createHmac('sha256', key).update(`confirm.${appId}.${emailHash}.${nonce}`).digest('hex')

/**
 * The link of a confirmation mail (double opt-in): `<appId>.<addressHash>.<nonce>.<mac>` under its own key.
 * The MAC makes it unforgeable; the nonce, stored with the confirmation and cleared when used, makes it
 * single-use; the expiry is the confirmation's (docs/email.md).
 */
export function confirmToken(key: Uint8Array, appId: string, emailHash: string, nonce: string): string {
  return `${appId}.${emailHash}.${nonce}.${confirmMacOf(key, appId, emailHash, nonce)}`
}

/** The App, address hash and nonce of a genuine confirmation token; null for anything else (constant-time MAC check). */
export function verifyConfirmToken(key: Uint8Array, token: string): { appId: string; emailHash: string; nonce: string } | null {
  if (token.length > 240) return null
  const m = CONFIRM_RE.exec(token)
  if (!m) return null
  const [, appId, emailHash, nonce, mac] = m
  const want = Buffer.from(confirmMacOf(key, appId, emailHash, nonce), 'hex')
  const got = Buffer.from(mac, 'hex')
  return got.length === want.length && timingSafeEqual(got, want) ? { appId, emailHash, nonce } : null
}

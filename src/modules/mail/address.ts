/** Email addresses as fixloop handles them: a strict shape check, the dashboard's mask, the unsubscribe hash. */
import { createHmac } from 'node:crypto'

/** At most 254 characters (RFC 5321 path limit); one @; no spaces, controls, quotes or angle brackets. */
const ADDRESS_RE = /^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$/

export function isMailAddress(s: string): boolean {
  return s.length <= 254 && ADDRESS_RE.test(s)
}

/** j***@example.com: the first character of the local part, then stars; the domain is kept. */
export function maskAddress(address: string): string {
  const at = address.lastIndexOf('@')
  if (at <= 0) return '***'
  return `${address[0]}***${address.slice(at)}`
}

/**
 * A keyed hash of the lower-cased address: how unsubscribes are stored and matched without keeping the
 * address itself. The key is derived from the master key, so the hash says nothing to whoever holds only
 * the database.
 */
export function addressHash(hashKey: Uint8Array, address: string): string {
  return createHmac('sha256', hashKey).update(address.trim().toLowerCase()).digest('hex')
}

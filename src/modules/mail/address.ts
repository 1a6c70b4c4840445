/** Email addresses as fixloop handles them: a strict shape check, the dashboard's mask, the normalized keyed hash. */
import { createHmac } from 'node:crypto'
import { mailKeys } from './unsubscribe-token'

/**
 * At most 254 characters (RFC 5321 path limit); one @; no spaces, controls, quotes or angle brackets. The
 * local part is a dot-string (RFC 5321 4.1.2): no dot first, last or twice in a row. `..a@`, `a.@` passed,
 * and every SMTP server answers such a RCPT TO with 501: the report was taken and its mail could only fail.
 */
const ATEXT = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]"
const ADDRESS_RE = new RegExp(
  `^(?=[^@]{1,64}@)${ATEXT}+(?:\\.${ATEXT}+)*@` +
    /[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$/.source,
)

export function isMailAddress(s: string): boolean {
  return s.length <= 254 && ADDRESS_RE.test(s)
}

/**
 * An App's `from` setting (`Name <a@b.c>` or `a@b.c`; the name without quotes, angle brackets or line
 * breaks) as the one mailbox it names, or null when it is not one. The transport hands nodemailer this
 * object, never the string: nodemailer parses a string as an address list, so a name with `:` went out as
 * a group (`Shop:Support <noreply@…>;`, no mailbox at all), `;` became `,`, and "bounces@x, Shop <…>" two
 * From mailboxes with the first as MAIL FROM. Given as {name, address}, the name is quoted (or encoded) whole.
 */
export function fromMailbox(from: string): { name: string; address: string } | null {
  const m = /^([^<>"\r\n]{0,100}?)\s*<([^<>\s]+)>$/.exec(from)
  if (m) return isMailAddress(m[2]) ? { name: m[1], address: m[2] } : null
  return isMailAddress(from) ? { name: '', address: from } : null
}

/** j***@example.com: the first character of the local part, then stars; the domain is kept. */
export function maskAddress(address: string): string {
  const at = address.lastIndexOf('@')
  if (at <= 0) return '***'
  return `${address[0]}***${address.slice(at)}`
}

/**
 * Providers whose documented rule is that dots in the local part do not matter (Gmail: "j.ann@gmail.com"
 * and "jann@gmail.com" are one mailbox), and the domain each is one mailbox under (googlemail.com is
 * gmail.com). Other providers keep their dots: only what a provider documents is folded.
 */
const DOTLESS_DOMAINS: Record<string, string> = { 'gmail.com': 'gmail.com', 'googlemail.com': 'gmail.com' }

/**
 * The one mailbox an address names, as far as fixloop can tell, for every rule that counts addresses
 * (docs/email.md "Normalized addresses"): lower case; the `+tag` of the local part dropped (`ann+1@` is
 * `ann@`); the provider's documented dot rule (gmail.com, googlemail.com). Without it `victim+1@`,
 * `VICTIM@` and `v.ictim@gmail.com` would each be a fresh address for the limits, the one-mail-per-address
 * rule and unsubscribes. Mail is still DELIVERED to the address as given; this form is never stored in clear.
 */
export function normalizeAddress(address: string): string {
  const a = address.trim().toLowerCase()
  const at = a.lastIndexOf('@')
  if (at <= 0) return a
  let local = a.slice(0, at)
  let domain = a.slice(at + 1)
  const plus = local.indexOf('+')
  if (plus > 0) local = local.slice(0, plus)
  const folded = DOTLESS_DOMAINS[domain]
  if (folded) {
    domain = folded
    local = local.replace(/\./g, '') || local
  }
  return `${local}@${domain}`
}

/**
 * A keyed hash of the normalized address: how unsubscribes, confirmations and the one-mail-per-address rule
 * match addresses without keeping them. The key is derived from the master key, so the hash says nothing to
 * whoever holds only the database.
 */
export function addressHash(hashKey: Uint8Array, address: string): string {
  return createHmac('sha256', hashKey).update(normalizeAddress(address)).digest('hex')
}

/**
 * The hash unsubscribes were recorded with before normalization (only lower-cased): an unsubscribe link
 * in a mail sent before still names it, so a delivery checks both.
 */
export function legacyAddressHash(hashKey: Uint8Array, address: string): string {
  return createHmac('sha256', hashKey).update(address.trim().toLowerCase()).digest('hex')
}

/** Every hash reporter mail may have recorded `address` under (current and legacy), for a reporter's erasure. */
export function reporterAddressHashes(urlSigningKey: Uint8Array): (address: string) => string[] {
  const { addressHashKey } = mailKeys(urlSigningKey)
  return (address) => [...new Set([addressHash(addressHashKey, address), legacyAddressHash(addressHashKey, address)])]
}

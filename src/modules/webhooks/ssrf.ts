/**
 * The SSRF guard of webhook delivery: URL syntax here, the address rule in src/core/address-guard.ts
 * (shared with the SMTP guard). Every address a target's host resolves to must be public unicast. The
 * caller then connects to exactly the addresses checked here (see sender.ts), so a DNS answer that
 * changes between check and connect (rebinding) cannot smuggle in a private address. Checked at create
 * time and again before every attempt. FIXLOOP_WEBHOOK_ALLOW_PRIVATE=1 lifts the address rule.
 */
import { ApiError } from '../../core/errors'
import { refusedAddress, resolveHost, type CheckedAddress } from '../../core/address-guard'

export interface CheckedTarget {
  url: URL
  /** The addresses to connect to, in resolver order. */
  addresses: CheckedAddress[]
}

export const URL_MAX_LENGTH = 2048

/**
 * Whether the URL text has a userinfo part, even an empty one ("https://:@host/" parses to username ""
 * and password "", which URL cannot tell from none). Read from the authority the way the WHATWG parser
 * reads it: tabs and newlines removed, leading C0 controls and spaces trimmed, a backslash as a slash
 * (http and https are special schemes), and any "@" before the path, query or fragment starts means userinfo.
 */
export function hasUserinfo(text: string): boolean {
  const cleaned = text.replace(/[\t\n\r]/g, '').replace(/^[\u0000-\u0020]+/, '')
  const authority = /^[a-z][a-z0-9+.-]*:[/\\]*([^/\\?#]*)/i.exec(cleaned)
  return authority !== null && authority[1].includes('@')
}

/** Syntax: absolute http(s) URL, no credentials in it (they would end up in logs and delivery records). */
export function parseTargetUrl(text: string): URL {
  let url: URL
  try {
    url = new URL(text)
  } catch {
    throw new ApiError('url_not_allowed', { reason: 'not an absolute URL' })
  }
  if (text.length > URL_MAX_LENGTH) throw new ApiError('url_not_allowed', { reason: `longer than ${URL_MAX_LENGTH} characters` })
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ApiError('url_not_allowed', { reason: 'only http and https URLs' })
  if (url.username || url.password || hasUserinfo(text)) {
    throw new ApiError('url_not_allowed', { reason: 'credentials (a user@ part, even empty) in the URL are not allowed; verify the signature instead' })
  }
  return url
}

/**
 * Resolves and checks a target; throws url_not_allowed with the reason. At create time a host that does
 * not resolve (yet, or from this network) is accepted with no addresses: every delivery resolves and
 * checks again before it connects, so nothing private can be reached through it later.
 */
export const ALLOW_PRIVATE_HINT = 'to allow private targets, start "fixloop serve" with FIXLOOP_WEBHOOK_ALLOW_PRIVATE=1'

export async function checkTarget(
  text: string,
  allowPrivate: boolean,
  { allowUnresolved = false, hint = ALLOW_PRIVATE_HINT }: { allowUnresolved?: boolean; hint?: string } = {},
): Promise<CheckedTarget> {
  const url = parseTargetUrl(text)
  const host = url.hostname.replace(/^\[|\]$/g, '')
  const addresses = await resolveHost(host)
  if (addresses.length === 0) {
    if (allowUnresolved) return { url, addresses }
    throw new ApiError('url_not_allowed', { reason: `the host ${host} does not resolve` })
  }
  const bad = refusedAddress(addresses, allowPrivate)
  if (bad) throw new ApiError('url_not_allowed', { reason: `${host} resolves to ${bad.address}, a private, loopback, link-local or reserved address; ${hint}` })
  return { url, addresses }
}

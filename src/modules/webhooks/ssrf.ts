/**
 * The SSRF guard of webhook delivery. A target's host is resolved and every address it resolves to must
 * be public unicast: private, loopback, link-local (169.254.169.254 metadata), CGNAT, unique-local
 * (fd00:ec2::254 metadata), multicast, reserved and IPv4-in-IPv6 forms of any of them are refused.
 * The caller then connects to exactly the addresses checked here (see sender.ts), so a DNS answer that
 * changes between check and connect (rebinding) cannot smuggle in a private address. Checked at create
 * time and again before every attempt. FIXLOOP_WEBHOOK_ALLOW_PRIVATE=1 lifts the address rule.
 */
import { lookup } from 'node:dns/promises'
import ipaddr from 'ipaddr.js'
import { ApiError } from '../../core/errors'

export interface CheckedTarget {
  url: URL
  /** The addresses to connect to, in resolver order. */
  addresses: { address: string; family: 4 | 6 }[]
}

export const URL_MAX_LENGTH = 2048

/** Only plain public unicast is a safe target; ipaddr.process() unwraps IPv4-mapped IPv6 first. */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false
  return ipaddr.process(address).range() === 'unicast'
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
  if (url.username || url.password) throw new ApiError('url_not_allowed', { reason: 'credentials in the URL are not allowed; verify the signature instead' })
  return url
}

/**
 * Resolves and checks a target; throws url_not_allowed with the reason. At create time a host that does
 * not resolve (yet, or from this network) is accepted with no addresses: every delivery resolves and
 * checks again before it connects, so nothing private can be reached through it later.
 */
export async function checkTarget(text: string, allowPrivate: boolean, { allowUnresolved = false } = {}): Promise<CheckedTarget> {
  const url = parseTargetUrl(text)
  const host = url.hostname.replace(/^\[|\]$/g, '')
  let addresses: { address: string; family: 4 | 6 }[]
  if (ipaddr.isValid(host)) {
    addresses = [{ address: ipaddr.parse(host).toString(), family: ipaddr.parse(host).kind() === 'ipv4' ? 4 : 6 }]
  } else {
    try {
      addresses = (await lookup(host, { all: true, verbatim: true })).map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }))
    } catch {
      addresses = []
    }
    if (addresses.length === 0) {
      if (allowUnresolved) return { url, addresses }
      throw new ApiError('url_not_allowed', { reason: `the host ${host} does not resolve` })
    }
  }
  if (!allowPrivate) {
    const bad = addresses.find((a) => !isPublicAddress(a.address))
    if (bad) throw new ApiError('url_not_allowed', { reason: `${host} resolves to ${bad.address}, a private, loopback, link-local or reserved address` })
  }
  return { url, addresses }
}

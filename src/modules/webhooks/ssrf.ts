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

/**
 * The IPv4 address an IPv6 address stands for, when it embeds one at a fixed place: IPv4-mapped
 * (::ffff:a.b.c.d) and the NAT64 well-known prefix (64:ff9b::a.b.c.d, RFC 6052), which reach that IPv4
 * host. 'refuse' for forms that are never a legitimate target: IPv4-compatible (::a.b.c.d, deprecated by
 * RFC 4291, and some stacks still route it to the IPv4 host; this /96 holds :: and ::1 too) and
 * IPv4-translated (::ffff:0:a.b.c.d). undefined when nothing is embedded at a fixed place; 6to4
 * (2002::/16), Teredo (2001::/32) and the local-use NAT64 prefix (64:ff9b:1::/48) are then refused whole
 * by their special-purpose range below.
 */
function embeddedIpv4(v6: ipaddr.IPv6): ipaddr.IPv4 | 'refuse' | undefined {
  const p = v6.parts
  const v4 = () => new ipaddr.IPv4([p[6] >> 8, p[6] & 0xff, p[7] >> 8, p[7] & 0xff])
  const zero = (from: number, to: number) => p.slice(from, to).every((x) => x === 0)
  if (zero(0, 6)) return 'refuse'
  if (zero(0, 5) && p[5] === 0xffff) return v4()
  if (zero(0, 4) && p[4] === 0xffff && p[5] === 0) return 'refuse'
  if (p[0] === 0x64 && p[1] === 0xff9b && zero(2, 6)) return v4()
  return undefined
}

/** Only plain public unicast is a safe target, judged on the IPv4 host behind any IPv6 form that embeds one. */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false
  const ip = ipaddr.parse(address)
  if (ip.kind() === 'ipv4') return ip.range() === 'unicast'
  const embedded = embeddedIpv4(ip as ipaddr.IPv6)
  if (embedded === 'refuse') return false
  if (embedded) return embedded.range() === 'unicast'
  return ip.range() === 'unicast'
}

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
    if (bad) throw new ApiError('url_not_allowed', { reason: `${host} resolves to ${bad.address}, a private, loopback, link-local or reserved address; ${hint}` })
  }
  return { url, addresses }
}

/**
 * The outbound address rule shared by every connection a tenant can aim (webhook targets, SMTP servers):
 * a host is resolved and every address it resolves to must be public unicast. Private, loopback,
 * link-local (169.254.169.254 metadata), CGNAT, unique-local (fd00:ec2::254 metadata), multicast,
 * unspecified, reserved and IPv4-in-IPv6 forms of any of them are refused. Callers then connect to exactly
 * the addresses checked here, so a DNS answer that changes between check and connect (rebinding) cannot
 * smuggle in a private address. Each caller has its own operator knob that lifts the rule
 * (FIXLOOP_WEBHOOK_ALLOW_PRIVATE, FIXLOOP_SMTP_ALLOW_PRIVATE).
 */
import { lookup } from 'node:dns/promises'
import ipaddr from 'ipaddr.js'

export interface CheckedAddress {
  address: string
  family: 4 | 6
}

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
 * The addresses a host stands for, in resolver order: an IP literal (brackets allowed) is itself, a name
 * goes through the system resolver. [] when the name does not resolve.
 */
export async function resolveHost(host: string): Promise<CheckedAddress[]> {
  const bare = host.replace(/^\[|\]$/g, '')
  if (ipaddr.isValid(bare)) {
    const ip = ipaddr.parse(bare)
    return [{ address: ip.toString(), family: ip.kind() === 'ipv4' ? 4 : 6 }]
  }
  try {
    return (await lookup(bare, { all: true, verbatim: true })).map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }))
  } catch {
    return []
  }
}

/**
 * Addresses no service a tenant names can legitimately live at: link-local (169.254.0.0/16, where the
 * cloud metadata service answers at 169.254.169.254 with the machine's credentials; fe80::/10) and AWS's
 * IPv6 metadata address fd00:ec2::254, also behind an IPv6 form that embeds the IPv4 one. Refused even
 * where an operator allows private networks for a caller whose hosts often live inside them (git hosts).
 */
export function isMetadataOrLinkLocal(address: string): boolean {
  if (!ipaddr.isValid(address)) return true
  const ip = ipaddr.parse(address)
  if (ip.kind() === 'ipv4') return ip.range() === 'linkLocal'
  const v6 = ip as ipaddr.IPv6
  const embedded = embeddedIpv4(v6)
  if (embedded instanceof ipaddr.IPv4) return embedded.range() === 'linkLocal'
  return v6.range() === 'linkLocal' || v6.toNormalizedString() === ipaddr.parse('fd00:ec2::254').toNormalizedString()
}

/** The first address the rule refuses, or undefined when all are public (or private ones are allowed). */
export function refusedAddress(addresses: CheckedAddress[], allowPrivate: boolean): CheckedAddress | undefined {
  return allowPrivate ? undefined : addresses.find((a) => !isPublicAddress(a.address))
}

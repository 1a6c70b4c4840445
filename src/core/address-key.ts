/**
 * The key a client address is counted under by every per-address limit (public rate limits, the
 * proof-of-work flood meter and report budget, `address_flood`, the distinct-address counters of
 * `repeated_text`/`link_flood`, the sign-in and setup throttles). An IPv6 host is usually handed a whole
 * /64 and can rotate through its 2^64 addresses at will, so an IPv6 address counts as its /64; an
 * IPv4-mapped IPv6 address (`::ffff:192.0.2.1`, `::ffff:c000:201`) is the IPv4 address it maps.
 */
/** The eight groups of an IPv6 address (lower case, no zone, a dotted IPv4 tail as two groups), or undefined. */
function ipv6Groups(address: string): string[] | undefined {
  let a = address
  const tail = /:(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(a)
  if (tail) {
    const o = tail.slice(1).map(Number)
    if (o.some((n) => n > 255)) return undefined
    a = `${a.slice(0, tail.index)}:${((o[0] << 8) | o[1]).toString(16)}:${((o[2] << 8) | o[3]).toString(16)}`
  }
  const halves = a.split('::')
  if (halves.length > 2) return undefined
  const left = halves[0] ? halves[0].split(':') : []
  const right = halves.length === 2 && halves[1] ? halves[1].split(':') : []
  const groups = halves.length === 2 ? [...left, ...Array(Math.max(0, 8 - left.length - right.length)).fill('0'), ...right] : left
  if (groups.length !== 8 || !groups.every((g) => /^[0-9a-f]{1,4}$/.test(g))) return undefined
  return groups.map((g) => g.replace(/^0+(?=.)/, ''))
}

/**
 * The key a client address is counted under: an IPv4 address as is, an IPv4-mapped IPv6 address as its
 * IPv4 address, any other IPv6 address as its /64 (`2001:db8:aa:bb::/64`). Anything else (`unknown`, junk
 * from a misconfigured proxy) is its own key, unchanged.
 */
export function addressKey(address: string): string {
  const a = address.trim().replace(/%.*$/, '').replace(/^\[(.*)\]$/, '$1').toLowerCase()
  if (!a.includes(':')) return a
  const g = ipv6Groups(a)
  if (!g) return a
  if (g.slice(0, 5).every((x) => x === '0') && g[5] === 'ffff') {
    const n = (parseInt(g[6], 16) << 16) | parseInt(g[7], 16)
    return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.')
  }
  return `${g.slice(0, 4).join(':')}::/64`
}

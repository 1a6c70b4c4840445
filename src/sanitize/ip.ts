/**
 * IP addresses parsed for real, not just shaped: IPv4 octets 0-255 without leading zeros, IPv6 with
 * at most one `::`, 1-4 hex digits per group, eight groups in all and an optional dotted IPv4 tail.
 */

/** A dotted-quad IPv4 address with every octet in 0-255 and no leading zeros. */
export function parseIPv4(s: string): number[] | undefined {
  const parts = s.split('.')
  if (parts.length !== 4) return undefined
  const octets: number[] = []
  for (const p of parts) {
    if (!/^(?:0|[1-9]\d{0,2})$/.test(p)) return undefined
    const n = Number(p)
    if (n > 255) return undefined
    octets.push(n)
  }
  return octets
}

/** The groups of an IPv6 address (`::` expanded to empty groups), or undefined when it is not one. */
export function parseIPv6(s: string): string[] | undefined {
  let text = s
  const lastColon = text.lastIndexOf(':')
  if (text.includes('.')) {
    if (!parseIPv4(text.slice(lastColon + 1))) return undefined
    text = text.slice(0, lastColon + 1) + '0:0'
  }
  const halves = text.split('::')
  if (halves.length > 2) return undefined
  const groupsOf = (h: string) => (h === '' ? [] : h.split(':'))
  const head = groupsOf(halves[0])
  const tail = halves.length === 2 ? groupsOf(halves[1]) : []
  const groups = [...head, ...tail]
  if (!groups.every((g) => /^[0-9A-Fa-f]{1,4}$/.test(g))) return undefined
  if (halves.length === 2 ? groups.length > 7 : groups.length !== 8) return undefined
  return groups
}

/** Netmasks (255.255.255.0) name no host: leading ones, then zeros. */
export function isNetmask(octets: number[]): boolean {
  const bits = octets.map((o) => o.toString(2).padStart(8, '0')).join('')
  return octets[0] === 255 && /^1+0*$/.test(bits)
}

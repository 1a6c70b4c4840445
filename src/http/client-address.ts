/**
 * The client address, and the key every per-address limit counts it under.
 *
 * `clientAddress`: the address as seen. Behind a reverse proxy (FIXLOOP_TRUST_PROXY=1) it is the LAST
 * X-Forwarded-For hop: the one our own proxy appended. Earlier hops are whatever the client claimed and
 * cannot be trusted. Audit logs and sessions record it as is.
 *
 * `addressKey` (src/core/address-key.ts): what every per-address limit counts, an IPv6 address as its /64.
 */
import type { Server } from 'bun'

export { addressKey } from '../core/address-key'

export function clientAddress(request: Request, server: Server<unknown> | null, trustProxy: boolean): string {
  if (trustProxy) {
    const xff = request.headers.get('x-forwarded-for')
    if (xff) {
      const hops = xff.split(',')
      const last = hops[hops.length - 1].trim()
      if (last) return last
    }
  }
  return server?.requestIP(request)?.address ?? 'unknown'
}


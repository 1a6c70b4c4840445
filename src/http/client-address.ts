/**
 * The client address used to key public rate limits. Behind a reverse proxy (FIXLOOP_TRUST_PROXY=1)
 * it is the LAST X-Forwarded-For hop: the one our own proxy appended. Earlier hops are whatever the
 * client claimed and cannot be trusted.
 */
import type { Server } from 'bun'

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

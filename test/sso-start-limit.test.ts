/**
 * Starting a single sign-on is limited per client address (docs/security.md "Single sign-on"): each start
 * hands out a flow whose state the callback remembers as spent for ten minutes, so an unlimited start let
 * anyone grow that memory (and, before the spent states were kept in generations, the cost of every
 * callback) at will. The compiled binary against the real provider (test/oidc-idp.ts), no browser: a
 * burst of 30 starts from one address is served, the next one is a 429 page with Retry-After, another
 * address still starts at once, and the limited address starts again after the wait.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { freePort } from './harness'
import { startIdp, type TestIdp } from './oidc-idp'
import { serveSso, tempDirIn, type SsoServer } from './sso-helpers'

const roots: string[] = []
let idp: TestIdp
let server: SsoServer

/** GET /admin/oidc/start from `address` (the server trusts X-Forwarded-For here), not followed. */
const start = (address: string) => fetch(server.url + '/admin/oidc/start', { redirect: 'manual', headers: { 'x-forwarded-for': address } })

describe('starting a single sign-on is limited per address', () => {
  beforeAll(async () => {
    const port = await freePort()
    idp = await startIdp(`http://127.0.0.1:${port}/admin/oidc/callback`)
    server = await serveSso(idp, join(tempDirIn(roots), 'data'), port, { FIXLOOP_TRUST_PROXY: '1' })
  })

  afterAll(async () => {
    await server?.stop()
    await idp?.close()
    for (const r of roots) rmSync(r, { recursive: true, force: true })
  })

  test('30 starts, then a 429 page saying to wait; another address is not held up', async () => {
    const burst = await Promise.all(Array.from({ length: 30 }, () => start('203.0.113.7')))
    for (const r of burst) {
      expect(r.status).toBe(303)
      expect(r.headers.get('location')).toStartWith(idp.issuer)
    }
    const limited = await start('203.0.113.7')
    expect(limited.status).toBe(429)
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
    // A page like every other refusal: no flow cookie, the same policy, and what to do.
    expect(limited.headers.get('set-cookie')).toBeNull()
    expect(limited.headers.get('content-type')).toStartWith('text/html')
    expect(limited.headers.get('content-security-policy')).toContain("default-src 'none'")
    const page = await limited.text()
    expect(page).toContain('<h1>Too many sign-in attempts</h1>')
    expect(page).toContain('Back to the sign-in page')

    expect((await start('198.51.100.20')).status).toBe(303)
    await Bun.sleep(Number(limited.headers.get('retry-after')) * 1000 + 100)
    expect((await start('203.0.113.7')).status).toBe(303)
  })
})

/**
 * Every HTML page fixloop serves on the dashboard's origin refuses to be framed by another site, in the
 * old header as well as the policy (docs/security.md "Headers on every answer"), and sends no Referer
 * and no sniffing. Found by the web attack of attack-web: the single sign-on pages (sign-in refusals, the
 * callback's answers) and the widget demo page had frame-ancestors but no X-Frame-Options, and the demo
 * page no Referrer-Policy or nosniff. The server's root page (`/` asked for HTML) had neither
 * X-Frame-Options nor Referrer-Policy (found by the dashboard attack, hunt-d).
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { tempDir } from './harness'
import { ensureBinary } from './helpers-lifecycle'
import { spawnWithStdout, type SpawnedServer } from './dashboard-helpers'

let dir: string
let server: SpawnedServer

beforeAll(async () => {
  ensureBinary()
  dir = tempDir('fixloop-page-headers-')
  server = await spawnWithStdout(dir, {}, ['--demo'])
})

afterAll(async () => {
  await server?.stop()
  rmSync(dir, { recursive: true, force: true })
})

test('every HTML page: X-Frame-Options, frame-ancestors, nosniff, no Referer', async () => {
  const pages = ['/', '/admin', '/admin/o/000000000000000000000000/inbox', '/admin/replay-frame', '/docs', '/demo', '/admin/oidc/start', '/admin/oidc/callback?code=a&state=b', '/v1/mail/unsubscribe?token=x', '/v1/mail/confirm?token=x']
  const seen: Record<string, unknown>[] = []
  for (const path of pages) {
    // The root answers HTML to a browser (Accept: text/html), JSON otherwise.
    const res = await fetch(server.url + path, { redirect: 'manual', headers: { accept: 'text/html' } })
    await res.arrayBuffer()
    expect({ path, type: res.headers.get('content-type') }).toEqual({ path, type: expect.stringContaining('text/html') })
    seen.push({
      path,
      xfo: res.headers.get('x-frame-options'),
      ancestors: /frame-ancestors '(none|self)'/.test(res.headers.get('content-security-policy') ?? ''),
      nosniff: res.headers.get('x-content-type-options'),
      referrer: res.headers.get('referrer-policy'),
    })
  }
  expect(seen).toEqual(
    pages.map((path) => ({
      path,
      xfo: path === '/admin/replay-frame' ? 'SAMEORIGIN' : 'DENY',
      ancestors: true,
      nosniff: 'nosniff',
      referrer: 'no-referrer',
    })),
  )
})

test('`/` answers HTML or JSON by Accept, and says so (Vary: Accept): a cache in front keeps the two apart', async () => {
  for (const accept of ['text/html', 'application/json']) {
    const res = await fetch(server.url + '/', { headers: { accept } })
    await res.arrayBuffer()
    expect({ accept, vary: res.headers.get('vary'), type: res.headers.get('content-type') }).toEqual({ accept, vary: expect.stringContaining('Accept'), type: expect.stringContaining(accept) })
  }
})

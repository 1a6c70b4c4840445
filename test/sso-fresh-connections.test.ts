/**
 * The relying party's calls to the identity provider (discovery, token, JWKS) each go on a connection of
 * their own (src/modules/admins/oidc.ts `onFreshConnection`). Before, fetch's pool sent the token request
 * down the connection the discovery had used; a provider (or its proxy) that had closed that connection as
 * idle answered with a reset, and the admin got "The identity provider could not be reached" (502) from a
 * healthy provider: a CI run saw it with oidc-provider's Node server, which closes idle connections after
 * 5 s. Here the provider closes every reused back-channel connection at once (test/oidc-idp.ts
 * `dropReusedBackChannel`), so a pooled call fails every time instead of now and then.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { request, type APIRequestContext } from 'playwright-core'
import { freePort } from './harness'
import { startIdp, type TestIdp } from './oidc-idp'
import { cli, followToCallback, serveSso, tempDirIn, type SsoServer } from './sso-helpers'

const roots: string[] = []
let idp: TestIdp
let server: SsoServer

beforeAll(async () => {
  const port = await freePort()
  idp = await startIdp(`http://127.0.0.1:${port}/admin/oidc/callback`)
  idp.dropReusedBackChannel = true
  const dataDir = join(tempDirIn(roots), 'data')
  expect(cli(dataDir, ['admin', 'create', '--email', 'alice@example.com', '--no-password', '--json']).exitCode).toBe(0)
  server = await serveSso(idp, dataDir, port)
}, 60_000)

afterAll(async () => {
  await server?.stop()
  await idp?.close()
  for (const r of roots) rmSync(r, { recursive: true, force: true })
})

/** One SSO sign-in as alice through the provider's login form; the callback's answer. */
async function signIn(): Promise<{ status: number; cookie: boolean; text: string }> {
  const context: APIRequestContext = await request.newContext()
  try {
    const { callback } = await followToCallback({ request: context }, server.url, server.url + '/admin/oidc/start', 'alice')
    const res = await context.get(callback, { maxRedirects: 0 })
    const cookie = (res.headers()['set-cookie'] ?? '').includes('fixloop_admin=')
    return { status: res.status(), cookie, text: res.status() >= 400 ? await res.text() : '' }
  } finally {
    await context.dispose()
  }
}

test('a provider that closes a kept-alive connection does not fail the sign-in: discovery, token and JWKS each on a new connection', async () => {
  const before = idp.tokenRequests
  // The first sign-in discovers, redeems its code and fetches the keys; the second redeems again on the
  // kept configuration: each of those calls would have gone down the previous call's connection.
  for (let i = 0; i < 2; i++) {
    const r = await signIn()
    expect({ status: r.status, cookie: r.cookie, text: r.text.slice(0, 300) }).toEqual({ status: 303, cookie: true, text: '' })
  }
  expect(idp.tokenRequests - before).toBe(2)
}, 60_000)

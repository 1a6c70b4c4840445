/**
 * Signing out of a single sign-on session ends the identity provider's session too (OpenID Connect
 * RP-Initiated Logout 1.0; docs/security.md "Single sign-on"): the compiled binary against a real provider
 * (`oidc-provider` on loopback, test/oidc-idp.ts), driven in Chromium. The dashboard's "Sign out" sends the
 * browser to the provider's end_session_endpoint (id_token_hint, post_logout_redirect_uri, client_id), the
 * provider ends its session and comes back to the sign-in page; the next SSO sign-in asks for credentials
 * again. Without an end_session_endpoint, and for a password admin, signing out is local, as before.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Browser, BrowserContext } from 'playwright-core'
import { decodeJwt } from 'jose'
import { Database } from 'bun:sqlite'
import { freePort } from './harness'
import { BROWSER_SKIP, launchBrowserEarly } from './browser'
import { cli, followToCallback, serveSso, signedIn, tempDirIn, type SsoServer } from './sso-helpers'
import { startIdp, type TestIdp } from './oidc-idp'

const roots: string[] = []
let browser: Browser
let early: ReturnType<typeof launchBrowserEarly> | undefined
/** A provider with RP-initiated logout, and one without (no end_session_endpoint). */
let idp: TestIdp
let bareIdp: TestIdp
let server: SsoServer
let bareServer: SsoServer

async function start(endSession: boolean): Promise<{ idp: TestIdp; server: SsoServer }> {
  const port = await freePort()
  const provider = await startIdp(`http://127.0.0.1:${port}/admin/oidc/callback`, { endSession })
  const dataDir = join(tempDirIn(roots), 'data')
  expect(cli(dataDir, ['admin', 'create', '--email', 'alice@example.com', '--no-password', '--json']).exitCode).toBe(0)
  const pwFile = join(dataDir, '..', 'bob.txt')
  writeFileSync(pwFile, 'bob password 1\n')
  expect(cli(dataDir, ['admin', 'create', '--email', 'bob@example.com', '--password-file', pwFile, '--json']).exitCode).toBe(0)
  return { idp: provider, server: await serveSso(provider, dataDir, port) }
}

/** An SSO sign-in as alice in a fresh context, with the dashboard open; `loginForms`: the provider's login forms on the way. */
async function ssoSignIn(s: SsoServer): Promise<{ context: BrowserContext; page: Awaited<ReturnType<BrowserContext['newPage']>>; loginForms: number }> {
  const context = await browser.newContext()
  const page = await context.newPage()
  const { callback, loginForms } = await followToCallback(context, s.url, s.url + '/admin/oidc/start', 'alice')
  expect((await page.goto(callback))!.status()).toBe(200)
  await page.getByRole('button', { name: /Sign out/ }).waitFor()
  return { context, page, loginForms }
}

/** The login forms the provider shows a new SSO sign-in in `context` (0: its session is still there). */
async function loginFormsOfNextSignIn(context: BrowserContext, s: SsoServer): Promise<number> {
  return (await followToCallback(context, s.url, s.url + '/admin/oidc/start', 'alice')).loginForms
}

function sealedIdTokens(dataDir: string): (string | null)[] {
  const db = new Database(join(dataDir, 'fixloop.db'), { readonly: true })
  try {
    return (db.query('SELECT id_token_sealed AS t FROM admin_sessions ORDER BY id').all() as { t: string | null }[]).map((r) => r.t)
  } finally {
    db.close()
  }
}

describe.skipIf(!!BROWSER_SKIP)('signing out of single sign-on (RP-initiated logout)', () => {
  beforeAll(async () => {
    early = launchBrowserEarly()
    ;({ idp, server } = await start(true))
    ;({ idp: bareIdp, server: bareServer } = await start(false))
    browser = await early.ready
  }, 60_000)

  afterAll(async () => {
    await early?.close()
    await server?.stop()
    await bareServer?.stop()
    await idp?.close()
    await bareIdp?.close()
    for (const r of roots) rmSync(r, { recursive: true, force: true })
  })

  test('"Sign out" ends the provider\'s session too: the provider\'s logout, back on the sign-in page, and the next SSO sign-in asks for credentials again', async () => {
    const { context, page, loginForms } = await ssoSignIn(server)
    expect(loginForms).toBe(1)
    // The provider's session is there: a second sign-in would not ask (the flow is not finished).
    expect(await loginFormsOfNextSignIn(context, server)).toBe(0)
    // The ID token is kept with the session sealed, never in clear, and in no cookie.
    const sealed = sealedIdTokens(server.dataDir).filter((t) => t !== null)
    expect(sealed).toHaveLength(1)
    expect(sealed[0]).toStartWith('v1:')
    expect(sealed[0]).not.toContain('eyJ')
    expect((await context.cookies()).some((c) => c.value.includes('eyJ'))).toBe(false)

    // The page goes on to the provider at once (the answer's body is gone by then): its navigation is what counts.
    const toProvider = page.waitForRequest((r) => r.url().startsWith(idp.issuer + '/') && r.isNavigationRequest())
    await page.getByRole('button', { name: /Sign out/ }).click()
    const logout = new URL((await toProvider).url())
    const discovery = (await (await fetch(idp.issuer + '/.well-known/openid-configuration')).json()) as { end_session_endpoint: string }
    expect(logout.origin + logout.pathname).toBe(discovery.end_session_endpoint)
    expect(logout.searchParams.get('client_id')).toBe(idp.clientId)
    expect(logout.searchParams.get('post_logout_redirect_uri')).toBe(server.url + '/admin')
    const hint = decodeJwt(logout.searchParams.get('id_token_hint')!)
    expect(hint.iss).toBe(idp.issuer)
    expect(hint.aud).toBe(idp.clientId)
    expect(hint.sub).toBe('alice')
    // The provider asks (oidc-provider's own page), and comes back to fixloop's sign-in page.
    await page.getByRole('button', { name: 'Yes, sign me out' }).click()
    await page.waitForURL(server.url + '/admin**')
    await page.getByRole('button', { name: 'Sign in with SSO' }).waitFor()
    expect(await signedIn(context, server.url)).toBe(false)
    // Signed out at the provider: a new sign-in asks for credentials again.
    expect(await loginFormsOfNextSignIn(context, server)).toBe(1)
    // The revoked session forgot its ID token.
    expect(sealedIdTokens(server.dataDir).filter((t) => t !== null)).toHaveLength(0)
    await context.close()
  }, 60_000)

  test('a provider without an end_session_endpoint: "Sign out" is local, back on the sign-in page (the provider\'s session stays, as it must)', async () => {
    const { context, page } = await ssoSignIn(bareServer)
    const answer = page.waitForResponse((r) => r.url().endsWith('/admin/api/session') && r.request().method() === 'DELETE')
    await page.getByRole('button', { name: /Sign out/ }).click()
    expect(await (await answer).json()).toEqual({ signedOut: true })
    await page.getByRole('button', { name: 'Sign in with SSO' }).waitFor()
    expect(new URL(page.url()).origin).toBe(bareServer.url)
    expect(await signedIn(context, bareServer.url)).toBe(false)
    expect(await loginFormsOfNextSignIn(context, bareServer)).toBe(0)
    await context.close()
  }, 60_000)

  test("a password admin's sign-out is unchanged: local, no provider URL, back on the sign-in page", async () => {
    const context = await browser.newContext()
    const page = await context.newPage()
    await page.goto(server.url + '/admin')
    await page.getByLabel('Email').fill('bob@example.com')
    await page.getByLabel('Password').fill('bob password 1')
    await page.getByRole('button', { name: 'Sign in', exact: true }).click()
    await page.getByRole('button', { name: /Sign out/ }).waitFor()
    expect(sealedIdTokens(server.dataDir).filter((t) => t !== null)).toHaveLength(0)
    const answer = page.waitForResponse((r) => r.url().endsWith('/admin/api/session') && r.request().method() === 'DELETE')
    await page.getByRole('button', { name: /Sign out/ }).click()
    expect(await (await answer).json()).toEqual({ signedOut: true })
    await page.getByLabel('Email').waitFor()
    expect(new URL(page.url()).origin).toBe(server.url)
    expect(await signedIn(context, server.url)).toBe(false)
    await context.close()
  }, 60_000)
})

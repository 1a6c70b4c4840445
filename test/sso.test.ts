/**
 * Single sign-on for the dashboard (CONTRACT.md "Single sign-on for the dashboard"; docs/security.md
 * "Single sign-on"): the compiled binary against a real OpenID provider (`oidc-provider` on loopback,
 * test/oidc-idp.ts), driven in Chromium. Sign-in end to end, and no session for a wrong audience, an
 * expired ID token, another nonce, a state mismatch, a replayed callback, an unknown or an unverified
 * email, `xms_edov` from a provider that is not Entra ID; forged callbacks that must not cancel a sign-in; password sign-in turned off; the callback fuzzed.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { copyFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { BINARY, freePort } from './harness'
import { BROWSER_SKIP, launchBrowserEarly } from './browser'
import { axeViolations, OUT_DIR, screenshots, settle, SHOTS, spawnWithStdout } from './dashboard-helpers'
import { startIdp, type TestIdp } from './oidc-idp'
import { auditRows, cli, followToCallback, serveSso, sessionCookies, signedIn, tempDirIn, type SsoServer } from './sso-helpers'

type Server = SsoServer

const roots: string[] = []
let idp: TestIdp
let browser: Browser
let early: ReturnType<typeof launchBrowserEarly> | undefined
let server: Server

const tempDir = () => tempDirIn(roots)
const serve = (dataDir: string, port: number, extra: Record<string, string> = {}) => serveSso(idp, dataDir, port, extra)

/** Starts a sign-in in a fresh context and follows it through the provider as `login`, up to (not into) the callback. */
async function heldCallback(base: string, login: string): Promise<{ context: BrowserContext; page: Page; callback: string }> {
  const context = await browser.newContext()
  const page = await context.newPage()
  const { callback } = await followToCallback(context, base, base + '/admin/oidc/start', login)
  return { context, page, callback }
}

/** A whole sign-in as `login`; the callback's status and the page's heading and alert text. */
async function attempt(base: string, login: string): Promise<{ context: BrowserContext; page: Page; status: number; heading: string; alert: string }> {
  const { context, page, callback } = await heldCallback(base, login)
  const response = await page.goto(callback)
  const status = response!.status()
  const heading = status === 200 ? '' : await page.getByRole('heading', { level: 1 }).innerText()
  const alert = status === 200 ? '' : await page.getByRole('alert').innerText()
  return { context, page, status, heading, alert }
}

/** A refused attempt: a clear page, no session cookie, no session. */
async function expectRefused(r: Awaited<ReturnType<typeof attempt>>, status: number, heading: RegExp, alert: RegExp): Promise<void> {
  expect(r.status).toBe(status)
  expect(r.heading).toMatch(heading)
  expect(r.alert).toMatch(alert)
  expect(await sessionCookies(r.context)).toEqual([])
  expect(await signedIn(r.context, server.url)).toBe(false)
  expect(await r.page.getByRole('link', { name: 'Back to the sign-in page' }).isVisible()).toBe(true)
  await r.context.close()
}

describe.skipIf(!!BROWSER_SKIP)('dashboard single sign-on (OpenID Connect)', () => {
  beforeAll(async () => {
    early = launchBrowserEarly()
    const port = await freePort()
    idp = await startIdp(`http://127.0.0.1:${port}/admin/oidc/callback`)
    const dataDir = join(tempDir(), 'data')
    const made = cli(dataDir, ['admin', 'create', '--email', 'alice@example.com', '--no-password', '--json'])
    expect(made.exitCode).toBe(0)
    server = await serve(dataDir, port)
    browser = await early.ready
  }, 60_000)

  afterAll(async () => {
    await early?.close()
    await server?.stop()
    await idp?.close()
    for (const r of roots) rmSync(r, { recursive: true, force: true })
  })

  test('signs in end to end by keyboard: the sign-in page offers "Sign in with SSO" next to the form, passes axe, and the sign-in is audited as sso', async () => {
    const context = await browser.newContext()
    const page = await context.newPage()
    await page.goto(server.url + '/admin')
    await page.getByRole('button', { name: 'Sign in with SSO' }).waitFor()
    await settle(page)
    expect(await page.getByLabel('Email').isVisible()).toBe(true)
    expect(await axeViolations(page)).toEqual([])
    expect(await screenshots(page, 'sso-sign-in-both')).toEqual([])
    // Keyboard only: Tab to the SSO button, Enter.
    for (let i = 0; i < 10; i++) {
      await page.keyboard.press('Tab')
      if (await page.evaluate(() => document.activeElement?.textContent === 'Sign in with SSO')) break
    }
    await page.keyboard.press('Enter')
    await page.locator('input[name="login"]').waitFor()
    // The provider's page, not ours: its autofocus can land after the first keystrokes on a loaded machine
    // (a CI run typed 'alice' into nothing, and the sign-in never came back): the field is focused first.
    await page.locator('input[name="login"]').focus()
    await page.keyboard.type('alice')
    await page.keyboard.press('Tab')
    await page.keyboard.type('any password')
    await page.keyboard.press('Enter')
    await page
      .getByRole('button', { name: /Sign out/ })
      .waitFor()
      .catch(async (e) => {
        // Where the sign-in stopped (the provider's form again, an error page of ours), for the CI log.
        throw new Error(`${e instanceof Error ? e.message : e}\n  at ${page.url()}: ${(await page.locator('body').innerText().catch(() => '')).slice(0, 500)}`)
      })
    expect(new URL(page.url()).pathname).toStartWith('/admin')
    const cookies = await context.cookies()
    const session = cookies.find((c) => c.name === 'fixloop_admin')!
    expect(session.httpOnly).toBe(true)
    expect(session.sameSite).toBe('Lax')
    // The flow cookie was single use: gone after the callback.
    expect(cookies.some((c) => c.name.endsWith('fixloop_oidc'))).toBe(false)
    const me = (await (await context.request.get(server.url + '/admin/api/session')).json()) as { email: string }
    expect(me.email).toBe('alice@example.com')
    const audited = auditRows(server.dataDir, 'admin.signed_in')
    expect(audited.at(-1)!.data).toBe(JSON.stringify({ method: 'sso' }))
    await context.close()
  }, 60_000)

  test('the flow cookie is HttpOnly, SameSite=Lax, short-lived and sealed; the authorization request carries PKCE (S256), state and nonce, and the redirect URI is FIXLOOP_PUBLIC_URL\'s whatever the Host header says', async () => {
    const r = await fetch(server.url + '/admin/oidc/start', { redirect: 'manual', headers: { host: 'evil.example', 'x-forwarded-host': 'evil.example' } })
    expect(r.status).toBe(303)
    const to = new URL(r.headers.get('location')!)
    expect(to.origin).toBe(idp.issuer)
    expect(to.searchParams.get('redirect_uri')).toBe(server.url + '/admin/oidc/callback')
    expect(to.searchParams.get('code_challenge_method')).toBe('S256')
    expect(to.searchParams.get('code_challenge')!.length).toBeGreaterThan(40)
    expect(to.searchParams.get('state')!.length).toBeGreaterThan(20)
    expect(to.searchParams.get('nonce')!.length).toBeGreaterThan(20)
    expect(to.searchParams.get('scope')).toBe('openid email profile')
    // A sign-in lets the provider reuse its own session (only a step-up re-authentication forces a login).
    expect(to.searchParams.has('prompt')).toBe(false)
    expect(to.searchParams.has('max_age')).toBe(false)
    const cookie = r.headers.get('set-cookie')!
    expect(cookie).toMatch(/^fixloop_oidc=[^;]+; Path=\/; HttpOnly; SameSite=Lax; Max-Age=600$/)
    // Sealed: neither the state nor the nonce can be read from it.
    expect(cookie).not.toContain(to.searchParams.get('state')!)
    expect(cookie).not.toContain(to.searchParams.get('nonce')!)
  })

  test('an unknown email gets a page saying so (accessible, no sideways scroll at 375 px), and no session', async () => {
    const r = await attempt(server.url, 'stranger')
    expect(await axeViolations(r.page)).toEqual([])
    expect(await screenshots(r.page, 'sso-refused')).toEqual([])
    await expectRefused(r, 403, /Not a fixloop admin/, /No fixloop admin has the email address stranger@example.com/)
  }, 60_000)

  test('an unverified email (email_verified false) gets a page saying so, and no session, even though the address is an admin\'s', async () => {
    await expectRefused(await attempt(server.url, 'unverified'), 403, /Email address not verified/, /does not vouch for the email address/)
  }, 60_000)

  test('an ID token for another audience is refused (signed by the provider\'s real key)', async () => {
    idp.tamper = (c) => ({ ...c, aud: 'another-client' })
    try {
      await expectRefused(await attempt(server.url, 'alice'), 400, /Sign-in failed/, /ID token did not pass the checks.*aud/)
    } finally {
      idp.tamper = undefined
    }
  }, 60_000)

  test('an ID token not signed by a key of the issuer\'s JWKS is refused', async () => {
    idp.tamper = (c) => c
    idp.forgeSignature = true
    try {
      await expectRefused(await attempt(server.url, 'alice'), 400, /Sign-in failed/, /ID token did not pass the checks.*signature/i)
    } finally {
      idp.tamper = undefined
      idp.forgeSignature = false
    }
  }, 60_000)

  test('an expired ID token is refused', async () => {
    const now = Math.floor(Date.now() / 1000)
    idp.tamper = (c) => ({ ...c, iat: now - 7200, exp: now - 3600 })
    try {
      await expectRefused(await attempt(server.url, 'alice'), 400, /Sign-in failed/, /ID token did not pass the checks.*exp/)
    } finally {
      idp.tamper = undefined
    }
  }, 60_000)

  test('an ID token issued in the future (iat an hour ahead) is refused', async () => {
    // openid-client bounds exp and nbf, not iat: a token dated ahead (a provider's clock far off, or a
    // token minted for later use) passed its checks.
    idp.tamper = (c) => ({ ...c, iat: Math.floor(Date.now() / 1000) + 3600, exp: Math.floor(Date.now() / 1000) + 7200 })
    try {
      await expectRefused(await attempt(server.url, 'alice'), 400, /Sign-in failed/, /ID token did not pass the checks.*iat/)
    } finally {
      idp.tamper = undefined
    }
  }, 60_000)

  test('an ID token with another nonce is refused', async () => {
    idp.tamper = (c) => ({ ...c, nonce: 'a-nonce-from-another-sign-in' })
    try {
      await expectRefused(await attempt(server.url, 'alice'), 400, /Sign-in failed/, /ID token did not pass the checks.*nonce/)
    } finally {
      idp.tamper = undefined
    }
  }, 60_000)

  test('xms_edov true (Entra ID\'s "email domain owner verified") from a provider that is not Entra ID does not count as verified; neither does a string "true"', async () => {
    // Signed by the provider's real key: a token this (non-Entra) provider could issue, with Entra's claim in it.
    idp.tamper = (c) => {
      const { email_verified: _, ...rest } = c
      return { ...rest, xms_edov: true }
    }
    try {
      await expectRefused(await attempt(server.url, 'alice'), 403, /Email address not verified/, /does not vouch/)
      idp.tamper = (c) => ({ ...c, email_verified: 'true' })
      await expectRefused(await attempt(server.url, 'alice'), 403, /Email address not verified/, /does not vouch/)
    } finally {
      idp.tamper = undefined
    }
  }, 60_000)

  test('a callback whose state is not the browser\'s flow\'s is refused', async () => {
    const { context, page, callback } = await heldCallback(server.url, 'alice')
    const forged = new URL(callback)
    forged.searchParams.set('state', 'a-state-of-someone-elses-sign-in')
    const response = await page.goto(forged.href)
    expect(response!.status()).toBe(400)
    expect(await page.getByRole('alert').innerText()).toMatch(/does not belong to the sign-in attempt this browser started/)
    expect(await sessionCookies(context)).toEqual([])
    expect(await signedIn(context, server.url)).toBe(false)
    await context.close()
  }, 60_000)

  test('a forged callback cannot cancel a pending sign-in: without the flow\'s state (another state, none, an error) in its browser, or with its state from another browser, it gets the page and the sign-in still completes', async () => {
    const { context, page, callback } = await heldCallback(server.url, 'alice')
    const state = new URL(callback).searchParams.get('state')!
    // Top-level navigations another site can make this browser do (its Lax flow cookie goes with them).
    for (const q of ['', '?error=access_denied', '?error=access_denied&state=a-forged-state', '?code=a-forged-code&state=a-forged-state', `?code=a-forged-code&state=${'x'.repeat(9000)}`]) {
      const r = await context.request.get(server.url + '/admin/oidc/callback' + q, { maxRedirects: 0 })
      expect(r.status()).toBe(400)
      expect(await r.text()).toContain('Sign-in failed')
      expect(r.headers()['set-cookie'] ?? '').not.toContain('fixloop_oidc=')
    }
    // The flow's own state, observed, from a browser without its flow cookie: nothing of this browser's flow is spent.
    const other = await browser.newContext()
    for (const q of [`?code=a-forged-code&state=${encodeURIComponent(state)}`, `?error=access_denied&state=${encodeURIComponent(state)}`]) {
      expect((await other.request.get(server.url + '/admin/oidc/callback' + q, { maxRedirects: 0 })).status()).toBe(400)
    }
    await other.close()
    expect((await context.cookies()).filter((c) => c.name === 'fixloop_oidc')).toHaveLength(1)
    const response = await page.goto(callback)
    expect(response!.status()).toBe(200)
    expect(await signedIn(context, server.url)).toBe(true)
    await context.close()
  }, 60_000)

  test('a callback from another browser (no flow cookie) is refused: login CSRF', async () => {
    const { context, callback } = await heldCallback(server.url, 'alice')
    await context.close()
    const victim = await browser.newContext()
    const page = await victim.newPage()
    const response = await page.goto(callback)
    expect(response!.status()).toBe(400)
    expect(await page.getByRole('alert').innerText()).toMatch(/expired, was already used, or was started in another browser/)
    expect(await sessionCookies(victim)).toEqual([])
    await victim.close()
  }, 60_000)

  test('a replayed callback is refused: the second call of the same URL, and again with the original flow cookie put back', async () => {
    const { context, page, callback } = await heldCallback(server.url, 'alice')
    const flowCookie = (await context.cookies()).find((c) => c.name === 'fixloop_oidc')!
    const first = await page.goto(callback)
    expect(first!.status()).toBe(200)
    await page.getByRole('button', { name: /Sign out/ }).waitFor()
    await context.clearCookies()
    const second = await page.goto(callback)
    expect(second!.status()).toBe(400)
    expect(await sessionCookies(context)).toEqual([])
    // The same request with the original (sealed, unexpired) flow cookie: spent.
    await context.addCookies([flowCookie])
    const third = await page.goto(callback)
    expect(third!.status()).toBe(400)
    expect(await page.getByRole('alert').innerText()).toMatch(/already used/)
    expect(await sessionCookies(context)).toEqual([])
    await context.close()
  }, 60_000)

  test('a restart does not forget a spent flow (its claim is in the database); and the provider refuses a replayed authorization code even when fixloop lost that claim', async () => {
    const { context, page, callback } = await heldCallback(server.url, 'alice')
    const flowCookie = (await context.cookies()).find((c) => c.name === 'fixloop_oidc')!
    expect((await page.goto(callback))!.status()).toBe(200)
    await page.getByRole('button', { name: /Sign out/ }).waitFor()
    const port = Number(new URL(server.url).port)
    const replay = async () => {
      await context.clearCookies()
      await context.addCookies([flowCookie])
      const again = await page.goto(callback)
      expect(again!.status()).toBe(400)
      expect(await sessionCookies(context)).toEqual([])
      return page.getByRole('alert').innerText()
    }
    // A restart empties the node's memory, not the claim: refused here, the provider not asked.
    await server.stop()
    server = await serve(server.dataDir, port)
    expect(await replay()).toMatch(/already used/)
    // The claim lost too (a restored backup; in a cluster, a Redis restarted without persistence): the code
    // reaches the provider a second time, which refuses it.
    await server.stop()
    const db = new Database(join(server.dataDir, 'fixloop.db'))
    db.run("DELETE FROM pow_spent WHERE signature LIKE 'oidc:%'")
    db.close()
    server = await serve(server.dataDir, port)
    expect(await replay()).toMatch(/refused the sign-in code \("invalid_grant"\)/)
    await context.close()
  }, 60_000)

  test('a --no-password admin cannot sign in with a password; the provider\'s own error is shown, without its free text', async () => {
    const r = await fetch(server.url + '/admin/api/session', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'alice@example.com', password: '!no-password' }) })
    expect(r.status).toBe(401)
    const denied = await fetch(server.url + '/admin/oidc/callback?error=access_denied&error_description=%3Cscript%3Ealert(1)%3C/script%3E&state=x', { redirect: 'manual' })
    expect(denied.status).toBe(400)
    expect(await denied.text()).not.toContain('<script>')
  })

  test("the provider's refusal of a flow is shown as its error code, also when it sends no iss with it", async () => {
    const start = await fetch(server.url + '/admin/oidc/start', { redirect: 'manual' })
    expect(start.status).toBe(303)
    const state = new URL(start.headers.get('location')!).searchParams.get('state')!
    const cookie = start.headers.get('set-cookie')!.split(';')[0]
    const denied = await fetch(`${server.url}/admin/oidc/callback?error=access_denied&error_description=no&state=${encodeURIComponent(state)}`, { redirect: 'manual', headers: { cookie } })
    expect(denied.status).toBe(400)
    const page = await denied.text()
    expect(page).toContain('answered &#34;access_denied&#34;')
    expect(page).not.toContain('ID token')
  })

  test('fuzz: junk, missing, repeated, huge and NUL parameters on the callback are a clear 400 page, never a 5xx', async () => {
    const cases = [
      '',
      '?',
      '?code=',
      '?state=',
      '?code=abc',
      '?state=abc',
      '?code=a&code=b&state=c',
      '?code=a&state=b&state=c',
      `?code=${'x'.repeat(100_000)}&state=y`,
      `?code=a&state=${'%00'.repeat(3000)}`,
      '?code=%00&state=%00',
      '?code=%E0%A4%A&state=%ZZ',
      '?error=' + 'e'.repeat(50_000),
      '?error[]=a&code[x]=b',
      '?iss=https://evil.example&code=a&state=b',
    ]
    for (const q of cases) {
      for (const cookie of [undefined, 'fixloop_oidc=junk', `fixloop_oidc=${'A'.repeat(5000)}`, 'fixloop_oidc=a; fixloop_oidc=b', 'fixloop_oidc=%00%ZZ']) {
        const r = await fetch(server.url + '/admin/oidc/callback' + q, { redirect: 'manual', headers: cookie ? { cookie } : {} })
        expect([400, 414, 431]).toContain(r.status)
        if (r.status === 400) {
          expect(r.headers.get('content-type')).toContain('text/html')
          expect(await r.text()).toContain('Sign-in failed')
        }
        expect(r.headers.get('set-cookie') ?? '').not.toContain('fixloop_admin=')
      }
    }
  }, 60_000)

  describe('with FIXLOOP_PASSWORD_SIGNIN=off', () => {
    let ssoOnly: Server

    beforeAll(async () => {
      ssoOnly = await serve(join(tempDir(), 'data'), await freePort(), { FIXLOOP_PASSWORD_SIGNIN: 'off' })
    }, 30_000)
    afterAll(async () => {
      await ssoOnly?.stop()
    })

    test('the form is gone (the button only), the page passes axe and keyboard use, and at 1280 and 375 px it does not scroll sideways', async () => {
      const context = await browser.newContext()
      const page = await context.newPage()
      await page.goto(ssoOnly.url + '/admin')
      await page.getByRole('button', { name: 'Sign in with SSO' }).waitFor()
      await settle(page)
      expect(await page.getByLabel('Email').count()).toBe(0)
      expect(await page.getByLabel('Password').count()).toBe(0)
      expect(await page.getByRole('button', { name: 'Sign in', exact: true }).count()).toBe(0)
      expect(await axeViolations(page)).toEqual([])
      expect(await screenshots(page, 'sso-sign-in')).toEqual([])
      if (SHOTS) {
        copyFileSync(join(OUT_DIR, 'dashboard-sso-sign-in-1280.png'), '/tmp/s40-sso-1280.png')
        copyFileSync(join(OUT_DIR, 'dashboard-sso-sign-in-375.png'), '/tmp/s40-sso-375.png')
      }
      await page.keyboard.press('Tab')
      expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Sign in with SSO')
      await page.keyboard.press('Enter')
      await page.waitForURL((u) => u.origin === idp.issuer)
      await context.close()
    }, 60_000)

    test('POSTing the password sign-in route is refused with a clear error, and so is the setup link', async () => {
      const r = await fetch(ssoOnly.url + '/admin/api/session', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'a@example.com', password: 'whatever-password' }) })
      expect(r.status).toBe(403)
      const body = (await r.json()) as { error: { code: string; message: string; details: unknown } }
      expect(body.error.code).toBe('forbidden')
      expect(body.error.message).toContain('FIXLOOP_PASSWORD_SIGNIN=off')
      expect(body.error.details).toEqual({ passwordSignIn: false })
      const setup = await fetch(ssoOnly.url + '/admin/api/setup', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token: 'x'.repeat(32), email: 'a@example.com', password: 'whatever-password' }) })
      expect(setup.status).toBe(403)
      expect(await (await fetch(ssoOnly.url + '/admin/api/sign-in-methods')).json()).toEqual({ password: false, sso: true, setupOpen: false })
    })
  })

  test('with password sign-in off and no admin, serve prints the --no-password command instead of a setup link', async () => {
    const running = await spawnWithStdout(join(tempDir(), 'data'), {
      FIXLOOP_PASSWORD_SIGNIN: 'off',
      FIXLOOP_OIDC_ISSUER: idp.issuer,
      FIXLOOP_OIDC_CLIENT_ID: idp.clientId,
      FIXLOOP_OIDC_CLIENT_SECRET: idp.clientSecret,
      FIXLOOP_PUBLIC_URL: 'http://127.0.0.1:9',
    })
    try {
      for (const deadline = Date.now() + 20_000; !running.stdout().includes('no admin yet') && Date.now() < deadline; ) await Bun.sleep(25)
      expect(running.stdout()).toContain('fixloop admin create --email EMAIL --no-password')
      expect(running.stdout()).not.toContain('/admin/setup#token=')
    } finally {
      await running.stop()
    }
  }, 60_000)

  test('serve refuses to start (exit 2, a clear message) with password sign-in off and no SSO, or with SSO half configured', async () => {
    const dataDir = join(tempDir(), 'data')
    const off = Bun.spawnSync([BINARY, 'serve', '--port', '0', '--data-dir', dataDir], { env: { PATH: process.env.PATH ?? '', FIXLOOP_PASSWORD_SIGNIN: 'off' } })
    expect(off.exitCode).toBe(2)
    expect(off.stderr.toString()).toContain('FIXLOOP_PASSWORD_SIGNIN=off needs single sign-on configured')
    const half = Bun.spawnSync([BINARY, 'serve', '--port', '0', '--data-dir', dataDir], { env: { PATH: process.env.PATH ?? '', FIXLOOP_OIDC_ISSUER: 'https://id.example.com', FIXLOOP_OIDC_CLIENT_ID: 'x', FIXLOOP_OIDC_CLIENT_SECRET: 'y' } })
    expect(half.exitCode).toBe(2)
    expect(half.stderr.toString()).toContain('needs FIXLOOP_PUBLIC_URL')
    const plain = Bun.spawnSync([BINARY, 'serve', '--port', '0', '--data-dir', dataDir], { env: { PATH: process.env.PATH ?? '', FIXLOOP_OIDC_ISSUER: 'http://id.example.com', FIXLOOP_OIDC_CLIENT_ID: 'x', FIXLOOP_OIDC_CLIENT_SECRET: 'y', FIXLOOP_PUBLIC_URL: 'https://fixloop.example.com' } })
    expect(plain.exitCode).toBe(2)
    expect(plain.stderr.toString()).toContain('must be an https URL')
  })
})

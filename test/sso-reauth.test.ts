/**
 * Step-up re-authentication at the identity provider (docs/security.md "Single sign-on"): an SSO-only
 * admin, who has no password to re-enter, confirms a signing-secret reveal or a TOTP change by signing
 * in again at the provider. The compiled binary against a real OpenID provider (`oidc-provider` on
 * loopback, test/oidc-idp.ts), driven in Chromium and through the browser context's own request client.
 *
 * Proves: the reveal after a re-authentication, by keyboard, on an accessible page; without one it is
 * refused with details saying how; one use; a 5-minute window (the server restarted under libfaketime);
 * the purpose bound; an `auth_time` from before the start refused (a real provider session from the past,
 * reused by a flow that does not force a login); another person's login refused; a replayed or foreign
 * state refused; another session's flow refused; CSRF; the start route and the callback fuzzed.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { APIResponse, Browser, BrowserContext, Locator, Page } from 'playwright-core'
import { freePort } from './harness'
import { BROWSER_SKIP, launchBrowserEarly } from './browser'
import { axeViolations, photo, screenshots, settle, SHOTS } from './dashboard-helpers'
import { startIdp, type TestIdp } from './oidc-idp'
import { auditRows, cli, followToCallback, idpLogin, serveSso, tempDirIn, type SsoServer } from './sso-helpers'

const LIBFAKETIME = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1'
const REVEAL_PURPOSE = 'secret_reveal'

const roots: string[] = []
let idp: TestIdp
let browser: Browser
let early: ReturnType<typeof launchBrowserEarly> | undefined
let server: SsoServer
let port: number
let orgId: string
let appId: string

/** A dashboard session in its own browser context: its cookie jar, and the CSRF token of the session. */
interface Admin {
  context: BrowserContext
  csrf: string
}

/** The full-page images make a dialog small: the element itself too, at both widths, to look at. */
async function elementShots(page: Page, element: Locator, name: string): Promise<void> {
  if (!SHOTS) return
  const before = page.viewportSize()
  for (const width of [1280, 375]) {
    await page.setViewportSize({ width, height: width === 375 ? 740 : 800 })
    await photo(element, `dashboard-${name}-element-${width}.png`)
  }
  if (before) await page.setViewportSize(before)
}

/** Restarts fixloop on the same port and data, `shift` ahead (libfaketime, e.g. '+6m'), or on the real clock. */
async function restart(shift?: string): Promise<void> {
  await server.stop()
  server = await serveSso(idp, server.dataDir, port, shift ? { LD_PRELOAD: LIBFAKETIME, FAKETIME: shift, DONT_FAKE_MONOTONIC: '1' } : {})
}

/** Signs in through SSO as `login` in a fresh context. */
async function ssoSignIn(login: string): Promise<Admin> {
  const context = await browser.newContext()
  const { callback } = await followToCallback(context, server.url, server.url + '/admin/oidc/start', login)
  const r = await context.request.get(callback, { maxRedirects: 0 })
  expect(r.status()).toBe(303)
  const me = await context.request.get(server.url + '/admin/api/session')
  expect(me.status()).toBe(200)
  return { context, csrf: ((await me.json()) as { csrfToken: string }).csrfToken }
}

/** Signs in with email and password in a fresh context. */
async function passwordSignIn(email: string, password: string): Promise<Admin> {
  const context = await browser.newContext()
  const r = await context.request.post(server.url + '/admin/api/session', { data: { email, password } })
  expect(r.status()).toBe(200)
  return { context, csrf: ((await r.json()) as { csrfToken: string }).csrfToken }
}

function post(a: Admin, path: string, data: unknown, headers: Record<string, string> = { 'x-csrf-token': a.csrf }): Promise<APIResponse> {
  return a.context.request.post(server.url + path, { data: data as object, headers, maxRedirects: 0 })
}

/**
 * The App's page. Its signing secret comes before every section that loads data of its own, so the
 * secret's buttons stay where they are when those answer (test/dashboard-app-loading.test.ts): when the
 * Duplicate detection section above them filled in late, a click whose press and release straddled it
 * (Playwright checks the target at the press only) was released on its facts, the browser clicked <main>
 * and no dialog opened.
 */
async function openAppPage(page: Page): Promise<string> {
  const appUrl = `/admin/o/${orgId}/apps/${appId}`
  await page.goto(server.url + appUrl)
  return appUrl
}

const revealPath = () => `/admin/api/orgs/${orgId}/apps/${appId}/secret/reveal`
const reveal = (a: Admin, body: Record<string, unknown> = {}) => post(a, revealPath(), body)

/** POST /admin/api/me/reauth: the provider URL to go to. */
async function startReauth(a: Admin, purpose: string, returnTo?: string): Promise<string> {
  const r = await post(a, '/admin/api/me/reauth', returnTo === undefined ? { purpose } : { purpose, returnTo })
  expect(r.status()).toBe(200)
  expect(r.headers()['cache-control']).toBe('no-store')
  return ((await r.json()) as { url: string }).url
}

/**
 * A whole re-authentication: started for `purpose`, signed in at the provider as `login`, the callback
 * called in `a`'s browser. `edit` changes the provider URL first (a flow that does not force a login).
 */
async function reauth(a: Admin, purpose: string, login = 'alice', opts: { returnTo?: string; edit?: (u: URL) => void } = {}) {
  const url = new URL(await startReauth(a, purpose, opts.returnTo))
  opts.edit?.(url)
  const { callback, loginForms } = await followToCallback(a.context, server.url, url.href, login)
  const response = await a.context.request.get(callback, { maxRedirects: 0 })
  return { status: response.status(), location: response.headers()['location'], body: await response.text(), loginForms, callback }
}

const lastAudit = (action: string) => JSON.parse(auditRows(server.dataDir, action).at(-1)?.data ?? 'null') as Record<string, unknown> | null
const auditCount = (action: string) => auditRows(server.dataDir, action).length

async function expectRefusedReveal(a: Admin): Promise<Record<string, unknown>> {
  const r = await reveal(a)
  expect(r.status()).toBe(401)
  const body = (await r.json()) as { error: { code: string; details: Record<string, unknown> } }
  expect(body.error.code).toBe('invalid_credentials')
  return body.error.details
}

describe.skipIf(!!BROWSER_SKIP)('step-up re-authentication at the identity provider', () => {
  beforeAll(async () => {
    early = launchBrowserEarly()
    port = await freePort()
    idp = await startIdp(`http://127.0.0.1:${port}/admin/oidc/callback`)
    const dataDir = join(tempDirIn(roots), 'data')
    expect(cli(dataDir, ['admin', 'create', '--email', 'alice@example.com', '--no-password', '--json']).exitCode).toBe(0)
    const pwFile = join(dataDir, '..', 'bob.txt')
    writeFileSync(pwFile, 'bob password 1\n')
    expect(cli(dataDir, ['admin', 'create', '--email', 'bob@example.com', '--password-file', pwFile, '--json']).exitCode).toBe(0)
    server = await serveSso(idp, dataDir, port)
    browser = await early.ready
    // An Org and an App whose signing secret the tests reveal.
    const alice = await ssoSignIn('alice')
    const org = await post(alice, '/admin/api/orgs', { name: 'Acme' })
    orgId = ((await org.json()) as { id: string }).id
    const app = await post(alice, `/admin/api/orgs/${orgId}/apps`, { name: 'Shop' })
    appId = ((await app.json()) as { id: string }).id
    await alice.context.close()
  }, 60_000)

  afterAll(async () => {
    await early?.close()
    await server?.stop()
    await idp?.close()
    for (const r of roots) rmSync(r, { recursive: true, force: true })
  })

  test('an SSO-only admin reveals a signing secret after confirming at the provider, by keyboard; the dialog passes axe and fits 1280 and 375 px; audited', async () => {
    const alice = await ssoSignIn('alice')
    const page = await alice.context.newPage()
    const appUrl = await openAppPage(page)
    await page.getByRole('button', { name: 'Reveal' }).click()
    // The dialog's own button (the repository form behind it has one too, named for its action).
    const confirm = page.getByRole('dialog').getByRole('button', { name: `Confirm with 127.0.0.1:${new URL(idp.issuer).port}`, exact: true })
    // What the page showed instead, should the button never come (a CI run at five parallel files once
    // waited 30 s for it): the dialog's text, or the main area's when no dialog opened.
    await confirm.waitFor().catch(async (e: Error) => {
      const shown = (await page.getByRole('dialog').count()) > 0 ? await page.getByRole('dialog').innerText() : await page.locator('main').innerText().catch(() => '(no main)')
      throw new Error(`${e.message}\nthe page showed: ${shown.slice(0, 1000)}`)
    })
    // No password to type: no password field, and the dialog's Reveal waits for the confirmation.
    expect(await page.locator('#reveal-password').count()).toBe(0)
    expect(await page.getByRole('dialog').getByRole('button', { name: 'Reveal' }).isDisabled()).toBe(true)
    await settle(page)
    expect(await axeViolations(page)).toEqual([])
    expect(await screenshots(page, 'sso-reauth-reveal')).toEqual([])
    await elementShots(page, page.getByRole('dialog'), 'sso-reauth-reveal')
    // The button has the focus (the dialog's first control): Enter starts the flow.
    expect(await page.evaluate(() => document.activeElement?.textContent)).toMatch(/^Confirm with/)
    await page.keyboard.press('Enter')
    await page.locator('input[name="login"]').waitFor()
    await idpLogin(page, 'alice')
    // Back on the App's page, the dialog open again to finish; Reveal has the focus.
    await page.getByText(/Confirmed with 127\.0\.0\.1/).waitFor()
    expect(new URL(page.url()).pathname).toBe(appUrl)
    await settle(page)
    expect(await axeViolations(page)).toEqual([])
    expect(await screenshots(page, 'sso-reauth-confirmed')).toEqual([])
    await elementShots(page, page.getByRole('dialog'), 'sso-reauth-confirmed')
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Reveal')
    await page.keyboard.press('Enter')
    const value = page.getByLabel('Signing secret (hex)')
    await value.waitFor()
    expect(await value.inputValue()).toMatch(/^[0-9a-f]{64}$/)
    expect(lastAudit('admin.reauthenticated')).toEqual({ method: 'oidc', purpose: REVEAL_PURPOSE })
    expect(auditRows(server.dataDir, 'app.secret_revealed').length).toBeGreaterThan(0)
    // Used once: the same session asks again.
    const details = await expectRefusedReveal(alice)
    expect(details.reauthRequired).toBe(true)
    await alice.context.close()
  }, 90_000)

  test('an SSO-only admin creates an sk_ key after confirming at the provider: the name typed before survives the round trip; axe, 1280 and 375 px', async () => {
    const alice = await ssoSignIn('alice')
    const page = await alice.context.newPage()
    const keysUrl = `/admin/o/${orgId}/keys`
    await page.goto(server.url + keysUrl)
    await page.getByLabel('Key name').fill('ci deploy')
    // No password to type: the Create button waits for the confirmation.
    expect(await page.locator('#key-password').count()).toBe(0)
    expect(await page.getByRole('button', { name: 'Create key' }).isDisabled()).toBe(true)
    await settle(page)
    expect(await axeViolations(page)).toEqual([])
    expect(await screenshots(page, 'sso-reauth-key')).toEqual([])
    // By keyboard: from the name to the provider's button.
    await page.getByLabel('Key name').focus()
    await page.keyboard.press('Tab')
    expect(await page.evaluate(() => document.activeElement?.textContent)).toMatch(/^Confirm with/)
    await page.keyboard.press('Enter')
    await page.locator('input[name="login"]').waitFor()
    await idpLogin(page, 'alice')
    await page.getByText(/Confirmed with 127\.0\.0\.1/).waitFor()
    expect(new URL(page.url()).pathname).toBe(keysUrl)
    expect(await page.getByLabel('Key name').inputValue()).toBe('ci deploy')
    await settle(page)
    expect(await axeViolations(page)).toEqual([])
    expect(await screenshots(page, 'sso-reauth-key-confirmed')).toEqual([])
    await page.getByRole('button', { name: 'Create key' }).click()
    const key = await page.getByLabel('New API key').inputValue()
    expect(key).toMatch(/^sk_/)
    await page.getByRole('cell', { name: 'ci deploy', exact: true }).waitFor()
    expect(lastAudit('admin.reauthenticated')).toEqual({ method: 'oidc', purpose: 'key_create' })
    // Used once: another key asks again.
    const again = await post(alice, `/admin/api/orgs/${orgId}/keys`, { name: 'second' })
    expect(again.status()).toBe(401)
    expect(((await again.json()) as { error: { details: { reauthRequired?: boolean } } }).error.details.reauthRequired).toBe(true)
    await alice.context.close()
  }, 90_000)

  test('an SSO-only admin rotates the signing secret after confirming at the provider: the dialog opens again to finish; a reveal confirmation does not rotate', async () => {
    const alice = await ssoSignIn('alice')
    // A confirmation for another purpose is no proof for this one.
    expect((await reauth(alice, REVEAL_PURPOSE)).status).toBe(303)
    const refused = await post(alice, `/admin/api/orgs/${orgId}/apps/${appId}/secret/rotate`, {})
    expect(refused.status()).toBe(401)
    const page = await alice.context.newPage()
    await openAppPage(page)
    // The reveal confirmation (unused) opens the reveal dialog: closed, then the rotation.
    await page.getByRole('dialog', { name: 'Reveal the signing secret' }).waitFor()
    await page.keyboard.press('Escape')
    await page.getByRole('button', { name: 'Rotate secret' }).click()
    const dialog = page.getByRole('dialog', { name: 'Rotate the signing secret?' })
    expect(await dialog.getByRole('button', { name: 'Rotate now' }).isDisabled()).toBe(true)
    await settle(page)
    expect(await axeViolations(page)).toEqual([])
    await elementShots(page, dialog, 'sso-reauth-rotate')
    await dialog.getByRole('button', { name: /^Confirm with/ }).click()
    await page.locator('input[name="login"]').waitFor()
    await idpLogin(page, 'alice')
    await page.getByRole('dialog', { name: 'Rotate the signing secret?' }).getByText(/Confirmed with 127\.0\.0\.1/).waitFor()
    await page.getByRole('dialog', { name: 'Rotate the signing secret?' }).getByRole('button', { name: 'Rotate now' }).click()
    await page.getByText('Rotated.').waitFor()
    expect(await page.getByLabel('Signing secret (hex)').inputValue()).toMatch(/^[0-9a-f]{64}$/)
    expect(lastAudit('admin.reauthenticated')).toEqual({ method: 'oidc', purpose: 'secret_rotate' })
    await alice.context.close()
  }, 90_000)

  test('the Account page: an SSO-only admin confirms at the provider first, then sets up TOTP (axe, 1280 and 375 px); an admin with a password sees both ways', async () => {
    const alice = await ssoSignIn('alice')
    const page = await alice.context.newPage()
    await page.goto(server.url + '/admin/account')
    const button = page.getByRole('button', { name: /^Confirm with 127\.0\.0\.1:\d+, then set up an authenticator app$/ })
    await button.waitFor()
    expect(await page.getByRole('button', { name: 'Set up an authenticator app', exact: true }).count()).toBe(0)
    await settle(page)
    expect(await axeViolations(page)).toEqual([])
    expect(await screenshots(page, 'sso-reauth-totp')).toEqual([])
    await elementShots(page, page.locator('section[aria-labelledby="twofa"]'), 'sso-reauth-totp')
    await button.click()
    await page.locator('input[name="login"]').waitFor()
    await idpLogin(page, 'alice')
    // Back on the Account page: the set-up started, confirmed; the code turns TOTP on.
    await page.getByText(/Confirmed with 127\.0\.0\.1/).waitFor()
    expect(new URL(page.url()).pathname).toBe('/admin/account')
    await settle(page)
    expect(await axeViolations(page)).toEqual([])
    await elementShots(page, page.locator('section[aria-labelledby="twofa"]'), 'sso-reauth-totp-confirmed')
    const secret = await page.locator('#totp-secret').inputValue()
    const { base32Decode, totpCode } = await import('../src/modules/admins/totp')
    await page.getByLabel('Code').fill(totpCode(base32Decode(secret), Date.now()))
    await page.getByRole('button', { name: 'Turn on' }).click()
    await page.getByText(/^On: sign-in asks for a code/).waitFor()
    expect(lastAudit('admin.reauthenticated')).toEqual({ method: 'oidc', purpose: 'totp_enable' })
    // Off again, the same way (the page's Turn off form offers the provider).
    await page.getByRole('button', { name: /^Confirm with 127\.0\.0\.1:\d+$/ }).click()
    await page.locator('input[name="login"]').waitFor()
    await idpLogin(page, 'alice')
    await page.getByText(/Confirmed with 127\.0\.0\.1/).waitFor()
    await page.getByRole('button', { name: 'Turn off' }).click()
    await page.getByText('Off.').waitFor()
    await alice.context.close()

    const bob = await passwordSignIn('bob@example.com', 'bob password 1')
    const bobPage = await bob.context.newPage()
    await openAppPage(bobPage)
    await bobPage.getByRole('button', { name: 'Reveal' }).click()
    await bobPage.locator('#reveal-password').waitFor()
    expect(await bobPage.getByRole('dialog').getByRole('button', { name: /^Confirm with/ }).isVisible()).toBe(true)
    await settle(bobPage)
    expect(await axeViolations(bobPage)).toEqual([])
    expect(await screenshots(bobPage, 'sso-reauth-both')).toEqual([])
    await elementShots(bobPage, bobPage.getByRole('dialog'), 'sso-reauth-both')
    await bob.context.close()
  }, 60_000)

  test('without a re-authentication the reveal is refused, and the error says where to re-authenticate; a password does not help an SSO-only admin', async () => {
    const alice = await ssoSignIn('alice')
    const details = await expectRefusedReveal(alice)
    expect(details).toEqual({ reauthRequired: true, noPassword: true, reauth: '/admin/api/me/reauth', method: 'POST', purpose: REVEAL_PURPOSE })
    const withPassword = await reveal(alice, { password: 'a guess' })
    expect(withPassword.status()).toBe(401)
    expect(((await withPassword.json()) as { error: { details: Record<string, unknown> } }).error.details).toMatchObject({ noPassword: true, reauth: '/admin/api/me/reauth' })
    // TOTP likewise.
    const disable = await alice.context.request.delete(server.url + '/admin/api/me/totp', { data: {}, headers: { 'x-csrf-token': alice.csrf } })
    expect(disable.status()).toBe(401)
    expect(((await disable.json()) as { error: { details: Record<string, unknown> } }).error.details).toMatchObject({ reauthRequired: true, purpose: 'totp_disable' })
    await alice.context.close()
  }, 60_000)

  test('a re-authentication is used once, and only for its purpose: one for totp_disable does not reveal a secret', async () => {
    const alice = await ssoSignIn('alice')
    // The authorization request: the sign-in's code flow (PKCE S256, state, nonce, the same redirect URI) forcing a new login.
    const to = new URL(await startReauth(alice, REVEAL_PURPOSE))
    expect(to.origin).toBe(idp.issuer)
    expect(to.searchParams.get('prompt')).toBe('login')
    expect(to.searchParams.get('max_age')).toBe('0')
    expect(to.searchParams.get('code_challenge_method')).toBe('S256')
    expect(to.searchParams.get('state')!.length).toBeGreaterThan(20)
    expect(to.searchParams.get('nonce')!.length).toBeGreaterThan(20)
    expect(to.searchParams.get('redirect_uri')).toBe(server.url + '/admin/oidc/callback')
    expect(to.searchParams.has('purpose')).toBe(false)
    const done = await reauth(alice, REVEAL_PURPOSE)
    expect(done.status).toBe(303)
    expect(done.loginForms).toBe(1) // prompt=login: the provider asked again, although it had a session
    expect((await reveal(alice)).status()).toBe(200)
    await expectRefusedReveal(alice)

    expect((await reauth(alice, 'totp_disable')).status).toBe(303)
    expect(lastAudit('admin.reauthenticated')).toEqual({ method: 'oidc', purpose: 'totp_disable' })
    await expectRefusedReveal(alice)
    // Still there for its own purpose (alice has no TOTP: turning it off is a no-op that succeeds).
    const status = (await (await alice.context.request.get(server.url + '/admin/api/me/reauth')).json()) as { reauthenticated: { purpose: string } | null; hasPassword: boolean; sso: boolean }
    expect(status.reauthenticated?.purpose).toBe('totp_disable')
    expect(status.hasPassword).toBe(false)
    expect(status.sso).toBe(true)
    const disable = await alice.context.request.delete(server.url + '/admin/api/me/totp', { data: {}, headers: { 'x-csrf-token': alice.csrf } })
    expect(disable.status()).toBe(200)
    await alice.context.close()
  }, 60_000)

  test('TOTP turned on and off by an SSO-only admin, each after its own re-authentication', async () => {
    const alice = await ssoSignIn('alice')
    const { secret } = (await (await post(alice, '/admin/api/me/totp/secret', {})).json()) as { secret: string }
    const { base32Decode, totpCode } = await import('../src/modules/admins/totp')
    const code = () => totpCode(base32Decode(secret), Date.now())
    const put = () => alice.context.request.put(server.url + '/admin/api/me/totp', { data: { secret, code: code() }, headers: { 'x-csrf-token': alice.csrf } })
    expect((await put()).status()).toBe(401)
    expect((await reauth(alice, 'totp_enable')).status).toBe(303)
    expect((await put()).status()).toBe(200)
    expect((await reauth(alice, 'totp_disable')).status).toBe(303)
    const off = await alice.context.request.delete(server.url + '/admin/api/me/totp', { data: {}, headers: { 'x-csrf-token': alice.csrf } })
    expect(off.status()).toBe(200)
    await alice.context.close()
  }, 60_000)

  test('an SSO-only instance owner connects a repository after its own re-authentication: its commands run on this server after the session', async () => {
    const alice = await ssoSignIn('alice')
    const repo = `/admin/api/orgs/${orgId}/apps/${appId}/repo`
    const put = () => alice.context.request.put(server.url + repo, { data: { gitUrl: 'https://git.example/acme/shop.git', host: 'none', agent: 'command', agentCommand: 'true' }, headers: { 'x-csrf-token': alice.csrf } })
    const refused = await put()
    expect(refused.status()).toBe(401)
    expect(((await refused.json()) as { error: { details: Record<string, unknown> } }).error.details).toMatchObject({ reauthRequired: true, noPassword: true, purpose: 'repo_connect' })
    // A confirmation for another action connects nothing.
    expect((await reauth(alice, REVEAL_PURPOSE)).status).toBe(303)
    expect((await put()).status()).toBe(401)
    expect((await reauth(alice, 'repo_connect')).status).toBe(303)
    expect((await put()).status()).toBe(200)
    expect((await put()).status()).toBe(401) // used once
    expect((await alice.context.request.delete(server.url + repo, { headers: { 'x-csrf-token': alice.csrf } })).status()).toBe(200)
    await alice.context.close()
  }, 60_000)

  test('an SSO-only admin adds a webhook endpoint after confirming at the provider, by keyboard: the page passes axe at 1280 and 375 px; used once', async () => {
    const alice = await ssoSignIn('alice')
    const page = await alice.context.newPage()
    const hooksUrl = `/admin/o/${orgId}/webhooks`
    await page.goto(server.url + hooksUrl)
    const confirm = page.getByRole('button', { name: `Confirm with 127.0.0.1:${new URL(idp.issuer).port} to add the endpoint` })
    await confirm.waitFor()
    // No password to type: no password field, and Add endpoint waits for the confirmation.
    expect(await page.locator('#hook-password').count()).toBe(0)
    expect(await page.getByRole('button', { name: 'Add endpoint' }).isDisabled()).toBe(true)
    await page.getByText('Confirm first, then fill in the form').waitFor()
    await settle(page)
    expect(await axeViolations(page)).toEqual([])
    expect(await screenshots(page, 'sso-reauth-webhook')).toEqual([])
    // By keyboard: from the event types to the provider's button.
    await page.getByLabel('Event types').focus()
    await page.keyboard.press('Tab')
    expect(await page.evaluate(() => document.activeElement?.textContent)).toMatch(/^Confirm with .* to add the endpoint$/)
    await page.keyboard.press('Enter')
    await page.locator('input[name="login"]').waitFor()
    await idpLogin(page, 'alice')
    await page.getByText(/Confirmed with 127\.0\.0\.1/).waitFor()
    expect(new URL(page.url()).pathname).toBe(hooksUrl)
    await settle(page)
    expect(await axeViolations(page)).toEqual([])
    expect(await screenshots(page, 'sso-reauth-webhook-confirmed')).toEqual([])
    await page.getByLabel('Endpoint URL').focus()
    await page.keyboard.type('https://hooks.example.com/fixloop')
    await page.keyboard.press('Enter')
    expect(await page.getByLabel('Webhook secret').inputValue()).toMatch(/^whsec_/)
    expect(lastAudit('admin.reauthenticated')).toEqual({ method: 'oidc', purpose: 'webhook_create' })
    // Used once: the next endpoint asks again, with the provider's way in the details.
    const again = await alice.context.request.post(server.url + '/v1/webhooks', { data: { url: 'https://hooks.example.com/second' }, headers: { 'x-csrf-token': alice.csrf, 'x-fixloop-org': orgId } })
    expect(again.status()).toBe(401)
    expect(((await again.json()) as { error: { details: Record<string, unknown> } }).error.details).toMatchObject({ reauthRequired: true, noPassword: true, reauth: '/admin/api/me/reauth', purpose: 'webhook_create' })
    const list = await alice.context.request.get(server.url + '/v1/webhooks', { headers: { 'x-fixloop-org': orgId } })
    const hooks = ((await list.json()) as { data: { id: string; url: string }[] }).data
    expect(hooks.map((h) => h.url)).toEqual(['https://hooks.example.com/fixloop'])
    for (const h of hooks) expect((await alice.context.request.delete(server.url + `/v1/webhooks/${h.id}`, { headers: { 'x-csrf-token': alice.csrf, 'x-fixloop-org': orgId } })).status()).toBe(200)
    await alice.context.close()
  }, 90_000)

  test('an SSO-only admin sets SMTP, connects Slack, allows a Slack user and reaches the tracker check only after a re-authentication for that very action', async () => {
    const alice = await ssoSignIn('alice')
    const headers = { 'x-csrf-token': alice.csrf, 'x-fixloop-org': orgId }
    const send = (method: string, path: string, data: unknown) => alice.context.request.fetch(server.url + path, { method, data: data as object, headers })
    const actions: [string, string, string, unknown][] = [
      ['smtp_change', 'PUT', `/v1/apps/${appId}/smtp`, { host: 'smtp.example.com', port: 587, tls: 'starttls', user: 'mailer', password: 'smtp secret', from: 'noreply@example.com' }],
      ['slack_connect', 'POST', '/v1/chatops/slack', { botToken: 'xoxb-1234567890-abcdefghij', signingSecret: 'c'.repeat(32), channel: 'C0TRIAGE' }],
      ['slack_allow_user', 'POST', '/v1/chatops/slack/users', { teamId: 'T0TRIAGE', userId: 'U0TRIAGE' }],
      ['tracker_connect', 'PUT', `/v1/apps/${appId}/tracker`, { kind: 'github', apiUrl: 'https://127.0.0.1:9/api', project: 'acme/shop', token: 'ghp_not_checked_here' }],
    ]
    for (const [purpose, method, path, body] of actions) {
      const refused = await send(method, path, body)
      expect([purpose, refused.status()]).toEqual([purpose, 401])
      expect(((await refused.json()) as { error: { details: Record<string, unknown> } }).error.details).toMatchObject({ reauthRequired: true, noPassword: true, purpose })
      // A confirmation for another action lets nothing through.
      expect((await reauth(alice, 'webhook_create')).status).toBe(303)
      expect((await send(method, path, body)).status()).toBe(401)
      expect((await reauth(alice, purpose)).status).toBe(303)
      const done = await send(method, path, body)
      // The tracker is then contacted: a loopback API URL is refused by the address guard (400), not for want of proof.
      if (purpose === 'tracker_connect') expect([done.status(), ((await done.json()) as { error: { code: string } }).error.code]).toEqual([400, 'invalid_argument'])
      else expect([purpose, done.status()]).toEqual([purpose, method === 'POST' && purpose !== 'slack_allow_user' ? 201 : 200])
      expect(lastAudit('admin.reauthenticated')).toEqual({ method: 'oidc', purpose })
    }
    // Used once: changing the SMTP server again asks again.
    expect((await send('PUT', `/v1/apps/${appId}/smtp`, { host: 'smtp2.example.com', port: 587, tls: 'starttls', user: 'mailer', password: 'smtp secret', from: 'noreply@example.com' })).status()).toBe(401)
    expect((await alice.context.request.delete(server.url + `/v1/apps/${appId}/smtp`, { headers })).status()).toBe(200)
    const slack = (await (await alice.context.request.get(server.url + '/v1/chatops/slack', { headers })).json()) as { data: { id: string }[] }
    for (const c of slack.data) expect((await alice.context.request.delete(server.url + `/v1/chatops/slack/${c.id}`, { headers })).status()).toBe(200)
    expect((await alice.context.request.delete(server.url + '/v1/chatops/slack/users/T0TRIAGE/U0TRIAGE', { headers })).status()).toBe(200)
    await alice.context.close()
  }, 90_000)

  test('an admin with a password and SSO can use either way', async () => {
    const bob = await passwordSignIn('bob@example.com', 'bob password 1')
    expect((await reveal(bob, { password: 'bob password 1' })).status()).toBe(200)
    const none = await reveal(bob)
    expect(none.status()).toBe(401)
    expect(((await none.json()) as { error: { details: Record<string, unknown> } }).error.details).toEqual({ reauthRequired: true, reauth: '/admin/api/me/reauth', method: 'POST', purpose: REVEAL_PURPOSE })
    expect((await reauth(bob, REVEAL_PURPOSE, 'bob')).status).toBe(303)
    expect((await reveal(bob)).status()).toBe(200)
    await bob.context.close()
  }, 60_000)

  test('another person\'s login at the provider does not re-authenticate this session (another admin, or no admin): refused, audited, nothing marked', async () => {
    const alice = await ssoSignIn('alice')
    const before = auditCount('admin.reauthenticated')
    for (const login of ['bob', 'stranger']) {
      const r = await reauth(alice, REVEAL_PURPOSE, login)
      expect(r.status).toBe(403)
      expect(r.body).toContain('not the admin of this session')
      expect(r.body).toContain('You are still signed in')
      expect(lastAudit('admin.reauthentication_failed')).toEqual({ method: 'oidc', purpose: REVEAL_PURPOSE, reason: 'other_person' })
    }
    expect(auditCount('admin.reauthenticated')).toBe(before)
    await expectRefusedReveal(alice)
    // The refusal page: accessible, with the way back to the page the admin came from.
    const page = await alice.context.newPage()
    const url = new URL(await startReauth(alice, REVEAL_PURPOSE, `/admin/o/${orgId}/apps/${appId}`))
    await page.goto(url.href)
    await page.locator('input[name="login"]').waitFor()
    await idpLogin(page, 'bob')
    await page.getByRole('heading', { name: 'Confirmation failed' }).waitFor()
    await settle(page)
    expect(await axeViolations(page)).toEqual([])
    expect(await screenshots(page, 'sso-reauth-refused')).toEqual([])
    expect(await page.getByRole('link', { name: 'Back to the dashboard' }).getAttribute('href')).toBe(`/admin/o/${orgId}/apps/${appId}`)
    await alice.context.close()
  }, 60_000)

  test('an auth_time from before the start is refused: a flow that does not force a login gets the provider session\'s old sign-in time', async () => {
    // Signed in at the provider ten minutes ago: its session's login time is then.
    idp.clockOffsetMs = -10 * 60_000
    let alice: Admin
    try {
      alice = await ssoSignIn('alice')
    } finally {
      idp.clockOffsetMs = 0
    }
    // Without prompt=login and max_age=0 the provider answers from its session, without a login form.
    const silent = await reauth(alice, REVEAL_PURPOSE, 'alice', { edit: (u) => (u.searchParams.delete('prompt'), u.searchParams.delete('max_age')) })
    expect(silent.loginForms).toBe(0)
    expect(silent.status).toBe(403)
    expect(silent.body).toContain('did not ask you to sign in again')
    expect(lastAudit('admin.reauthentication_failed')).toEqual({ method: 'oidc', purpose: REVEAL_PURPOSE, reason: 'stale_auth_time' })
    await expectRefusedReveal(alice)
    // The same session with the flow as fixloop sends it: the provider asks, and the answer is fresh.
    const fresh = await reauth(alice, REVEAL_PURPOSE)
    expect(fresh.loginForms).toBe(1)
    expect(fresh.status).toBe(303)
    expect((await reveal(alice)).status()).toBe(200)
    await alice.context.close()
  }, 60_000)

  test('an ID token without auth_time is refused (signed by the provider\'s real key)', async () => {
    const alice = await ssoSignIn('alice')
    idp.tamper = (claims) => {
      const { auth_time: _dropped, ...rest } = claims
      return rest
    }
    try {
      const r = await reauth(alice, REVEAL_PURPOSE)
      expect(r.status).toBe(403)
      expect(lastAudit('admin.reauthentication_failed')).toEqual({ method: 'oidc', purpose: REVEAL_PURPOSE, reason: 'no_auth_time' })
    } finally {
      idp.tamper = undefined
    }
    await expectRefusedReveal(alice)
    await alice.context.close()
  }, 60_000)

  test('a replayed callback is refused (with its flow cookie put back), and so is a state that is not the flow\'s', async () => {
    const alice = await ssoSignIn('alice')
    const url = await startReauth(alice, REVEAL_PURPOSE)
    const flowCookie = (await alice.context.cookies()).find((c) => c.name === 'fixloop_oidc')!
    const { callback } = await followToCallback(alice.context, server.url, url, 'alice')
    expect((await alice.context.request.get(callback, { maxRedirects: 0 })).status()).toBe(303)
    expect((await reveal(alice)).status()).toBe(200)
    await alice.context.addCookies([flowCookie])
    const replay = await alice.context.request.get(callback, { maxRedirects: 0 })
    expect(replay.status()).toBe(400)
    expect(await replay.text()).toContain('already used')
    await expectRefusedReveal(alice)

    const url2 = await startReauth(alice, REVEAL_PURPOSE)
    const held = await followToCallback(alice.context, server.url, url2, 'alice')
    const forged = new URL(held.callback)
    forged.searchParams.set('state', 'a-state-of-someone-elses-flow')
    const r = await alice.context.request.get(forged.href, { maxRedirects: 0 })
    expect(r.status()).toBe(400)
    expect(lastAudit('admin.reauthentication_failed')).toEqual({ method: 'oidc', purpose: REVEAL_PURPOSE, reason: 'state_mismatch' })
    await expectRefusedReveal(alice)
    await alice.context.close()
  }, 60_000)

  test('a flow started in one session does not mark another (signed out and in again meanwhile)', async () => {
    const alice = await ssoSignIn('alice')
    const url = await startReauth(alice, REVEAL_PURPOSE)
    const { callback } = await followToCallback(alice.context, server.url, url, 'alice')
    // Signed out, and in again (a new session), before the callback arrives.
    const oldCookies = (await alice.context.cookies()).filter((c) => c.name === 'fixloop_oidc')
    expect((await alice.context.request.delete(server.url + '/admin/api/session', { headers: { 'x-csrf-token': alice.csrf } })).status()).toBe(200)
    const again = await ssoSignIn('alice')
    await again.context.addCookies(oldCookies)
    const r = await again.context.request.get(callback, { maxRedirects: 0 })
    expect(r.status()).toBe(403)
    expect(lastAudit('admin.reauthentication_failed')).toEqual({ method: 'oidc', purpose: REVEAL_PURPOSE, reason: 'session_mismatch' })
    await expectRefusedReveal(again)
    await alice.context.close()
    await again.context.close()
  }, 60_000)

  test('the way back is a path of this dashboard only: the page asked for, never another origin', async () => {
    const alice = await ssoSignIn('alice')
    const back = `/admin/o/${orgId}/apps/${appId}?tab=secret`
    const r = await reauth(alice, REVEAL_PURPOSE, 'alice', { returnTo: back })
    expect(r.status).toBe(303)
    expect(r.location).toBe(back)
    for (const evil of ['//evil.example/admin', 'https://evil.example/admin', '/admin/../evil', '/admin//evil.example', '/admin\\evil', '/adminx', '/admin#x', 'admin', '/admin/%0d%0aSet-Cookie:x', '/admin/' + 'a'.repeat(400), '/admin?x=<script>', '/admin/%2e%2e/%2e%2e/x', '/admin/.%2E/evil', '/admin/%2E']) {
      const s = await post(alice, '/admin/api/me/reauth', { purpose: REVEAL_PURPOSE, returnTo: evil })
      expect([400]).toContain(s.status())
      expect(((await s.json()) as { error: { code: string } }).error.code).toMatch(/^invalid_(argument|body)$/)
      expect(s.headers()['set-cookie'] ?? '').not.toContain('fixloop_oidc=')
    }
    await alice.context.close()
  }, 60_000)

  test('starting needs the session and its CSRF token: missing, wrong or cross-site is refused, and no flow cookie is set', async () => {
    const alice = await ssoSignIn('alice')
    const cases: Record<string, string>[] = [{}, { 'x-csrf-token': 'wrong' }, { 'x-csrf-token': alice.csrf, 'sec-fetch-site': 'cross-site' }, { 'x-csrf-token': alice.csrf, origin: 'https://evil.example' }]
    for (const headers of cases) {
      const r = await post(alice, '/admin/api/me/reauth', { purpose: REVEAL_PURPOSE }, headers)
      expect(r.status()).toBe(403)
      expect(((await r.json()) as { error: { code: string } }).error.code).toBe('csrf_failed')
      expect(r.headers()['set-cookie'] ?? '').not.toContain('fixloop_oidc=')
    }
    const anonymous = await fetch(server.url + '/admin/api/me/reauth', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ purpose: REVEAL_PURPOSE }) })
    expect(anonymous.status).toBe(401)
    expect((await fetch(server.url + '/admin/api/me/reauth')).status).toBe(401)
    await alice.context.close()
  }, 60_000)

  test('fuzz: junk bodies and queries on the start route, and junk on the callback of a re-authentication flow, are 4xx envelopes or pages, never a 5xx', async () => {
    const alice = await ssoSignIn('alice')
    let deep: unknown = 'x'
    for (let i = 0; i < 5000; i++) deep = { purpose: deep }
    const bodies: unknown[] = [
      {}, { purpose: 'admin' }, { purpose: '' }, { purpose: null }, { purpose: ['secret_reveal'] }, { purpose: 'secret_reveal\u0000' },
      { purpose: REVEAL_PURPOSE, extra: 1 }, { purpose: REVEAL_PURPOSE, returnTo: 5 }, { purpose: REVEAL_PURPOSE, returnTo: '' },
      { purpose: 'x'.repeat(1_000_000) }, { purpose: REVEAL_PURPOSE, returnTo: '/admin/\u0000' }, deep, [], 'text', 42, null,
    ]
    for (const body of bodies) {
      const r = await post(alice, '/admin/api/me/reauth?purpose=totp_enable&x=' + 'y'.repeat(2000) + '&%00=%ZZ', body)
      expect(r.status()).toBeGreaterThanOrEqual(400)
      expect(r.status()).toBeLessThan(500)
      expect(((await r.json()) as { error: { code: string } }).error.code).toBeString()
    }
    for (const raw of ['{', '{"purpose":', '\u0000', 'purpose=secret_reveal']) {
      const r = await alice.context.request.post(server.url + '/admin/api/me/reauth', { data: raw, headers: { 'x-csrf-token': alice.csrf, 'content-type': 'application/json' } })
      expect(r.status()).toBeGreaterThanOrEqual(400)
      expect(r.status()).toBeLessThan(500)
    }
    const get = await alice.context.request.get(server.url + '/admin/api/me/reauth?purpose=' + '%00'.repeat(3000) + '&a[b]=c')
    expect(get.status()).toBe(200)
    // A live re-authentication flow cookie with junk answers.
    await startReauth(alice, REVEAL_PURPOSE)
    const flowCookie = (await alice.context.cookies()).find((c) => c.name === 'fixloop_oidc')!
    for (const q of ['?code=a&state=b', '?error=access_denied&state=x', `?code=${'x'.repeat(5000)}&state=y`, '?code=%00&state=%00', '?code=a&code=b&state=c', '?iss=https://evil.example&code=a&state=b']) {
      await alice.context.addCookies([flowCookie])
      const r = await alice.context.request.get(server.url + '/admin/oidc/callback' + q, { maxRedirects: 0 })
      expect(r.status()).toBeGreaterThanOrEqual(400)
      expect(r.status()).toBeLessThan(500)
    }
    await expectRefusedReveal(alice)
    await alice.context.close()
  }, 120_000)

  describe.skipIf(!existsSync(LIBFAKETIME))('the 5-minute window (the server restarted under libfaketime)', () => {
    afterAll(async () => {
      await restart()
    })

    test('a re-authentication 4 minutes old is accepted; one 6 minutes old is refused', async () => {
      const alice = await ssoSignIn('alice')
      expect((await reauth(alice, REVEAL_PURPOSE)).status).toBe(303)
      await restart('+4m')
      expect((await reveal(alice)).status()).toBe(200)
      await restart()
      expect((await reauth(alice, REVEAL_PURPOSE)).status).toBe(303)
      await restart('+6m')
      const details = await expectRefusedReveal(alice)
      expect(details.reauthRequired).toBe(true)
      // The status route agrees: nothing usable left.
      const status = (await (await alice.context.request.get(server.url + '/admin/api/me/reauth')).json()) as { reauthenticated: unknown }
      expect(status.reauthenticated).toBeNull()
      await alice.context.close()
    }, 90_000)
  })
})

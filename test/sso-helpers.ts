/**
 * What the single sign-on suites share (test/sso.test.ts: sign-in; test/sso-reauth.test.ts: step-up
 * re-authentication): the compiled binary serving with the SSO settings of a test provider
 * (test/oidc-idp.ts), the audit rows it wrote, and a flow driven through the provider's login form.
 */
import { Database } from 'bun:sqlite'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { BrowserContext, Page } from 'playwright-core'
import { BINARY, TEST_PASSWORD_ENV } from './harness'
import { waitHealthy } from './dashboard-helpers'
import type { TestIdp } from './oidc-idp'

export interface SsoServer {
  url: string
  dataDir: string
  stop(): Promise<void>
}

/** A temporary directory, remembered in `roots` (removed by the suite's afterAll). */
export function tempDirIn(roots: string[], prefix = 'fixloop-sso-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  roots.push(dir)
  return dir
}

/** One `fixloop` command on `dataDir`. */
export function cli(dataDir: string, args: string[], env: Record<string, string> = {}) {
  return Bun.spawnSync([BINARY, ...args, '--data-dir', dataDir], { env: { PATH: process.env.PATH ?? '', ...TEST_PASSWORD_ENV, ...env } })
}

/** `fixloop serve` on `port` with `idp`'s SSO settings (and `extra`: more env, e.g. LD_PRELOAD for faketime); resolves once healthy. */
export async function serveSso(idp: TestIdp, dataDir: string, port: number, extra: Record<string, string> = {}): Promise<SsoServer> {
  const url = `http://127.0.0.1:${port}`
  const secretFile = join(dataDir, '..', 'oidc-secret')
  writeFileSync(secretFile, idp.clientSecret + '\n')
  const proc = Bun.spawn([BINARY, 'serve', '--host', '127.0.0.1', '--port', String(port), '--data-dir', dataDir], {
    env: {
      PATH: process.env.PATH ?? '',
      FIXLOOP_LOG_LEVEL: 'silent',
      ...TEST_PASSWORD_ENV,
      FIXLOOP_PUBLIC_URL: url,
      FIXLOOP_OIDC_ISSUER: idp.issuer,
      FIXLOOP_OIDC_CLIENT_ID: idp.clientId,
      FIXLOOP_OIDC_CLIENT_SECRET_FILE: secretFile,
      ...extra,
    },
    stdout: 'ignore',
    stderr: 'inherit',
  })
  await waitHealthy(url, proc)
  return {
    url,
    dataDir,
    async stop() {
      if (proc.exitCode === null) proc.kill('SIGTERM')
      await proc.exited
    },
  }
}

/** The audit rows of `action`, oldest first. */
export function auditRows(dataDir: string, action: string): { actor: string; data: string }[] {
  const db = new Database(join(dataDir, 'fixloop.db'), { readonly: true })
  try {
    return db.query('SELECT actor, data FROM audit_log WHERE action = ? ORDER BY id').all(action) as { actor: string; data: string }[]
  } finally {
    db.close()
  }
}

/** The session cookies the browser holds for fixloop (none after a refused sign-in). */
export async function sessionCookies(context: BrowserContext): Promise<string[]> {
  return (await context.cookies()).filter((c) => c.name.endsWith('fixloop_admin')).map((c) => c.name)
}

export async function signedIn(context: BrowserContext, base: string): Promise<boolean> {
  const r = await context.request.get(base + '/admin/api/session')
  return r.status() === 200
}

/** Signs in at the provider's login form as `login` (it takes any password). */
export async function idpLogin(page: Page, login: string): Promise<void> {
  await page.locator('input[name="login"]').fill(login)
  await page.locator('input[name="password"]').fill('any password')
  await page.locator('button[type="submit"]').click()
}

/**
 * Follows a flow from `url` (fixloop's /admin/oidc/start, or the provider URL a re-authentication
 * start answered) through the provider, signing in at its login form as `login` when it shows one,
 * with the context's own request client (same cookie jar as its pages: Playwright does not route the
 * follow-ups of a redirect, so a page could not be stopped before the callback). The provider's
 * redirect to the callback is not followed: its URL is returned, the flow cookie in the browser.
 * `loginForms` counts the login forms the provider showed. No browser is needed: `{ request }` of
 * playwright's `request.newContext()` does as well.
 */
export async function followToCallback(context: Pick<BrowserContext, 'request'>, base: string, url: string, login: string): Promise<{ callback: string; loginForms: number }> {
  let response = await context.request.get(url, { maxRedirects: 0 })
  let loginForms = 0
  for (let hop = 0; hop < 10; hop++) {
    const location = response.headers()['location']
    if (!location) {
      // A form of the provider: its login form (filled in), or a page that posts itself (the sign-out of
      // another account's session before a login as someone else): posted as the page would.
      const html = await response.text()
      const form = /<form[^>]*action="([^"]+)"/.exec(html)
      if (!form) throw new Error(`no redirect and no form at ${url}: ${response.status()}`)
      const fields: Record<string, string> = {}
      for (const m of html.matchAll(/<input[^>]*type="hidden"[^>]*>/g)) {
        const name = /name="([^"]*)"/.exec(m[0])
        const value = /value="([^"]*)"/.exec(m[0])
        if (name) fields[name[1]] = (value?.[1] ?? '').replaceAll('&amp;', '&')
      }
      if (/name="login"/.test(html)) {
        loginForms++
        Object.assign(fields, { prompt: 'login', login, password: 'any password' })
      }
      url = new URL(form[1].replaceAll('&amp;', '&'), url).href
      response = await context.request.post(url, { form: fields, maxRedirects: 0 })
      continue
    }
    url = new URL(location, url).href
    if (url.startsWith(base + '/admin/oidc/callback')) return { callback: url, loginForms }
    response = await context.request.get(url, { maxRedirects: 0 })
  }
  throw new Error('the provider never redirected to the callback')
}

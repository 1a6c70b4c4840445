/**
 * Admins without default credentials, through the compiled binary: `admin create` / `reset-password`
 * (passwords from files), FIXLOOP_ADMIN_EMAIL + FIXLOOP_ADMIN_PASSWORD_FILE applied only while no admin
 * exists, and the setup link: printed only when there is no admin, single use, expiring after 30 minutes.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { call, eventually, runBinary, tempDir } from './harness'
import { expectPageClean, settle, spawnWithStdout, writePasswordFile } from './dashboard-helpers'
import { BROWSER_SKIP, launchBrowser } from './browser'
import { createContext } from '../src/runtime/open'
import { loadConfig } from '../src/config'
import { ManualClock } from '../src/core/clock'
import { createAdminsService } from '../src/modules/admins/service'
import { passwordHasher } from '../src/modules/admins/password-hash'
import { sqliteOf } from './sqlite-of'

const dirs: string[] = []
const newDir = () => {
  const d = tempDir('fixloop-admin-cli-')
  dirs.push(d)
  return d
}
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

const signIn = (url: string, email: string, password: string) => call(url, 'POST', '/admin/api/session', { body: { email, password } })

describe('fixloop admin', () => {
  test('create prints {"id","email"}; the admin signs in; a second create with that email fails', async () => {
    const dir = newDir()
    const pw = writePasswordFile(dir, 'pw', 'first password 1')
    const r = await runBinary(['admin', 'create', '--email', 'Ops@Example.com', '--password-file', pw, '--json', '--data-dir', dir])
    expect(r.code).toBe(0)
    const out = JSON.parse(r.stdout)
    expect(Object.keys(out).sort()).toEqual(['email', 'id'])
    expect(out).toMatchObject({ email: 'ops@example.com' })
    expect(out.id).toMatch(/^[0-9a-f]{24}$/)
    const again = await runBinary(['admin', 'create', '--email', 'ops@example.com', '--password-file', pw, '--json', '--data-dir', dir])
    expect(again.code).not.toBe(0)
    expect(again.stdout).toBe('')
    expect(again.stderr).toContain('already exists')

    const server = await spawnWithStdout(dir)
    try {
      expect((await signIn(server.url, 'ops@example.com', 'first password 1')).status).toBe(200)
      // An admin exists: no setup link is printed.
      await Bun.sleep(200)
      expect(server.stdout()).not.toContain('/admin/setup')
      // reset-password: the new one works, the old one does not, and live sessions end.
      const session = (await signIn(server.url, 'ops@example.com', 'first password 1')).headers.get('set-cookie')!.split(';')[0]
      const pw2 = writePasswordFile(dir, 'pw2', 'second password 2')
      const reset = await runBinary(['admin', 'reset-password', '--email', 'ops@example.com', '--password-file', pw2, '--data-dir', dir])
      expect(reset.code).toBe(0)
      expect((await signIn(server.url, 'ops@example.com', 'first password 1')).status).toBe(401)
      expect((await signIn(server.url, 'ops@example.com', 'second password 2')).status).toBe(200)
      expect((await call(server.url, 'GET', '/admin/api/session', { headers: { cookie: session } })).status).toBe(401)
    } finally {
      await server.stop()
    }
  })

  test.each([
    [['admin', 'create', '--email', 'a@example.com'], 'missing --password-file'],
    [['admin', 'create', '--email', 'a@example.com', '--password-file', '/nonexistent/pw'], 'cannot read'],
    [['admin', 'create', '--password-file', '{pw}'], 'missing --email'],
    [['admin', 'create', '--email', 'a@example.com', '--password-file', '{short}'], 'password'],
    [['admin', 'create', '--email', 'a@example.com', '--password-file', '{pw}', '--org', '000000000000000000000000'], 'No Org'],
    [['admin', 'reset-password', '--email', 'ghost@example.com', '--password-file', '{pw}'], 'No admin'],
    [['admin', 'frobnicate'], 'unknown command'],
  ])('%j fails with a clear message', async (args, message) => {
    const dir = newDir()
    const files: Record<string, string> = { '{pw}': writePasswordFile(dir, 'pw', 'long enough password'), '{short}': writePasswordFile(dir, 'short', 'short') }
    const r = await runBinary([...args.map((a) => files[a] ?? a), '--data-dir', dir])
    expect(r.code).not.toBe(0)
    expect(r.stderr).toContain(message)
    expect(r.stdout).toBe('')
  })

  test('FIXLOOP_ADMIN_EMAIL + FIXLOOP_ADMIN_PASSWORD_FILE create the first admin, only while none exists', async () => {
    const dir = newDir()
    const pw = writePasswordFile(dir, 'pw', 'bootstrap password')
    const first = await spawnWithStdout(dir, { FIXLOOP_ADMIN_EMAIL: 'boot@example.com', FIXLOOP_ADMIN_PASSWORD_FILE: pw })
    try {
      expect((await signIn(first.url, 'boot@example.com', 'bootstrap password')).status).toBe(200)
      expect(first.stdout()).not.toContain('/admin/setup')
    } finally {
      await first.stop()
    }
    const pw2 = writePasswordFile(dir, 'pw2', 'another password here')
    const second = await spawnWithStdout(dir, { FIXLOOP_ADMIN_EMAIL: 'late@example.com', FIXLOOP_ADMIN_PASSWORD_FILE: pw2 })
    try {
      expect((await signIn(second.url, 'late@example.com', 'another password here')).status).toBe(401)
    } finally {
      await second.stop()
    }
  })

  test('a second start without an admin prints a new link; the old one no longer works', async () => {
    const dir = newDir()
    const a = await spawnWithStdout(dir)
    const first = await eventually(() => /#token=(\S+)/.exec(a.stdout())?.[1])
    await a.stop()
    const b = await spawnWithStdout(dir)
    try {
      const second = await eventually(() => /#token=(\S+)/.exec(b.stdout())?.[1])
      expect(second).not.toBe(first)
      const old = await call(b.url, 'POST', '/admin/api/setup', { body: { token: first, email: 'a@example.com', password: 'a long password' } })
      expect(old.body.error.code).toBe('invalid_setup_token')
      const ok = await call(b.url, 'POST', '/admin/api/setup', { body: { token: second, email: 'a@example.com', password: 'a long password' } })
      expect(ok.status).toBe(200)
      expect(ok.headers.get('set-cookie')).toContain('HttpOnly')
    } finally {
      await b.stop()
    }
  })

  test.skipIf(!!BROWSER_SKIP)('a setup link opened after an admin was made by the CLI says so at once, with the way to sign in, instead of a form refused on submit', async () => {
    const dir = newDir()
    const server = await spawnWithStdout(dir)
    const browser = await launchBrowser()
    try {
      const link = await eventually(() => /(http\S+\/admin\/setup#token=\S+)/.exec(server.stdout())?.[1])
      const methods = async () => (await call(server.url, 'GET', '/admin/api/sign-in-methods')).body
      expect(await methods()).toEqual({ password: true, sso: false, setupOpen: true })
      const page = await browser.newPage()
      await page.goto(link)
      await settle(page)
      expect(await page.getByRole('button', { name: 'Create admin' }).count()).toBe(1)

      const pw = writePasswordFile(dir, 'pw', 'operator password 1')
      expect((await runBinary(['admin', 'create', '--email', 'ops@example.com', '--password-file', pw, '--data-dir', dir])).code).toBe(0)
      expect(await methods()).toEqual({ password: true, sso: false, setupOpen: false })
      // Opened again (a reload: the same URL with its fragment would not load the page anew).
      await page.reload()
      await settle(page)
      expect(await page.getByRole('status').textContent()).toBe('This fixloop already has an admin, so its setup link no longer creates one.')
      expect(await page.getByRole('button', { name: 'Create admin' }).count()).toBe(0)
      expect(await page.getByRole('link', { name: 'Sign in' }).getAttribute('href')).toBe('/admin')
      await expectPageClean(page, 'setup-used')
      // The keyboard's first stop past the skip link is the way to sign in.
      await page.keyboard.press('Tab')
      const focused = async () => page.evaluate(() => document.activeElement?.textContent ?? '')
      if ((await focused()).toLowerCase().includes('skip')) await page.keyboard.press('Tab')
      expect(await focused()).toBe('Sign in')
    } finally {
      await browser.close()
      await server.stop()
    }
  }, 60_000)

  test('CLI changes to Orgs, Apps and keys are in the audit log (actor "cli", no secrets)', async () => {
    const dir = newDir()
    const org = JSON.parse((await runBinary(['org', 'create', '--name', 'Audited', '--json', '--data-dir', dir])).stdout)
    const app = JSON.parse((await runBinary(['app', 'create', '--org', org.id, '--name', 'Web', '--json', '--data-dir', dir])).stdout)
    const rotated = JSON.parse((await runBinary(['app', 'rotate-secret', app.id, '--json', '--data-dir', dir])).stdout)
    const key = JSON.parse((await runBinary(['key', 'create', '--org', org.id, '--name', 'ci', '--json', '--data-dir', dir])).stdout)
    expect((await runBinary(['key', 'revoke', key.id, '--data-dir', dir])).code).toBe(0)
    const pw = writePasswordFile(dir, 'pw', 'audit password 1')
    expect((await runBinary(['admin', 'create', '--email', 'a@example.com', '--password-file', pw, '--data-dir', dir])).code).toBe(0)
    const server = await spawnWithStdout(dir)
    try {
      const login = await signIn(server.url, 'a@example.com', 'audit password 1')
      const cookie = login.headers.get('set-cookie')!.split(';')[0]
      const audit = await call(server.url, 'GET', `/admin/api/orgs/${org.id}/audit`, { headers: { cookie } })
      // Ids order by second, then by process: separate CLI runs within one second may list in any order.
      const actions = audit.body.data.map((e: { actor: string; action: string }) => `${e.actor} ${e.action}`).sort()
      expect(actions).toEqual(['cli app.created', 'cli app.secret_rotated', 'cli key.created', 'cli key.revoked', 'cli org.created'])
      expect(audit.text).not.toContain(rotated.signingSecret)
      expect(audit.text).not.toContain(app.signingSecret)
      expect(audit.text).not.toContain(key.key)
    } finally {
      await server.stop()
    }
  })

  test('a setup token expires after 30 minutes', async () => {
    const dir = newDir()
    const clock = new ManualClock(Date.UTC(2026, 0, 1))
    const ctx = createContext(loadConfig({ dataDir: dir }, {}), clock)
    try {
      const admins = createAdminsService(ctx.store.admins, ctx.box, clock, passwordHasher(ctx.config.passwordHashMib))
      const { token } = await admins.issueSetupToken()
      clock.advance(30 * 60_000)
      await expect(admins.redeemSetupToken(token, 'a@example.com', 'a long password')).rejects.toMatchObject({ code: 'invalid_setup_token' })
      const fresh = (await admins.issueSetupToken()).token
      clock.advance(29 * 60_000)
      await expect(admins.redeemSetupToken(fresh, 'a@example.com', 'a long password')).resolves.toMatchObject({ email: 'a@example.com' })
      expect(await admins.count()).toBe(1)
    } finally {
      sqliteOf(ctx).close()
    }
  })
})

/**
 * The App page's "Mail to reporters" section in Chromium against the compiled binary (issue 36.11,
 * src/admin-ui/app/smtp.js): an Org owner sets the App's SMTP server by keyboard, sends a test mail that a
 * real SMTP server (test/smtp-sink.ts) receives, changes the host (the password is asked again and sent),
 * and removes the settings; the confirm page a reporter opens from a confirmation mail. Every page axe-core
 * clean and photographed at 1280 and 375 px (FIXLOOP_SCREENSHOT_DIR, default test-output/).
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import type { Browser, Page } from 'playwright-core'
import { BROWSER_SKIP, signInByKeyboard, launchBrowserEarly } from './browser'
import { call, eventually, runBinary, tempDir } from './harness'
import { cliTenant, ensureBinary } from './helpers-lifecycle'
import { expectPageClean, spawnWithStdout, writePasswordFile, type SpawnedServer } from './dashboard-helpers'
import { qpDecode, startSmtpSink, type SmtpSink } from './smtp-sink'

const EMAIL = 'mail-owner@example.com'
const PASSWORD = 'mail owner password 42'

let dir: string
let server: SpawnedServer
let browser: Browser
let early: ReturnType<typeof launchBrowserEarly> | undefined
let page: Page
let sink: SmtpSink
let tenant: Awaited<ReturnType<typeof cliTenant>>

beforeAll(async () => {
  if (BROWSER_SKIP) return
  early = launchBrowserEarly()
  ensureBinary()
  dir = tempDir('fixloop-dash-smtp-')
  sink = await startSmtpSink(0, { user: 'shop', pass: 'smtp-secret-1' })
  tenant = await cliTenant(dir)
  expect((await runBinary(['admin', 'create', '--email', EMAIL, '--password-file', writePasswordFile(dir, 'pw', PASSWORD), '--data-dir', dir])).code).toBe(0)
  // The sink listens on loopback: the operator knob for a local relay lets it through.
  server = await spawnWithStdout(dir, { FIXLOOP_RATE_LIMIT_MULTIPLIER: '100', FIXLOOP_SMTP_ALLOW_PRIVATE: '1' })
  browser = await early.ready
  page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage()
  await signInByKeyboard(page, server.url, EMAIL, PASSWORD)
}, 60_000)

afterAll(async () => {
  await early?.close()
  await server?.stop()
  await sink?.stop()
  if (dir) rmSync(dir, { recursive: true, force: true })
})

/** In the mail section: the App page's repository form has a "Password" field of its own (repo_connect). */
async function typeInto(p: Page, label: string, text: string) {
  await p.getByRole('region', { name: 'Mail to reporters' }).getByLabel(label, { exact: true }).focus()
  await p.keyboard.press('ControlOrMeta+a')
  await p.keyboard.type(text)
}

test.skipIf(!!BROWSER_SKIP)('set SMTP by keyboard, send a test mail, change the host (the password is sent again), remove', async () => {
  await page.goto(`${server.url}/admin/o/${tenant.orgId}/apps/${tenant.appId}`)
  const section = page.getByRole('region', { name: 'Mail to reporters' })
  await section.getByRole('button', { name: 'Set mail settings' }).waitFor()
  await expectPageClean(page, 'app-smtp-unset')
  await typeInto(page, 'SMTP host', '127.0.0.1')
  await typeInto(page, 'Port', String(sink.port))
  await page.getByLabel('Encryption', { exact: true }).focus()
  await page.keyboard.type('None')
  await typeInto(page, 'From', 'Shop <noreply@shop.example>')
  await typeInto(page, 'User', 'shop')
  await typeInto(page, 'Password', 'smtp-secret-1')
  // Reporters' mail goes through this server after the session too: the admin's own password is asked
  // again, in a field of its own next to the SMTP server's (docs/security.md "Which actions ask").
  await section.getByText('Reporters’ mail goes through this server, also after you sign out').waitFor()
  await page.keyboard.press('Tab')
  expect(await page.evaluate(() => document.activeElement?.id)).toBe('m-confirm-password')
  await expectPageClean(page, 'app-smtp-confirm')
  await page.keyboard.type(PASSWORD)
  await page.keyboard.press('Enter')
  await section.getByText('Mail settings saved.').waitFor()
  const stored = await call(server.url, 'GET', `/v1/apps/${tenant.appId}/smtp`, { auth: tenant.key })
  expect(stored.body).toMatchObject({ host: '127.0.0.1', port: sink.port, tls: 'none', user: 'shop', passwordSet: true, from: 'Shop <noreply@shop.example>' })
  // The password is never shown again.
  expect(await section.getByLabel('Password', { exact: true }).inputValue()).toBe('')
  expect(await page.content()).not.toContain('smtp-secret-1')
  // Saved: nothing to confirm until the destination changes; the From address alone is none.
  expect(await section.getByLabel('Your fixloop password', { exact: true }).count()).toBe(0)
  await typeInto(page, 'From', 'Shop Support <noreply@shop.example>')
  expect(await section.getByLabel('Your fixloop password', { exact: true }).count()).toBe(0)
  await page.keyboard.press('Enter')
  await section.getByText('Saved.').waitFor()
  expect((await call(server.url, 'GET', `/v1/apps/${tenant.appId}/smtp`, { auth: tenant.key })).body.from).toBe('Shop Support <noreply@shop.example>')

  // The test mail, through the same route as the CLI's smtp-test.
  const before = sink.mails.length
  await typeInto(page, 'Send a test mail to', 'ops@shop.example')
  await page.keyboard.press('Enter')
  await section.getByText('Test mail sent to').waitFor()
  expect(sink.mails.slice(before).map((m) => [m.to[0], m.user])).toEqual([['ops@shop.example', 'shop']])
  await expectPageClean(page, 'app-smtp-set')

  // Another host: the form asks for the password again and sends it with the change.
  await typeInto(page, 'SMTP host', 'localhost')
  const password = section.getByLabel('Password', { exact: true })
  expect(await password.getAttribute('required')).not.toBeNull()
  await section.getByText('The server changed: type the password again').waitFor()
  await section.getByLabel('SMTP host', { exact: true }).press('Enter')
  expect(await password.evaluate((el) => (el as HTMLInputElement).validity.valueMissing)).toBe(true) // nothing sent without it
  const put = page.waitForRequest((r) => r.method() === 'PUT' && r.url().endsWith(`/v1/apps/${tenant.appId}/smtp`))
  await typeInto(page, 'Password', 'smtp-secret-1')
  await typeInto(page, 'Your fixloop password', PASSWORD)
  await page.keyboard.press('Enter')
  expect(JSON.parse((await put).postData()!)).toMatchObject({ host: 'localhost', password: 'smtp-secret-1' })
  await section.getByText('Saved.').waitFor()
  expect((await call(server.url, 'GET', `/v1/apps/${tenant.appId}/smtp`, { auth: tenant.key })).body.host).toBe('localhost')

  // Back to the sink's address for the confirm page below, keeping the password (nothing about the server changed but the host).
  await typeInto(page, 'SMTP host', '127.0.0.1')
  await typeInto(page, 'Password', 'smtp-secret-1')
  await typeInto(page, 'Your fixloop password', PASSWORD)
  await page.keyboard.press('Enter')
  await eventually(async () => (await call(server.url, 'GET', `/v1/apps/${tenant.appId}/smtp`, { auth: tenant.key })).body.host === '127.0.0.1')

  // A reporter's confirmation mail and the page its link opens.
  const mark = sink.mails.length
  const r = await call(server.url, 'POST', '/v1/feedback', { auth: tenant.pub, body: { text: 'Coupon is refused', notifyEmail: true, identity: { email: 'reporter@example.com' } } })
  expect(r.status).toBe(201)
  const mail = await eventually(() => sink.mails.slice(mark).find((m) => m.to[0] === 'reporter@example.com'), 20_000)
  const link = /http:\/\/\S+\/v1\/mail\/confirm\?token=[0-9a-f.]+/.exec(qpDecode(mail.body))![0]
  const reporter = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage()
  await reporter.goto(link.replace(/^http:\/\/[^/]+/, server.url))
  await reporter.getByRole('button', { name: 'Yes, confirm my address' }).waitFor()
  await expectPageClean(reporter, 'mail-confirm')
  await reporter.getByRole('button', { name: 'Yes, confirm my address' }).press('Enter')
  await reporter.getByRole('heading', { name: 'Address confirmed' }).waitFor()
  await expectPageClean(reporter, 'mail-confirmed')
  await reporter.context().close()

  // Remove, through a confirming dialog.
  await section.getByRole('button', { name: 'Remove mail settings' }).press('Enter')
  const dialog = page.getByRole('dialog', { name: 'Remove the mail settings?' })
  await dialog.getByRole('button', { name: 'Remove', exact: true }).press('Enter')
  await section.getByText('Mail settings removed.').waitFor()
  expect((await call(server.url, 'GET', `/v1/apps/${tenant.appId}/smtp`, { auth: tenant.key })).status).toBe(404)
}, 120_000)

/**
 * "Who was notified" on the dashboard's report page, in Chromium against the compiled binary: a resolved
 * report whose reporter opted in shows the masked address, the mail's state and time; a report without
 * opt-in shows no such section. axe-core clean, photographed at 1280 and 375 px (FIXLOOP_SCREENSHOT_DIR,
 * default test-output/).
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import type { Browser, Page } from 'playwright-core'
import { launchBrowserEarly } from './browser'
import { call, eventually, runBinary, tempDir } from './harness'
import { cliJson, cliTenant, ensureBinary } from './helpers-lifecycle'
import { expectPageClean, spawnWithStdout, submitReport, writePasswordFile, type SpawnedServer } from './dashboard-helpers'
import { qpDecode, startSmtpSink, type SmtpSink } from './smtp-sink'
import { loadConfig } from '../src/config'
import { closeContext, openContext } from '../src/runtime/open'
import { dbRows, dbRun } from './sqlite-of'

const EMAIL = 'notified@example.com'
const PASSWORD = 'notified password 42'

let dir: string
let server: SpawnedServer
let browser: Browser
let early: ReturnType<typeof launchBrowserEarly> | undefined
let page: Page
let sink: SmtpSink
let tenant: Awaited<ReturnType<typeof cliTenant>>

async function resolve(id: string) {
  const ctx = await openContext(loadConfig({ dataDir: dir }))
  try {
    await eventually(async () => (await dbRows<{ redactions: string | null }>(ctx, 'SELECT redactions FROM feedback WHERE id = ?', [id]))[0].redactions !== null, 10_000)
    await dbRun(ctx, "UPDATE feedback SET status = 'pr_opened', version = version + 1 WHERE id = ?", [id])
    await ctx.store.lifecycle.move(id, 'resolved', { by: 'system', from: 'pr_opened' })
  } finally {
    await closeContext(ctx)
  }
}

beforeAll(async () => {
  early = launchBrowserEarly()
  ensureBinary()
  dir = tempDir('fixloop-dash-notified-')
  sink = await startSmtpSink()
  tenant = await cliTenant(dir)
  await cliJson(dir, ['app', 'smtp', tenant.appId, '--host', '127.0.0.1', '--port', String(sink.port), '--tls', 'none', '--from', 'noreply@crash.example'], { FIXLOOP_SMTP_ALLOW_PRIVATE: '1' }) // a local relay: the test's SMTP server on loopback
  expect((await runBinary(['admin', 'create', '--email', EMAIL, '--password-file', writePasswordFile(dir, 'pw', PASSWORD), '--data-dir', dir])).code).toBe(0)
  server = await spawnWithStdout(dir, { FIXLOOP_RATE_LIMIT_MULTIPLIER: '100', FIXLOOP_SMTP_ALLOW_PRIVATE: '1' })
  browser = await early.ready
  page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage()
  await page.goto(server.url + '/admin')
  await page.getByLabel('Email').fill(EMAIL)
  await page.getByLabel('Password').fill(PASSWORD)
  await page.keyboard.press('Enter')
  await page.getByRole('button', { name: /Sign out/ }).waitFor()
}, 60_000)

afterAll(async () => {
  await early?.close()
  await server?.stop()
  await sink?.stop()
  rmSync(dir, { recursive: true, force: true })
})

test('the report page says who was notified (masked), how and when; nothing for a report without opt-in', async () => {
  const told = await submitReport(server.url, tenant.pub, 'The receipt email never arrives', { notifyEmail: true, identity: { email: 'jane.doe@example.com' } })
  const silent = await submitReport(server.url, tenant.pub, 'The receipt email is late')
  // Public mode: Jane confirms her address first (the confirmation mail's link, then its button).
  const confirmation = await eventually(() => sink.mails.find((m) => m.to[0] === 'jane.doe@example.com'), 20_000)
  const link = /http:\/\/\S+\/v1\/mail\/confirm\?token=[0-9a-f.]+/.exec(qpDecode(confirmation.body))![0]
  expect((await fetch(link.replace(/^http:\/\/[^/]+/, server.url), { method: 'POST' })).status).toBe(200)
  await resolve(told)
  await eventually(async () => (await call(server.url, 'GET', `/v1/feedback/${told}/notification`, { auth: tenant.key })).body.state === 'sent', 20_000)
  expect(sink.mails.map((m) => m.to[0])).toEqual(['jane.doe@example.com', 'jane.doe@example.com'])

  await page.goto(`${server.url}/admin/o/${tenant.orgId}/r/${told}`)
  const box = page.getByRole('region', { name: 'Who was notified' })
  await box.waitFor()
  const text = (await box.textContent()) ?? ''
  expect(text).toContain('j***@example.com')
  expect(text).toContain('Sent')
  expect(text).not.toContain('jane.doe')
  await expectPageClean(page, 'report-notified')

  await page.goto(`${server.url}/admin/o/${tenant.orgId}/r/${silent}`)
  await page.getByRole('heading', { name: 'History' }).waitFor()
  await page.waitForTimeout(300)
  expect(await page.getByRole('region', { name: 'Who was notified' }).count()).toBe(0)
}, 90_000)

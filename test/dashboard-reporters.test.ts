/**
 * A reporter's data on the dashboard (issue 40.3), in Chromium against the compiled binary: an Org owner
 * finds a reporter's reports by email, exports them (a JSON download) and erases them; afterwards the
 * reports are 404 and another reporter's stays. A member sees no such page and the API refuses them 403.
 * axe-core clean, photographed at 1280 and 375 px (FIXLOOP_SCREENSHOT_DIR, default test-output/).
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import type { Browser, Page } from 'playwright-core'
import { launchBrowserEarly } from './browser'
import { call, runBinary, tempDir } from './harness'
import { cliTenant, ensureBinary } from './helpers-lifecycle'
import { expectPageClean, spawnWithStdout, submitReport, writePasswordFile, type SpawnedServer } from './dashboard-helpers'

const OWNER = 'owner@example.com'
const MEMBER = 'member@example.com'
const PASSWORD = 'reporters password 42'

let dir: string
let server: SpawnedServer
let browser: Browser
let early: ReturnType<typeof launchBrowserEarly> | undefined
let tenant: Awaited<ReturnType<typeof cliTenant>>

async function signIn(email: string): Promise<Page> {
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 800 }, acceptDownloads: true })).newPage()
  await page.goto(server.url + '/admin')
  await page.getByLabel('Email').fill(email)
  await page.getByLabel('Password').fill(PASSWORD)
  await page.keyboard.press('Enter')
  await page.getByRole('button', { name: /Sign out/ }).waitFor()
  return page
}

beforeAll(async () => {
  early = launchBrowserEarly()
  ensureBinary()
  dir = tempDir('fixloop-dash-reporters-')
  tenant = await cliTenant(dir)
  const pw = writePasswordFile(dir, 'pw', PASSWORD)
  expect((await runBinary(['admin', 'create', '--email', OWNER, '--password-file', pw, '--org', tenant.orgId, '--data-dir', dir])).code).toBe(0)
  expect((await runBinary(['admin', 'create', '--email', MEMBER, '--password-file', pw, '--org', tenant.orgId, '--role', 'member', '--data-dir', dir])).code).toBe(0)
  server = await spawnWithStdout(dir, { FIXLOOP_RATE_LIMIT_MULTIPLIER: '100' })
  browser = await early.ready
}, 60_000)

afterAll(async () => {
  await early?.close()
  await server?.stop()
  rmSync(dir, { recursive: true, force: true })
})

test('an Org owner exports and erases a reporter; a member cannot', async () => {
  const mine = [
    await submitReport(server.url, tenant.pub, 'The cart total is wrong after a coupon', { identity: { email: 'dsr@example.com', name: 'Dee Essar' } }),
    await submitReport(server.url, tenant.pub, 'The coupon field rejects valid codes', { identity: { email: 'DSR@example.com' } }),
  ]
  const other = await submitReport(server.url, tenant.pub, 'The logo is blurry', { identity: { email: 'someone@example.com' } })

  const page = await signIn(OWNER)
  await page.getByRole('link', { name: 'Reporters' }).click()
  await page.getByRole('heading', { name: /A reporter's data/ }).waitFor()
  await page.getByLabel('Reporter').fill('dsr@example.com')
  await page.getByRole('button', { name: 'Export reports' }).click()
  await page.getByRole('status').getByText('2 reports found').waitFor()
  const download = page.waitForEvent('download')
  await page.getByRole('link', { name: 'Download the export' }).click()
  const file = await (await download).path()
  const exported = JSON.parse(await Bun.file(file!).text())
  expect(exported.data.map((i: any) => i.id).sort()).toEqual([...mine].sort())
  await expectPageClean(page, 'reporters-export')

  page.once('dialog', (d) => void d.accept())
  await page.getByRole('button', { name: 'Erase reports' }).click()
  await page.getByRole('status').getByText('Erased 2 reports.').waitFor()
  for (const id of mine) expect((await call(server.url, 'GET', `/v1/feedback/${id}`, { auth: tenant.key })).status).toBe(404)
  expect((await call(server.url, 'GET', `/v1/feedback/${other}`, { auth: tenant.key })).status).toBe(200)

  const member = await signIn(MEMBER)
  expect(await member.getByRole('link', { name: 'Reporters' }).count()).toBe(0)
  const refused = await member.evaluate(async (orgId) => (await fetch('/v1/reporters/feedback?email=someone%40example.com', { headers: { 'x-fixloop-org': orgId } })).status, tenant.orgId)
  expect(refused).toBe(403)
}, 90_000)

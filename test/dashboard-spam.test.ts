/**
 * The abuse defence in the dashboard, in Chromium against the compiled binary, keyboard only: the App
 * page's proof-of-work setting (recommended while public submissions are on and it is off), the inbox's
 * Spam folder (count, score and reasons on each row, `s` says "not spam" there and "spam" elsewhere) and
 * the report page's classification with "Not spam" / "Mark as spam". Every page passes axe-core and is
 * photographed at 1280 and 375 px (FIXLOOP_SCREENSHOT_DIR, default test-output/).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import type { Browser, Page } from 'playwright-core'
import { signInByKeyboard, launchBrowserEarly } from './browser'
import { call, eventually, runBinary, tempDir } from './harness'
import { cliTenant, ensureBinary } from './helpers-lifecycle'
import { expectPageClean, settle, spawnWithStdout, submitReport, writePasswordFile, type SpawnedServer } from './dashboard-helpers'

const EMAIL = 'spam-triage@example.com'
const PASSWORD = 'spam triage password 42'

let dir: string
let server: SpawnedServer
let browser: Browser
let early: ReturnType<typeof launchBrowserEarly> | undefined
let page: Page
let tenant: Awaited<ReturnType<typeof cliTenant>>
const real: string[] = []
const bots: string[] = []

const item = async (id: string) => (await call(server.url, 'GET', `/v1/feedback/${id}`, { auth: tenant.key })).body
/** Processed, or filed as spam (spam waits in `received` with no processing until "not spam"). */
const settled = async (id: string) =>
  eventually(async () => {
    const it = await item(id)
    return !!it.spam || !['received', 'sanitizing'].includes(it.status)
  }, 10_000)

beforeAll(async () => {
  early = launchBrowserEarly()
  ensureBinary()
  dir = tempDir('fixloop-dash-spam-')
  tenant = await cliTenant(dir)
  const admin = await runBinary(['admin', 'create', '--email', EMAIL, '--password-file', writePasswordFile(dir, 'pw', PASSWORD), '--data-dir', dir])
  expect(admin.code).toBe(0)
  server = await spawnWithStdout(dir, { FIXLOOP_RATE_LIMIT_MULTIPLIER: '100' })
  for (const text of ['The invoice PDF downloads as an empty file.', 'The date picker on the booking form skips February.']) real.push(await submitReport(server.url, tenant.pub, text, { clientSignals: { formMs: 42_000 } }))
  // A form-filling bot: the honeypot is filled and the form went out in a third of a second.
  for (const n of [1, 2, 3])
    bots.push(await submitReport(server.url, tenant.pub, `Cheap replica watches ${n} https://best-deal-shop.top/?ref=${n} https://best-deal-shop.top/buy`, { clientSignals: { honeypot: 'https://best-deal-shop.top', formMs: 300 } }))
  for (const id of [...real, ...bots]) await settled(id)
  for (const id of bots) expect((await item(id)).spam?.reasons).toContain('honeypot')
  for (const id of real) expect((await item(id)).spam).toBeNull()
  browser = await early.ready
  page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage()
  page.on('pageerror', (e) => console.error('page error:', e.message))
  await signInByKeyboard(page, server.url, EMAIL, PASSWORD)
})

afterAll(async () => {
  await early?.close()
  await server?.stop()
  rmSync(dir, { recursive: true, force: true })
})

/** One setting of the App as the dashboard's own API reads it (the signed-in session). */
async function appSetting(name: string): Promise<unknown> {
  const apps: any = await page.evaluate(async (org) => (await fetch(`/admin/api/orgs/${org}/apps`)).json(), tenant.orgId)
  return apps.data.find((a: any) => a.id === tenant.appId)[name]
}

/** Tabs (bounded) until the focused element matches `selector`. */
async function tabTo(p: Page, selector: string): Promise<void> {
  for (let i = 0; i < 80; i++) {
    if (await p.evaluate((s) => !!document.activeElement?.matches(s), selector)) return
    await p.keyboard.press('Tab')
  }
  throw new Error(`Tab never reached ${selector}`)
}

describe('abuse defence in the dashboard', () => {
  test('the App page recommends proof of work for a public App; choosing Normal by keyboard saves it and the advice goes', async () => {
    await page.goto(`${server.url}/admin/o/${tenant.orgId}/apps/${tenant.appId}`)
    await settle(page)
    const advice = page.locator('#pow-advice')
    await advice.waitFor()
    expect(await advice.textContent()).toContain('turn proof of work on')
    await expectPageClean(page, 'app-pow-recommended')
    await tabTo(page, '#s-pow')
    await page.keyboard.press('ArrowDown') // Off → Normal
    expect(await page.locator('#s-pow').inputValue()).toBe('normal')
    await advice.waitFor({ state: 'detached' })
    await tabTo(page, 'button[type=submit].primary')
    await page.keyboard.press('Enter')
    await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor()
    expect(await appSetting('proofOfWork')).toBe('normal')
    // Without public submissions there is nothing to recommend.
    await tabTo(page, '#s-pow')
    await page.keyboard.press('ArrowUp') // back to Off
    await tabTo(page, '#s-public')
    await page.keyboard.press('Space')
    expect(await page.locator('#pow-advice').count()).toBe(0)
    await page.keyboard.press('Space')
    await advice.waitFor()
    await expectPageClean(page, 'app-pow-off')
  })

  test('the inbox has a Spam folder: its count, each row with score and reasons; "s" there says not spam', async () => {
    await page.goto(`${server.url}/admin/o/${tenant.orgId}/inbox`)
    await settle(page)
    // The inbox folder hides spam.
    const rows = page.getByRole('list', { name: 'Reports' }).getByRole('listitem')
    expect(await rows.count()).toBe(real.length)
    const spamLink = page.getByRole('navigation', { name: 'Folders' }).getByRole('link', { name: /^Spam/ })
    expect(await spamLink.textContent()).toContain(String(bots.length))
    await spamLink.focus()
    await page.keyboard.press('Enter')
    await page.getByRole('heading', { name: /^Spam/ }).waitFor()
    await settle(page)
    expect(await rows.count()).toBe(bots.length)
    const tag = rows.first().locator('.spam-tag')
    expect(await tag.textContent()).toMatch(/Spam, score \d\.\d\d: .*honeypot/)
    // Spam is never handed to the agent from here.
    expect(await page.getByRole('button', { name: 'Queue selected' }).isDisabled()).toBe(true)
    await expectPageClean(page, 'inbox-spam-folder')
    // Keyboard: the first row is current; "s" says it is not spam.
    await page.locator('[data-index="0"]').focus()
    const firstId = await rows.first().getAttribute('data-id')
    await page.keyboard.press('s')
    await page.getByRole('status').filter({ hasText: 'Not spam: 1 of 1.' }).waitFor()
    expect((await item(firstId!)).spam).toBeNull()
    // Back in the inbox, "s" marks the current report as spam again.
    await page.goto(`${server.url}/admin/o/${tenant.orgId}/inbox?folder=inbox`)
    await settle(page)
    const row = page.locator(`[data-id="${firstId}"]`)
    await row.waitFor()
    await row.focus()
    await page.keyboard.press('s')
    await page.getByRole('status').filter({ hasText: 'Marked as spam: 1 of 1.' }).waitFor()
    expect((await item(firstId!)).spam).not.toBeNull()
  })

  test('the report page shows the classification; Not spam (keyboard) restores the report, Mark as spam files it again', async () => {
    const id = bots[1]
    await page.goto(`${server.url}/admin/o/${tenant.orgId}/r/${id}`)
    const box = page.getByRole('region', { name: 'Classified as spam' })
    await box.waitFor()
    expect(await box.textContent()).toMatch(/Score \d\.\d\d: .*honeypot/i)
    // Spam is not clustered: no similar-reports lookup (it would only say "not yet sanitized").
    expect(await page.getByRole('complementary', { name: 'Similar reports' }).textContent()).toContain('Spam is not clustered')
    await expectPageClean(page, 'report-spam')
    await box.getByRole('button', { name: 'Not spam' }).focus()
    await page.keyboard.press('Enter')
    await box.waitFor({ state: 'detached' })
    expect((await item(id)).spam).toBeNull()
    const mark = page.getByRole('button', { name: 'Mark as spam' })
    await mark.focus()
    await page.keyboard.press('Enter')
    await box.waitFor()
    expect((await item(id)).spam).not.toBeNull()
  })
})

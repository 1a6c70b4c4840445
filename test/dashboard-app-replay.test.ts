/**
 * Session replay on the dashboard's App page (issue 39), in Chromium against the compiled binary,
 * keyboard only: the "Session replay" select and its length field (disabled while off) save the App's
 * `replay` setting, which the widget then reads from GET /v1/widget/config. The page passes axe-core and
 * is photographed at 1280 and 375 px (FIXLOOP_SCREENSHOT_DIR, default test-output/).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import type { Browser, Page } from 'playwright-core'
import { signInByKeyboard, launchBrowserEarly } from './browser'
import { call, runBinary, tempDir } from './harness'
import { cliTenant, ensureBinary } from './helpers-lifecycle'
import { expectPageClean, settle, spawnWithStdout, writePasswordFile, type SpawnedServer } from './dashboard-helpers'

const EMAIL = 'replay-settings@example.com'
const PASSWORD = 'replay settings password 42'

let dir: string
let server: SpawnedServer
let browser: Browser
let early: ReturnType<typeof launchBrowserEarly> | undefined
let page: Page
let tenant: Awaited<ReturnType<typeof cliTenant>>

beforeAll(async () => {
  early = launchBrowserEarly()
  ensureBinary()
  dir = tempDir('fixloop-dash-replay-')
  tenant = await cliTenant(dir)
  const admin = await runBinary(['admin', 'create', '--email', EMAIL, '--password-file', writePasswordFile(dir, 'pw', PASSWORD), '--data-dir', dir])
  expect(admin.code).toBe(0)
  server = await spawnWithStdout(dir, { FIXLOOP_RATE_LIMIT_MULTIPLIER: '100' })
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

/** Tabs (bounded) until the focused element matches `selector`. */
async function tabTo(p: Page, selector: string): Promise<void> {
  for (let i = 0; i < 80; i++) {
    if (await p.evaluate((s) => !!document.activeElement?.matches(s), selector)) return
    await p.keyboard.press('Tab')
  }
  throw new Error(`Tab never reached ${selector}`)
}

const widgetConfig = async () => (await call(server.url, 'GET', '/v1/widget/config', { auth: tenant.pub })).body

describe('session replay on the App page', () => {
  test('off by default; choosing "Masked" and 90 seconds by keyboard saves it, and the widget config says so', async () => {
    expect(await widgetConfig()).toEqual({ replay: { mode: 'off', seconds: 60 } })
    await page.goto(`${server.url}/admin/o/${tenant.orgId}/apps/${tenant.appId}`)
    await settle(page)
    const select = page.locator('#s-replay')
    expect(await select.inputValue()).toBe('off')
    expect(await page.locator('#s-replay-seconds').isDisabled()).toBe(true)
    await expectPageClean(page, 'app-replay-off')
    await tabTo(page, '#s-replay')
    await page.keyboard.press('ArrowDown') // Off → Masked
    expect(await select.inputValue()).toBe('masked')
    expect(await page.locator('#s-replay-seconds').isDisabled()).toBe(false)
    await tabTo(page, '#s-replay-seconds')
    await page.keyboard.press('Control+A')
    await page.keyboard.type('90')
    await tabTo(page, 'button[type=submit].primary')
    await page.keyboard.press('Enter')
    await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor()
    expect(await widgetConfig()).toEqual({ replay: { mode: 'masked', seconds: 90 } })
    await expectPageClean(page, 'app-replay-masked')
  })

  test('a length out of range is refused with a message, and nothing changes', async () => {
    await page.goto(`${server.url}/admin/o/${tenant.orgId}/apps/${tenant.appId}`)
    await settle(page)
    // The browser's own min/max check is bypassed: the server's answer is what is under test.
    await page.evaluate(() => document.querySelector('form.grid')?.setAttribute('novalidate', ''))
    await tabTo(page, '#s-replay-seconds')
    await page.keyboard.press('Control+A')
    await page.keyboard.type('5')
    await tabTo(page, 'button[type=submit].primary')
    await page.keyboard.press('Enter')
    await page.getByRole('alert').waitFor()
    expect(await widgetConfig()).toEqual({ replay: { mode: 'masked', seconds: 90 } })
  })
})

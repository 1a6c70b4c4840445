/**
 * The App page while its sections load, in Chromium against the compiled binary (src/admin-ui/app/apps.js,
 * trackers.js, smtp.js): Duplicate detection, the repository, the issue tracker and the mail settings each
 * fetch their own data. Until it is in, each section keeps its place with its heading and "Loading…"
 * (aria-busy), and offers no form: a form drawn with the defaults could be saved over the stored settings.
 * The signing secret's buttons do not move when the answers come: a click pressed before and released after
 * them opens its dialog (it landed on <main> when Duplicate detection filled in above them). A section whose
 * request fails says so with a Retry button. axe-core clean loading, loaded and failed; photographed at 1280
 * and 375 px when FIXLOOP_SCREENSHOTS=1 or FIXLOOP_SCREENSHOT_DIR is set.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import type { Browser, Page, Route } from 'playwright-core'
import { BROWSER_SKIP, signInByKeyboard, launchBrowserEarly } from './browser'
import { call, runBinary, tempDir } from './harness'
import { cliJson, cliTenant, ensureBinary } from './helpers-lifecycle'
import { axeViolations, screenshots, spawnWithStdout, writePasswordFile, type SpawnedServer } from './dashboard-helpers'
import { startTrackerStub, STUB_PROJECT, type TrackerStub } from './tracker-stub'

const EMAIL = 'loading-owner@example.com'
const PASSWORD = 'loading owner password 42'

/** Each section that loads its own data, and the request it waits for. */
const SECTIONS = [
  { name: 'Duplicate detection', url: '**/v1/apps/*/triage' },
  { name: 'Repository and agent', url: '**/admin/api/orgs/*/apps/*/repo' },
  { name: 'Issue tracker', url: '**/v1/apps/*/tracker' },
  { name: 'Mail to reporters', url: '**/v1/apps/*/smtp' },
]

let dir: string
let server: SpawnedServer
let browser: Browser
let early: ReturnType<typeof launchBrowserEarly> | undefined
let page: Page
let stub: TrackerStub
let tenant: Awaited<ReturnType<typeof cliTenant>>

beforeAll(async () => {
  if (BROWSER_SKIP) return
  early = launchBrowserEarly()
  ensureBinary()
  dir = tempDir('fixloop-dash-app-loading-')
  stub = startTrackerStub('github')
  tenant = await cliTenant(dir)
  expect((await runBinary(['admin', 'create', '--email', EMAIL, '--password-file', writePasswordFile(dir, 'pw', PASSWORD), '--data-dir', dir])).code).toBe(0)
  // Stored settings that differ from each form's defaults (main, github, 20 files; no project; port 587):
  // the page must show these, never the defaults first.
  await cliJson(dir, ['app', 'connect-repo', tenant.appId, '--git-url', 'https://git.example.com/acme/shop.git', '--base-branch', 'develop', '--host', 'none', '--max-files', '7'])
  server = await spawnWithStdout(dir, { FIXLOOP_RATE_LIMIT_MULTIPLIER: '100', FIXLOOP_TRACKER_ALLOW_PRIVATE: '1', FIXLOOP_SMTP_ALLOW_PRIVATE: '1', FIXLOOP_TRACKER_POLL_MINUTES: '0' })
  const tracker = await call(server.url, 'PUT', `/v1/apps/${tenant.appId}/tracker`, { auth: tenant.key, body: { kind: 'github', apiUrl: stub.apiUrl, project: STUB_PROJECT, token: stub.token } })
  expect(tracker.status).toBe(200)
  const smtp = await call(server.url, 'PUT', `/v1/apps/${tenant.appId}/smtp`, { auth: tenant.key, body: { host: '127.0.0.1', port: 2525, tls: 'none', from: 'Shop <noreply@shop.example>' } })
  expect(smtp.status).toBe(200)
  browser = await early.ready
  page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage()
  await signInByKeyboard(page, server.url, EMAIL, PASSWORD)
}, 60_000)

afterAll(async () => {
  await early?.close()
  await server?.stop()
  stub?.stop()
  if (dir) rmSync(dir, { recursive: true, force: true })
})

const appUrl = () => `${server.url}/admin/o/${tenant.orgId}/apps/${tenant.appId}`
const section = (name: string) => page.getByRole('region', { name })
const reveal = () => page.getByRole('button', { name: 'Reveal', exact: true })

/** Each section's state: whether it says it is busy, its status text, and how many controls it offers. */
async function sectionStates() {
  const out: Record<string, { count: number; busy: string | null; status: string[]; controls: number }> = {}
  for (const { name } of SECTIONS) {
    const s = section(name)
    const count = await s.count()
    out[name] = count
      ? { count, busy: await s.getAttribute('aria-busy'), status: await s.getByRole('status').allInnerTexts(), controls: await s.locator('input, select, textarea, button').count() }
      : { count, busy: null, status: [], controls: 0 }
  }
  return out
}

/** Where the Reveal button is on the page at `width` px wide (the viewport goes back to 1280 after). */
async function revealAt(width: number) {
  await page.setViewportSize({ width, height: width === 375 ? 740 : 800 })
  const box = await reveal().evaluate((el) => {
    const r = el.getBoundingClientRect()
    const page = document.scrollingElement!
    return { x: r.x + page.scrollLeft, y: r.y + page.scrollTop, width: r.width, height: r.height }
  })
  await page.setViewportSize({ width: 1280, height: 800 })
  return box
}

/** Resolves once the section no longer says it is busy (it is there and its data is in, or its error). */
async function untilLoaded(name: string) {
  await section(name).waitFor({ timeout: 10_000 })
  while ((await section(name).getAttribute('aria-busy')) === 'true') await page.waitForTimeout(20)
}

/** The stored settings, in their forms (and the triage facts). */
async function expectStoredValues() {
  await section('Duplicate detection').getByText('Merged automatically').waitFor()
  expect(await page.locator('#r-branch').inputValue()).toBe('develop')
  expect(await page.locator('#r-host').inputValue()).toBe('none')
  expect(await page.locator('#r-files').inputValue()).toBe('7')
  expect(await page.locator('#t-project').inputValue()).toBe(STUB_PROJECT)
  expect(await page.locator('#m-host').inputValue()).toBe('127.0.0.1')
  expect(await page.locator('#m-port').inputValue()).toBe('2525')
}

test.skipIf(!!BROWSER_SKIP)('each section says it is loading in its place, offers no form until its stored values are in, and moves nothing above it', async () => {
  let release!: () => void
  const released = new Promise<void>((r) => (release = r))
  const held = new Set<string>()
  for (const { url } of SECTIONS) {
    await page.route(url, async (route: Route) => {
      if (route.request().method() !== 'GET') return route.continue()
      held.add(url)
      await released
      await route.continue()
    })
  }
  try {
    await page.goto(appUrl())
    await reveal().waitFor()
    while (held.size < SECTIONS.length) await page.waitForTimeout(20)
    const loading = { count: 1, busy: 'true', status: ['Loading…'], controls: 0 }
    expect(await sectionStates()).toEqual(Object.fromEntries(SECTIONS.map(({ name }) => [name, loading])))
    // A keyboard user goes from the settings straight to the secret's buttons: nothing that loads takes focus.
    await page.getByRole('button', { name: 'Save settings' }).focus()
    await page.keyboard.press('Tab')
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Reveal')
    expect(await axeViolations(page)).toEqual([])
    expect(await screenshots(page, 'app-loading')).toEqual([])
    const before = { 1280: await revealAt(1280), 375: await revealAt(375) }

    // A click on Reveal pressed while the sections load and released once they are in opens its dialog.
    const press = (await reveal().boundingBox())!
    await page.mouse.move(press.x + press.width / 2, press.y + press.height / 2)
    await page.mouse.down()
    release()
    for (const { name } of SECTIONS) await untilLoaded(name)
    await page.mouse.up()
    await page.getByRole('dialog', { name: 'Reveal the signing secret' }).waitFor({ timeout: 5_000 })
    await page.keyboard.press('Escape')
    await expectStoredValues()
    expect(Object.values(await sectionStates()).map((s) => s.status.includes('Loading…'))).toEqual(SECTIONS.map(() => false))
    expect({ 1280: await revealAt(1280), 375: await revealAt(375) }).toEqual(before)
    expect(await axeViolations(page)).toEqual([])
    expect(await screenshots(page, 'app-loaded')).toEqual([])
  } finally {
    release()
    await page.unrouteAll({ behavior: 'ignoreErrors' })
  }
}, 60_000)

test.skipIf(!!BROWSER_SKIP)('a section whose request fails says so in its place, with a Retry button that loads it (by keyboard)', async () => {
  let failing = true
  for (const { url } of SECTIONS) {
    await page.route(url, (route: Route) =>
      failing && route.request().method() === 'GET'
        ? route.fulfill({ status: 500, json: { error: { code: 'internal_error', message: 'Internal error.', details: { reason: 'the test failed this request' } } } })
        : route.continue(),
    )
  }
  try {
    await page.goto(appUrl())
    for (const { name } of SECTIONS) await section(name).getByRole('alert').waitFor({ timeout: 10_000 })
    for (const { name } of SECTIONS) {
      const s = section(name)
      expect(await s.getAttribute('aria-busy')).toBeNull()
      expect(await s.getByRole('alert').innerText()).toBe('Internal error. the test failed this request. (internal_error)')
      // The Retry button is the section's only control: no form with the defaults.
      expect(await s.locator('input, select, textarea, button').count()).toBe(1)
      expect(await s.getByRole('button', { name: 'Retry' }).count()).toBe(1)
    }
    expect(await axeViolations(page)).toEqual([])
    expect(await screenshots(page, 'app-failed')).toEqual([])

    failing = false
    for (const { name } of SECTIONS) {
      await section(name).getByRole('button', { name: 'Retry' }).focus()
      await page.keyboard.press('Enter')
      await section(name).locator('form, dl').first().waitFor({ timeout: 10_000 })
    }
    await expectStoredValues()
    expect(await page.getByRole('alert').count()).toBe(0)
  } finally {
    await page.unrouteAll({ behavior: 'ignoreErrors' })
  }
}, 60_000)

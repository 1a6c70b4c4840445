/**
 * Issue 29, items 5–7, in Chromium against the compiled binary: the page offers only the moves the FSM
 * allows and says why a report waits (statusReason); people read words, not enums, JSON or actor ids;
 * the inbox updates live from the event stream without moving focus; "Select all" with its mixed state;
 * setup lands on the existing Org; /favicon.ico; a long webhook error leaves Redeliver in view.
 * Keyboard only where a person acts, axe-core on every page, screenshots at 1280 and 375 px.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { BROWSER_SKIP, launchBrowserEarly } from './browser'
import { call, eventually, runBinary, tempDir } from './harness'
import { screenshots, spawnWithStdout, type SpawnedServer, expectPageClean, submitReport } from './dashboard-helpers'
import { canCustomerMove, canResolveByHand, CUSTOMER_TARGETS, FEEDBACK_STATUSES } from '../src/core/fsm'

const EMAIL = 'live-owner@example.com'
const PASSWORD = 'correct horse battery'

let dir: string
let server: SpawnedServer
let browser: Browser
let early: ReturnType<typeof launchBrowserEarly> | undefined
let context: BrowserContext
let page: Page
const state: { orgId: string; appId: string; pub: string; key: string } = { orgId: '', appId: '', pub: '', key: '' }
const notFound: string[] = []

const checkPage = (name: string) => expectPageClean(page, name)

const submit = (text: string, extra: Record<string, unknown> = {}) => submitReport(server.url, state.pub, text, extra)
const statusOf = async (id: string) => (await call(server.url, 'GET', `/v1/feedback/${id}`, { auth: state.key })).body.status as string
const settled = (id: string) => eventually(async () => (await statusOf(id)) === 'awaiting_manual', 10_000)

/** The text people see in <main>, without the screen-reader-only parts. */
const visibleText = () => page.evaluate(() => (document.querySelector('main') as HTMLElement).innerText)

beforeAll(async () => {
  if (BROWSER_SKIP) return
  early = launchBrowserEarly()
  dir = tempDir('fixloop-dash-live-')
  server = await spawnWithStdout(dir, { FIXLOOP_RATE_LIMIT_MULTIPLIER: '100' })
  // The Org exists before the first admin does (made with the CLI while the server runs).
  const org = await runBinary(['org', 'create', '--name', 'Acme', '--json', '--data-dir', dir])
  expect(org.code).toBe(0)
  state.orgId = JSON.parse(org.stdout).id
  const app = await runBinary(['app', 'create', '--org', state.orgId, '--name', 'Web shop', '--json', '--data-dir', dir])
  expect(app.code).toBe(0)
  state.appId = JSON.parse(app.stdout).id
  state.pub = JSON.parse(app.stdout).publicKey
  const key = await runBinary(['key', 'create', '--org', state.orgId, '--name', 'tests', '--json', '--data-dir', dir])
  state.key = JSON.parse(key.stdout).key
  browser = await early.ready
  context = await browser.newContext({ viewport: { width: 1280, height: 800 } })
  page = await context.newPage()
  // Fail one check fast rather than time the whole test out (which leaves the next test a busy page).
  page.setDefaultTimeout(10_000)
  page.on('pageerror', (e) => console.error('page error:', e.message))
  page.on('response', (r) => {
    if (r.status() === 404) notFound.push(r.url())
  })
})

afterAll(async () => {
  await early?.close()
  await server?.stop()
  if (dir) rmSync(dir, { recursive: true, force: true })
})

describe('the FSM module served to the page', () => {
  test('offers exactly the moves src/core/fsm.ts allows, for every status and target', async () => {
    const { fsmModule } = await import('../src/admin-ui/assets')
    const path = `${tempDir('fixloop-fsm-')}/fsm.mjs`
    await Bun.write(path, fsmModule())
    const served = await import(path)
    for (const from of FEEDBACK_STATUSES) {
      for (const to of CUSTOMER_TARGETS) expect([from, to, served.canCustomerMove(from, to)]).toEqual([from, to, canCustomerMove(from, to)])
      expect(served.customerTargets(from)).toEqual(CUSTOMER_TARGETS.filter((to) => canCustomerMove(from, to)))
      expect([from, served.canResolveByHand(from)]).toEqual([from, canResolveByHand(from)])
    }
  })
})

describe.skipIf(!!BROWSER_SKIP)('dashboard, issue 29 items 5–7, in Chromium against the binary', () => {
  test('after setup the owner lands on the existing Org’s inbox, not on "Choose an Org"', async () => {
    const link = await eventually(() => /(http\S+\/admin\/setup#token=\S+)/.exec(server.stdout())?.[1])
    await page.goto(link)
    await page.getByLabel('Email').fill(EMAIL)
    await page.getByLabel('Password').fill(PASSWORD)
    await page.getByRole('button', { name: 'Create admin' }).click()
    await page.getByRole('heading', { name: /^Inbox/ }).waitFor()
    expect(new URL(page.url()).pathname).toBe(`/admin/o/${state.orgId}/inbox`)
    const org = page.getByRole('combobox', { name: 'Org' })
    expect(await org.inputValue()).toBe(state.orgId)
    expect(await page.getByRole('option', { name: 'Choose an Org' }).count()).toBe(0)
    // The Orgs page keeps the Org in the menu too.
    await page.getByRole('link', { name: 'Orgs' }).click()
    await page.getByRole('heading', { name: 'Orgs' }).waitFor()
    expect(await org.inputValue()).toBe(state.orgId)
  })

  test('/favicon.ico: an embedded icon with its type and cache headers, linked from the page; no 404 on any page', async () => {
    const r = await fetch(server.url + '/favicon.ico')
    expect(r.status).toBe(200)
    expect(r.headers.get('content-type')).toBe('image/x-icon')
    expect(r.headers.get('cache-control')).toMatch(/^public, max-age=\d+/)
    const bytes = new Uint8Array(await r.arrayBuffer())
    expect([...bytes.slice(0, 4)]).toEqual([0, 0, 1, 0]) // ICONDIR: reserved 0, type 1 (icon)
    const etag = r.headers.get('etag')!
    expect((await fetch(server.url + '/favicon.ico', { headers: { 'if-none-match': etag } })).status).toBe(304)
    // Compared weakly, in a list too (RFC 9110 13.1.2), as a proxy's gzip (W/"…") and caches send it.
    expect((await fetch(server.url + '/favicon.ico', { headers: { 'if-none-match': `"other", W/${etag}` } })).status).toBe(304)
    expect(await page.locator('link[rel="icon"]').getAttribute('href')).toBe('/favicon.ico')
    // Chromium decodes it: a real image, 16 or 32 px.
    const width = await page.evaluate(
      () =>
        new Promise<number>((resolve) => {
          const img = new Image()
          img.onload = () => resolve(img.naturalWidth)
          img.onerror = () => resolve(-1)
          img.src = '/favicon.ico'
        }),
    )
    expect([16, 32]).toContain(width)
    expect(notFound).toEqual([])
  })

  test('a report waiting for a repository says why, and offers only Archive (the FSM’s moves)', async () => {
    const id = await submit('The pay button does nothing', {
      componentTarget: { name: 'PayButton', meta: { selector: '#pay', role: 'button', tabIndex: 0 }, bbox: { x: 10, y: 20, w: 120, h: 40 } },
    })
    await settled(id)
    // awaiting_manual: both moves are offered.
    await page.goto(`${server.url}/admin/o/${state.orgId}/r/${id}`)
    await page.getByRole('heading', { name: 'History' }).waitFor()
    await page.getByRole('button', { name: 'Queue for agent' }).waitFor()
    expect(await page.getByRole('button', { name: 'Archive' }).count()).toBe(1)
    // Keyboard only: Tab to "Queue for agent" and press Enter.
    await page.locator('main').focus()
    for (let i = 0; i < 40; i++) {
      await page.keyboard.press('Tab')
      if ((await page.evaluate(() => document.activeElement?.textContent)) === 'Queue for agent') break
    }
    await page.keyboard.press('Enter')
    await page.getByText(/Waiting for a repository/).waitFor()
    expect(await statusOf(id)).toBe('queued')
    const item = (await call(server.url, 'GET', `/v1/feedback/${id}`, { auth: state.key })).body
    expect(item.statusReason).toMatch(/^waiting for a repository/)
    // The page shows the API's reason and offers exactly the FSM's moves from queued: Archive, not Queue.
    expect(await page.locator('.reason').textContent()).toContain(item.statusReason.slice(1))
    const offered = await page.locator('.report-main .actions button').allTextContents()
    // (and "Mark as fixed": a queued report may be resolved by hand, POST /v1/feedback/:id/resolve).
    expect(offered).toEqual([
      ...CUSTOMER_TARGETS.filter((to) => canCustomerMove('queued', to)).map((to) => (to === 'queued' ? 'Queue for agent' : 'Archive')),
      ...(canResolveByHand('queued') ? ['Mark as fixed'] : []),
    ])
    // Words, not enums or JSON: the status, the component target, the history.
    const text = await visibleText()
    expect(text).toContain('Queued for the agent')
    for (const raw of ['awaiting_manual', 'queued →', '{"selector"', 'feedback.received', 'feedback.status_changed']) expect(text).not.toContain(raw)
    expect(await page.locator('dl.component').textContent()).toContain('#pay')
    await page.locator('ol.history li', { hasText: 'Awaiting your decision → Queued for the agent' }).waitFor()
    await checkPage('live-report-reason')
  })

  test('a component whose meta keys and values are long end-user text keeps two readable columns: the page does not grow thousands of px tall', async () => {
    // The key column took all the width a long key wanted, and its value wrapped one letter a line (a
    // report page 23,000 px tall from one field a reporter chose).
    const longKey = Array.from({ length: 40 }, (_, i) => `word${i}`).join(' ')
    const longValue = 'v'.repeat(300) + ' ' + Array.from({ length: 60 }, (_, i) => `part${i}`).join(' ')
    const id = await submit('A component with long meta', { componentTarget: { name: 'n'.repeat(200), meta: { [longKey]: longValue, [`${'k'.repeat(250)}`]: 'short' } } })
    await page.goto(`${server.url}/admin/o/${state.orgId}/r/${id}`)
    await page.locator('dl.component').waitFor()
    for (const width of [1280, 375]) {
      await page.setViewportSize({ width, height: 800 })
      const sizes = await page.locator('dl.component').evaluate((dl) => ({
        height: dl.getBoundingClientRect().height,
        narrowest: Math.min(...[...dl.querySelectorAll('dt, dd')].map((e) => e.getBoundingClientRect().width)),
      }))
      // Every key and value keeps a column a word fits in, and the whole list stays a few screens tall.
      expect([width, sizes.narrowest >= 80, sizes.height < 2_000]).toEqual([width, true, true])
    }
    await page.setViewportSize({ width: 1280, height: 800 })
    await checkPage('live-component-long-meta')
  })

  test('the audit log says who by email and what in words', async () => {
    // An action of this admin in this Org: create a key from the page.
    await page.goto(`${server.url}/admin/o/${state.orgId}/keys`)
    await page.getByLabel('Key name').fill('from the page')
    await page.getByLabel('Password').fill(PASSWORD)
    await page.getByRole('button', { name: 'Create key' }).click()
    await page.getByLabel('New API key').waitFor()
    await page.getByRole('link', { name: 'Audit log' }).click()
    const row = page.getByRole('row', { name: /API key created/ }).first()
    await row.waitFor()
    expect(await row.getByRole('cell').nth(1).textContent()).toBe(EMAIL)
    expect(await row.getByRole('cell').nth(3).textContent()).toBe('API key “from the page”')
    // The CLI's entries say so in words; no raw actor ids or action names anywhere.
    await page.getByRole('row', { name: /Command line.*App created/ }).waitFor()
    const text = await visibleText()
    expect(text).not.toMatch(/admin:[0-9a-f]{24}/)
    expect(text).not.toMatch(/\b(key|app|org)\.(created|revoked)\b/)
    await checkPage('live-audit')
  })

  test('webhook deliveries: a long error wraps; Redeliver stays in view at 1280 and 375 px', async () => {
    const host = `${'a-host-name-that-will-never-resolve-anywhere-'.repeat(1)}${'x'.repeat(50)}.${'y'.repeat(60)}.invalid`
    const hook = await call(server.url, 'POST', '/v1/webhooks', { auth: state.key, body: { url: `https://${host}/hook` } })
    expect(hook.status).toBe(201)
    await submit('A report for the webhook')
    await eventually(async () => {
      const d = await call(server.url, 'GET', `/v1/webhooks/${hook.body.id}/deliveries`, { auth: state.key })
      return d.body.data.some((x: { log: { error: string | null }[] }) => x.log.some((a) => a.error && a.error.length > 100))
    }, 20_000)
    await page.goto(`${server.url}/admin/o/${state.orgId}/webhooks`)
    await page.getByRole('button', { name: 'Deliveries' }).click()
    const button = page.getByRole('button', { name: /^Redeliver/ }).first()
    await button.waitFor()
    await page.getByRole('cell', { name: /does not resolve/ }).first().waitFor()
    for (const width of [1280, 375]) {
      await page.setViewportSize({ width, height: 800 })
      const fits = await button.evaluate((b) => {
        const wrap = b.closest('.table-wrap')!.getBoundingClientRect()
        const r = b.getBoundingClientRect()
        return r.left >= wrap.left && r.right <= wrap.right && r.right <= innerWidth
      })
      expect([width, fits]).toEqual([width, true])
    }
    await page.setViewportSize({ width: 1280, height: 800 })
    // Event types in words: the Redeliver button names its delivery the same way.
    expect(await page.getByRole('button', { name: /^Redeliver Report received #\d+$/ }).count()).toBe(1)
    expect(await visibleText()).not.toContain('feedback.received')
    await checkPage('live-webhooks-long-error')
  })

  test('the inbox updates live: a report submitted through the API appears, announced, focus unmoved', async () => {
    const older = await submit('An older report, already listed')
    await settled(older)
    await page.goto(`${server.url}/admin/o/${state.orgId}/inbox?folder=all`)
    const first = page.locator('li.row').first()
    await first.waitFor()
    // The page must not reload: a marker on window survives only without one.
    await page.evaluate(() => ((window as unknown as { marker: number }).marker = 42))
    // Keyboard: j then k puts focus on the newest row.
    await page.locator('body').press('j')
    await page.keyboard.press('k')
    const focusedId = await page.evaluate(() => (document.activeElement as HTMLElement).dataset.id)
    expect(focusedId).toBe(await first.getAttribute('data-id'))
    const rowsBefore = await page.locator('li.row').count()

    const started = Date.now()
    const fresh = await submit('Live: the cart total is wrong after a coupon')
    await page.locator('li.row', { hasText: 'Live: the cart total is wrong' }).waitFor({ timeout: 5000 })
    const ms = Date.now() - started
    expect(ms).toBeLessThan(5000)
    expect(await page.locator('li.row').first().getAttribute('data-id')).toBe(fresh)
    expect(await page.locator('li.row').count()).toBe(rowsBefore + 1)
    expect(await page.evaluate(() => (window as unknown as { marker?: number }).marker)).toBe(42)
    // Announced politely, and focus is where it was: on the same report, still the current row.
    const note = page.locator('[aria-live="polite"]', { hasText: /1 new report/ })
    await note.waitFor()
    expect(await page.evaluate(() => (document.activeElement as HTMLElement).dataset.id)).toBe(focusedId)
    expect(await page.locator('li.row.current').getAttribute('data-id')).toBe(focusedId!)
    // Its status follows the worker live too (received → … → awaiting your decision).
    await page.locator(`li.row[data-id="${fresh}"]`, { hasText: 'Awaiting your decision' }).waitFor({ timeout: 10_000 })
    await checkPage('live-inbox')
  })

  test('"Select all": keyboard operable, mixed when some rows are selected; bulk moves follow the FSM', async () => {
    const all = page.getByRole('checkbox', { name: 'Select all' })
    const rows = await page.locator('li.row').count()
    expect(rows).toBeGreaterThan(1)
    await all.focus()
    await page.keyboard.press('Space')
    expect(await page.locator('li.row input[type="checkbox"]:checked').count()).toBe(rows)
    expect(await page.getByText(`${rows} selected`).count()).toBe(1)
    // Unselect one row: the box is mixed (indeterminate), and says so to assistive technology.
    await page.locator('li.row input[type="checkbox"]').first().focus()
    await page.keyboard.press('Space')
    expect(await all.evaluate((el) => (el as HTMLInputElement).indeterminate)).toBe(true)
    const snapshot = await page.locator('.toolbar').ariaSnapshot()
    expect(snapshot).toContain('checkbox "Select all" [checked=mixed]')
    await screenshots(page, 'live-inbox-mixed')
    // Space on a mixed box selects all; again selects none.
    await all.focus()
    await page.keyboard.press('Space')
    expect(await all.evaluate((el) => [(el as HTMLInputElement).indeterminate, (el as HTMLInputElement).checked])).toEqual([false, true])
    // A queued report cannot be queued again (the FSM): the page says so on its row without asking the API.
    const queuedRow = page.locator('li.row', { hasText: 'The pay button does nothing' })
    await page.getByRole('button', { name: 'Queue selected' }).click()
    await queuedRow.locator('.result.bad', { hasText: 'Not queued: already queued for the agent' }).waitFor()
    await page.getByRole('status').filter({ hasText: /^Queued \d+ of \d+\./ }).waitFor()
    // Each row's answer wraps under it on a phone: nothing sticks out sideways.
    expect(await screenshots(page, 'live-inbox-bulk-result')).toEqual([])
    expect(await page.locator('li.row input[type="checkbox"]:checked').count()).toBe(0)
    expect(await page.getByRole('button', { name: 'Queue selected' }).isDisabled()).toBe(true)
  })
})

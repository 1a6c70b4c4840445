/**
 * Never lose, never duplicate, never lie: offline submits are queued in IndexedDB and sent once when
 * the browser is back online or on the next page load; a 429 is waited out (Retry-After) and retried
 * with the same Idempotency-Key; a 5xx leaves the report queued; "Thanks" only after the 201; a payload
 * beforeSend made unserializable is refused at once, never queued as if it would be sent later.
 */
import { expect, test } from 'bun:test'
import { eventually } from './harness'
import { freshContext, report, reports, scriptTag, queuedCount, widget, widgetEnv, type WidgetEnv } from './widget-fixture'
import type { Page } from 'playwright-core'

const env = widgetEnv()

const withText = async (e: WidgetEnv, text: string) => (await reports(e)).filter((r: any) => r.text === text)

function recordSubmits(page: Page, e: WidgetEnv) {
  const seen: { key: string; status: number; replayed: boolean }[] = []
  page.on('response', (res) => {
    if (res.url() === `${e.api}/v1/feedback` && res.request().method() === 'POST') {
      seen.push({ key: res.request().headers()['idempotency-key'], status: res.status(), replayed: res.headers()['idempotent-replayed'] === 'true' })
    }
  })
  return seen
}

test('offline: queued (no "Thanks"), sent once when back online, not again after a reload', async () => {
  const e = env()
  const url = e.page('/offline', { mount: scriptTag(e) })
  const { context, page } = await freshContext(e)
  try {
    await page.goto(url)
    const w = widget(page)
    await w.launcher.click()
    await w.text.fill('Sent while offline')
    await page.locator('fixloop-widget canvas').waitFor({ state: 'visible' })
    await context.setOffline(true)
    await w.send.click()
    await w.host.getByRole('status').filter({ hasText: 'saved on this device' }).waitFor()
    expect(await w.host.getByRole('status').textContent()).not.toContain('Thanks')
    // The browser says it is offline: the reporter is told so.
    expect(await w.host.getByRole('status').textContent()).toContain('You seem to be offline.')
    expect(await withText(e, 'Sent while offline')).toHaveLength(0)
    const seen = recordSubmits(page, e)
    await context.setOffline(false)
    await eventually(async () => (await withText(e, 'Sent while offline')).length === 1, 10_000)
    await page.reload()
    await widget(page).launcher.waitFor()
    await page.waitForTimeout(1000)
    expect(await withText(e, 'Sent while offline')).toHaveLength(1)
    // A reload between the server's commit and the widget reading its 201 sends the queued report again,
    // with the same Idempotency-Key: the server answers with the stored 201 (a replay), stores nothing new.
    // (The reload may abort the first response before the page sees it: then only the replay is seen.)
    const created = seen.filter((s) => s.status === 201)
    expect(created.length).toBeGreaterThanOrEqual(1)
    expect(created.filter((s) => !s.replayed).length).toBeLessThanOrEqual(1)
    expect(new Set(created.map((s) => s.key)).size).toBe(1)
    const queued = await queuedCount(page)
    expect(queued).toBe(0)
    const item = (await withText(e, 'Sent while offline'))[0]
    expect(item).toBeDefined()
  } finally {
    await context.close()
  }
})

test('offline, then the tab is reloaded online: the queued report (screenshot included) is sent exactly once', async () => {
  const e = env()
  const url = e.page('/offline-reload', { mount: scriptTag(e) })
  const { context, page } = await freshContext(e)
  try {
    await page.goto(url)
    const w = widget(page)
    await w.launcher.click()
    await w.text.fill('Queued across a reload')
    await page.locator('fixloop-widget canvas').waitFor({ state: 'visible' })
    await context.setOffline(true)
    await w.send.click()
    await w.host.getByRole('status').filter({ hasText: 'saved on this device' }).waitFor()
    await page.close()
    await context.setOffline(false)
    const second = await context.newPage()
    await second.goto(url)
    await eventually(async () => (await withText(e, 'Queued across a reload')).length === 1, 10_000)
    const third = await context.newPage()
    await third.goto(url)
    await third.waitForTimeout(1000)
    const items = await withText(e, 'Queued across a reload')
    expect(items).toHaveLength(1)
    expect((await report(e, items[0].id)).attachments).toHaveLength(1)
  } finally {
    await context.close()
  }
})

test('a 5xx leaves the report queued; the retry re-uses the same Idempotency-Key', async () => {
  const e = env()
  const url = e.page('/five-hundred', { mount: scriptTag(e) })
  const { context, page } = await freshContext(e)
  try {
    await page.goto(url)
    const w = widget(page)
    const keys: string[] = []
    await page.route(`${e.api}/v1/feedback`, async (route) => {
      keys.push(route.request().headers()['idempotency-key'])
      if (keys.length === 1) return route.fulfill({ status: 503, contentType: 'application/json', body: '{"error":{"code":"internal_error","message":"down"}}', headers: { 'access-control-allow-origin': '*' } })
      return route.continue()
    })
    await w.launcher.click()
    await w.host.getByRole('checkbox', { name: 'Include a screenshot' }).uncheck()
    await w.text.fill('Server hiccup')
    await w.send.click()
    await w.host.getByRole('status').filter({ hasText: 'saved on this device' }).waitFor()
    // Online, and fixloop answered: not "You seem to be offline", which would send them to check their connection.
    expect(await w.host.getByRole('status').textContent()).toContain('Your report couldn’t be sent just now.')
    expect(await w.host.getByRole('status').textContent()).not.toContain('offline')
    expect(await withText(e, 'Server hiccup')).toHaveLength(0)
    await page.evaluate(() => dispatchEvent(new Event('online')))
    await eventually(async () => (await withText(e, 'Server hiccup')).length === 1, 10_000)
    expect(keys).toHaveLength(2)
    expect(keys[0]).toBe(keys[1])
  } finally {
    await context.close()
  }
})

test('a server that keeps answering 429: the report is kept to send later within seconds, not after half a minute of "Sending…"', async () => {
  const e = env()
  const url = e.page('/always-busy', { mount: scriptTag(e) })
  const { context, page } = await freshContext(e)
  try {
    await page.goto(url)
    const w = widget(page)
    let answered = 0
    await page.route(`${e.api}/v1/feedback`, (route) => {
      answered++
      return route.fulfill({ status: 429, contentType: 'application/json', headers: { 'retry-after': '2', 'access-control-allow-origin': '*', 'access-control-expose-headers': 'retry-after' }, body: '{"error":{"code":"rate_limited","message":"slow down"}}' })
    })
    await w.launcher.click()
    await w.host.getByRole('checkbox', { name: 'Include a screenshot' }).uncheck()
    await w.text.fill('Busy server report')
    const started = Date.now()
    await w.send.click()
    await w.host.getByRole('status').filter({ hasText: 'saved on this device' }).waitFor({ timeout: 20_000 })
    // Retry-After 2 s was waited out (at least once), but not five times over (29 s before).
    const took = Date.now() - started
    expect(answered).toBeGreaterThanOrEqual(2)
    expect(took).toBeGreaterThanOrEqual(2_000)
    expect(took).toBeLessThan(15_000)
    expect(await w.host.getByRole('status').textContent()).toContain('Your report couldn’t be sent just now.')
    // Kept, not dropped: it waits in IndexedDB for the queue's next try.
    const queued = await queuedCount(page)
    expect(queued).toBe(1)
  } finally {
    await context.close()
  }
})

test('429: Retry-After is honoured, the retry succeeds with the same key, "Thanks" only after the 201', async () => {
  const e = env()
  const url = e.page('/busy', { mount: scriptTag(e) })
  const { context, page } = await freshContext(e)
  try {
    await page.goto(url)
    const w = widget(page)
    const seen = recordSubmits(page, e)
    const statusTexts: string[] = []
    page.on('response', async (res) => {
      if (res.url() === `${e.api}/v1/feedback`) statusTexts.push(`${res.status()} ${await w.host.getByRole('status').first().textContent()}`)
    })
    await w.launcher.click()
    await w.host.getByRole('checkbox', { name: 'Include a screenshot' }).uncheck()
    await w.text.fill('Rate limited report')
    // Keep this App's public submission bucket (60, refilled 1/s) empty for this client address until the
    // widget's first answer arrives; invalid bodies still take a token.
    const drain = () =>
      fetch(`${e.api}/v1/feedback`, { method: 'POST', headers: { authorization: `Bearer ${e.tenant.pub}`, 'content-type': 'application/json' }, body: '{}' }).then((r) => r.status)
    const first = await Promise.all(Array.from({ length: 70 }, drain))
    expect(first).toContain(429)
    const draining = (async () => {
      for (let i = 0; i < 400 && seen.length === 0; i++) await Promise.all([drain(), drain()])
    })()
    const started = Date.now()
    await w.send.click()
    await w.host.getByRole('status').filter({ hasText: 'Thanks' }).waitFor({ timeout: 20_000 })
    await draining
    expect(seen[0].status).toBe(429)
    expect(seen[seen.length - 1].status).toBe(201)
    expect(new Set(seen.map((s) => s.key)).size).toBe(1)
    expect(Date.now() - started).toBeGreaterThanOrEqual(900)
    expect(statusTexts.filter((s) => s.startsWith('429')).every((s) => !s.includes('Thanks'))).toBe(true)
    expect(await withText(e, 'Rate limited report')).toHaveLength(1)
  } finally {
    await context.close()
  }
})

test('a beforeSend that returns what JSON cannot carry (a cycle, a BigInt): told at once, nothing queued, no false hint about allowed origins', async () => {
  const e = env()
  const mount = `<script src="${e.api}/widget.js"></script>
<script>
  Fixloop.init({
    publicKey: ${JSON.stringify(e.tenant.pub)},
    screenshot: false,
    beforeSend: function (p) {
      if (p.text === 'cycle') { p.metadata = { order: {} }; p.metadata.order.self = p.metadata.order }
      if (p.text === 'bigint') p.metadata = { orderId: BigInt(42) }
      return p
    },
  })
</script>`
  const url = e.page('/before-send-unserializable', { mount })
  const { context, page } = await freshContext(e)
  try {
    const warnings: string[] = []
    page.on('console', (m) => m.type() === 'warning' && warnings.push(m.text()))
    await page.goto(url)
    const w = widget(page)
    for (const text of ['cycle', 'bigint']) {
      await w.launcher.click()
      await w.text.fill(text)
      await w.send.click()
      await w.host.getByRole('status').filter({ hasText: 'could not be sent' }).waitFor({ timeout: 5000 })
      expect(await w.host.getByRole('status').filter({ hasText: /\S/ }).textContent()).not.toContain('saved on this device')
      expect(await queuedCount(page)).toBe(0)
      await page.keyboard.press('Escape')
    }
    // The report never left: there is nothing about the page's origin to tell the integrator.
    expect(warnings.filter((m) => m.includes('allowed origins'))).toEqual([])
    // A good report after them is not held up behind them.
    await w.launcher.click()
    await w.text.fill('fine after the bad ones')
    await w.send.click()
    await w.host.getByRole('status').filter({ hasText: 'Thanks' }).waitFor()
  } finally {
    await context.close()
  }
})

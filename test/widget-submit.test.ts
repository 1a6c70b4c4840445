/**
 * The widget on a customer page of another origin, against the compiled binary: a report with a
 * screenshot and console/network context, read back through the sk API with the screenshot
 * downloadable; the element picker's componentTarget; the open dialog at 1280 and 375 px (photographed with
 * FIXLOOP_SCREENSHOTS=1).
 */
import { expect, test } from 'bun:test'
import { join } from 'node:path'
import { OUT_DIR, photo, SHOTS } from './dashboard-helpers'
import { freshContext, report, reports, scriptTag, widget, widgetEnv } from './widget-fixture'

const env = widgetEnv()

test('a report with screenshot and console context arrives, readable and downloadable through the sk API', async () => {
  const e = env()
  const url = e.page('/shop', { mount: scriptTag(e) })
  const { context, page } = await freshContext(e)
  try {
    await page.goto(url)
    const w = widget(page)
    await w.launcher.waitFor()
    const submits: { headers: Record<string, string>; status: number; body: any }[] = []
    page.on('response', async (res) => {
      if (res.url() === `${e.api}/v1/feedback` && res.request().method() === 'POST') submits.push({ headers: res.request().headers(), status: res.status(), body: res.request().postDataJSON() })
    })
    await page.evaluate(() => {
      console.log('cart loaded', { items: 2 })
      console.warn('slow image')
      console.error('Payment failed: Bearer abc.def.ghi token=s3cr3tvalue')
      fetch('/api/missing?session=xyz&page=2').catch(() => {})
      setTimeout(() => {
        throw new Error('boom from the page')
      })
      Promise.reject(new Error('rejected promise'))
    })
    await page.waitForTimeout(200)
    await w.launcher.click()
    await w.dialog.waitFor()
    await w.text.fill('The Pay button does nothing')
    // The preview appears once the DOM render is done.
    await page.locator('fixloop-widget canvas').waitFor({ state: 'visible' })
    await photo(page, 'widget-dialog-1280.png')
    await expect(w.status.count()).resolves.toBe(0)
    await w.send.click()
    await w.host.getByRole('status').filter({ hasText: 'Thanks' }).waitFor()
    expect(submits).toHaveLength(1)
    expect(submits[0].status).toBe(201)
    expect(submits[0].headers['idempotency-key']).toMatch(/^fl-[0-9a-f]{32}$/)
    // An App left at the defaults (proof of work off): no proof, no bot signals, never scored.
    expect(submits[0].headers['x-fixloop-proof-of-work']).toBeUndefined()
    expect(submits[0].body.clientSignals).toBeUndefined()

    const list = await reports(e)
    expect(list).toHaveLength(1)
    const item = await report(e, list[0].id)
    expect(item.text).toBe('The Pay button does nothing')
    expect(item.url).toBe(url)
    expect(item.viewport).toEqual({ w: 1280, h: 800, dpr: 1 })
    expect(item.userAgent).toContain('Chrome')
    const messages = item.consoleLogs.map((l: any) => `${l.level} ${l.message}`)
    expect(messages.some((m: string) => m.startsWith('log cart loaded {"items":2}'))).toBe(true)
    expect(messages).toContain('warn slow image')
    expect(messages.some((m: string) => m.includes('boom from the page'))).toBe(true)
    expect(messages.some((m: string) => m.includes('Unhandled rejection') && m.includes('rejected promise'))).toBe(true)
    const payment = messages.find((m: string) => m.includes('Payment failed'))!
    expect(payment).not.toContain('abc.def.ghi')
    expect(payment).not.toContain('s3cr3tvalue')
    const network = item.submissionMeta.network
    expect(network).toHaveLength(1)
    expect(network[0]).toMatchObject({ method: 'GET', url: `${e.customer}/api/missing?session=&page=`, status: 404 })
    expect(typeof network[0].ms).toBe('number')

    expect(item.attachments).toHaveLength(1)
    const shot = item.attachments[0]
    expect(shot).toMatchObject({ kind: 'screenshot', contentType: 'image/png', width: 1280, height: 800 })
    const png = new Uint8Array(await (await fetch(shot.url)).arrayBuffer())
    expect(png.length).toBe(shot.byteSize)
    if (SHOTS) await Bun.write(join(OUT_DIR, 'widget-uploaded-screenshot.png'), png)
    expect([...png.slice(1, 4)].map((c) => String.fromCharCode(c)).join('')).toBe('PNG')
  } finally {
    await context.close()
  }
})

test('the element picker fills componentTarget with an element-cropped screenshot', async () => {
  const e = env()
  const url = e.page('/picker', { mount: scriptTag(e) })
  const { context, page } = await freshContext(e)
  try {
    await page.goto(url)
    const w = widget(page)
    await w.launcher.click()
    await w.text.fill('This button is broken')
    await page.locator('fixloop-widget canvas').waitFor({ state: 'visible' })
    await w.host.getByRole('button', { name: 'Point at the broken element' }).click()
    await expect(w.dialog.isVisible()).resolves.toBe(false)
    const box = (await page.locator('#pay').boundingBox())!
    await page.mouse.move(box.x + 5, box.y + 5)
    await page.mouse.click(box.x + 5, box.y + 5)
    await w.host.getByText('Selected element: PayButton').waitFor()
    await w.send.click()
    await w.host.getByRole('status').filter({ hasText: 'Thanks' }).waitFor()
    const list = await reports(e)
    const item = await report(e, list.find((r: any) => r.text === 'This button is broken').id)
    const ct = item.componentTarget
    expect(ct.name).toBe('PayButton')
    expect(ct.meta).toMatchObject({ selector: '#pay', role: 'button', text: 'Pay now', component: 'PayButton' })
    expect(ct.bbox).toEqual({ x: Math.round(box.x), y: Math.round(box.y), w: Math.round(box.width), h: Math.round(box.height) })
    expect(typeof ct.screenshotKey).toBe('string')
    const cropped = new Uint8Array(await (await fetch(ct.screenshotUrl)).arrayBuffer())
    // PNG IHDR: width and height at bytes 16..23 match the element's box.
    const view = new DataView(cropped.buffer)
    expect(view.getUint32(16)).toBe(Math.round(box.width))
    expect(view.getUint32(20)).toBe(Math.round(box.height))
  } finally {
    await context.close()
  }
})

test('the open dialog at 375 px wide fits the screen', async () => {
  const e = env()
  const url = e.page('/mobile', { mount: scriptTag(e) })
  const { context, page } = await freshContext(e, { width: 375, height: 740 })
  try {
    await page.goto(url)
    const w = widget(page)
    await w.launcher.click()
    await page.locator('fixloop-widget canvas').waitFor({ state: 'visible' })
    const box = (await w.dialog.boundingBox())!
    expect(box.x).toBeGreaterThanOrEqual(0)
    expect(box.x + box.width).toBeLessThanOrEqual(375)
    await photo(page, 'widget-dialog-375.png')
  } finally {
    await context.close()
  }
})

/**
 * What a report carries, at the limits: the console ring buffer (500 entries, 1000 characters each),
 * the request summary trimmed so metadata stays within 4 KB, cookies and tokens stripped in the
 * browser (the submission is accepted, never a 400); and the manual-attach fallback with black-box
 * redaction and crop applied before upload.
 */
import { expect, test } from 'bun:test'
import { deflateSync } from 'node:zlib'
import { chromium } from 'playwright-core'
import { CHROMIUM } from './browser'
import { freshContext, report, reports, widget, widgetEnv, type WidgetEnv } from './widget-fixture'

const env = widgetEnv()

function initMount(e: WidgetEnv, extra = ''): string {
  return `<script src="${e.api}/widget.js"></script>
<script>Fixloop.init({ publicKey: ${JSON.stringify(e.tenant.pub)}, endpoint: ${JSON.stringify(e.api)} ${extra} })</script>`
}

/** A white RGB PNG of the given size (built by hand: no image library needed). */
function whitePng(width: number, height: number): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const len = Buffer.alloc(4)
    len.writeUInt32BE(data.length)
    const body = Buffer.concat([Buffer.from(type, 'ascii'), data])
    const crc = Buffer.alloc(4)
    crc.writeUInt32BE(Bun.hash.crc32(body) >>> 0)
    return Buffer.concat([len, body, crc])
  }
  const ihdr = Buffer.alloc(13)
  ihdr.writeUInt32BE(width, 0)
  ihdr.writeUInt32BE(height, 4)
  ihdr.set([8, 2, 0, 0, 0], 8)
  const row = Buffer.concat([Buffer.from([0]), Buffer.alloc(width * 3, 255)])
  const raw = Buffer.concat(Array.from({ length: height }, () => row))
  return Buffer.concat([Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]), chunk('IHDR', ihdr), chunk('IDAT', deflateSync(raw)), chunk('IEND', Buffer.alloc(0))])
}

test('console, errors and requests at their limits: bounded, scrubbed in the browser, accepted by the server', async () => {
  const e = env()
  const url = e.page('/limits', { mount: initMount(e, `, metadata: { notes: ${JSON.stringify('n'.repeat(3000))}, plan: 'pro' }`) })
  const { context, page } = await freshContext(e)
  try {
    await page.goto(url)
    await page.evaluate(async () => {
      document.cookie = 'sid=cookieVALUE123456; path=/'
      for (let i = 0; i < 700; i++) console.log(`line ${i} ` + 'x'.repeat(1500))
      console.debug('debug entry')
      console.info('the session is cookieVALUE123456, token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjMifQ.c2lnbmF0dXJlc2lnbmF0dXJl')
      await Promise.all(Array.from({ length: 80 }, (_, i) => fetch(`/missing/${i}?id=${i}&password=hunter2`).catch(() => {})))
      const xhr = new XMLHttpRequest()
      xhr.open('POST', '/xhr-missing?q=secret')
      await new Promise((resolve) => {
        xhr.onloadend = resolve
        xhr.send('{}')
      })
    })
    const w = widget(page)
    await w.launcher.click()
    await w.host.getByRole('checkbox', { name: 'Include a screenshot' }).uncheck()
    await w.text.fill('Limits report')
    await w.send.click()
    await w.host.getByRole('status').filter({ hasText: 'Thanks' }).waitFor()
    const item = await report(e, (await reports(e)).find((r: any) => r.text === 'Limits report').id)
    expect(item.consoleLogs).toHaveLength(500)
    expect(item.consoleLogs.every((l: any) => l.message.length <= 1000)).toBe(true)
    expect(item.consoleLogs.some((l: any) => l.level === 'debug' && l.message === 'debug entry')).toBe(true)
    const info = item.consoleLogs.find((l: any) => l.level === 'info').message
    expect(info).not.toContain('cookieVALUE123456')
    expect(info).not.toContain('eyJhbGciOiJIUzI1NiJ9')
    const meta = item.submissionMeta
    expect(Buffer.byteLength(JSON.stringify(meta))).toBeLessThanOrEqual(4096)
    expect(meta.notes).toHaveLength(3000)
    expect(meta.plan).toBe('pro')
    // The newest requests are kept; query values never leave the browser.
    expect(meta.network.length).toBeGreaterThan(0)
    expect(meta.network.length).toBeLessThan(81)
    expect(meta.network.at(-1)).toMatchObject({ method: 'POST', url: `${e.customer}/xhr-missing?q=`, status: 404 })
    expect(JSON.stringify(meta.network)).not.toContain('hunter2')
  } finally {
    await context.close()
  }
})

test('manual attach: the image is redacted and cropped in the browser before upload', async () => {
  const e = env()
  const url = e.page('/attach', { mount: initMount(e) })
  const { context, page } = await freshContext(e)
  try {
    await page.goto(url)
    const w = widget(page)
    await w.launcher.click()
    await w.text.fill('Attached image')
    await page.locator('fixloop-widget canvas').waitFor({ state: 'visible' })
    await w.host.getByLabel('Attach an image').setInputFiles({ name: 'shot.png', mimeType: 'image/png', buffer: whitePng(200, 100) })
    const preview = page.locator('fixloop-widget canvas')
    await page.waitForFunction(() => document.querySelector('fixloop-widget').shadowRoot.querySelector('canvas').width === 200)
    // Edited in the full-window editor, where the image is shown fitted (never enlarged): 200x100 at 1:1.
    await w.host.getByRole('button', { name: 'Edit screenshot' }).click()
    const box = (await preview.boundingBox())!
    expect(Math.round(box.width)).toBe(200)
    const scale = box.width / 200
    const at = (x: number, y: number) => [box.x + x * scale, box.y + y * scale] as const
    const drag = async (from: readonly [number, number], to: readonly [number, number]) => {
      await page.mouse.move(...from)
      await page.mouse.down()
      await page.mouse.move(...to, { steps: 4 })
      await page.mouse.up()
    }
    await drag(at(20, 10), at(80, 40)) // "Hide an area" is the default tool
    await w.host.getByRole('button', { name: 'Crop' }).click()
    await drag(at(0, 0), at(200, 50))
    await w.host.getByRole('button', { name: 'Done' }).click()
    await w.send.click()
    await w.host.getByRole('status').filter({ hasText: 'Thanks' }).waitFor()
    const item = await report(e, (await reports(e)).find((r: any) => r.text === 'Attached image').id)
    // The drag maps image pixels to fractional screen points: the crop may land a pixel off.
    expect(item.attachments[0]).toMatchObject({ kind: 'screenshot', width: 200 })
    expect(Math.abs(item.attachments[0].height - 50)).toBeLessThanOrEqual(1)
    const viewer = await context.newPage()
    const png = Buffer.from(await (await fetch(item.attachments[0].url)).arrayBuffer())
    await viewer.setContent(`<img src="data:image/png;base64,${png.toString('base64')}">`)
    const pixels = await viewer.evaluate(async () => {
      const img = document.querySelector('img')
      await img.decode()
      const c = document.createElement('canvas')
      c.width = img.naturalWidth
      c.height = img.naturalHeight
      const ctx = c.getContext('2d')
      ctx.drawImage(img, 0, 0)
      const px = (x: number, y: number) => Array.from(ctx.getImageData(x, y, 1, 1).data).slice(0, 3)
      return { inside: px(50, 25), outside: px(150, 25), size: [c.width, c.height] }
    })
    expect(pixels.size).toEqual([200, item.attachments[0].height])
    expect(pixels.inside).toEqual([0, 0, 0])
    expect(pixels.outside).toEqual([255, 255, 255])
  } finally {
    await context.close()
  }
})

test('screen capture refused or unavailable: the dialog comes back with the DOM screenshot and points to attaching a file', async () => {
  const e = env()
  const url = e.page('/capture', { mount: initMount(e) })
  // Headless Chromium has no screen to share: with the permission UI auto-accepted, the capture fails
  // with NotReadableError, the case of a refused or broken capture.
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu', '--use-fake-ui-for-media-stream', '--auto-accept-this-tab-capture'] })
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } })
  const page = await context.newPage()
  try {
    await page.goto(url)
    const w = widget(page)
    await w.launcher.click()
    await page.locator('fixloop-widget canvas').waitFor({ state: 'visible' })
    const capture = w.host.getByRole('button', { name: 'Capture my screen instead' })
    await capture.click()
    await w.host.getByText('You can attach an image instead').waitFor()
    await expect(w.dialog.isVisible()).resolves.toBe(true)
    await expect(page.locator('fixloop-widget canvas').isVisible()).resolves.toBe(true)
    await expect(capture.evaluate((b: any) => b.getRootNode().activeElement === b)).resolves.toBe(true)
  } finally {
    await browser.close()
  }
})

test('a slow request that succeeds is summarised too (slowRequestMs), a fast one is not', async () => {
  const e = env()
  e.routes.set('/api/slow', async () => {
    await Bun.sleep(1500)
    return new Response('{}')
  })
  e.routes.set('/api/fast', () => new Response('{}'))
  // A wide gap between the threshold and both requests: a loaded test machine can slow the fast one by
  // hundreds of milliseconds, never past a second.
  const url = e.page('/slow', { mount: initMount(e, ', slowRequestMs: 1000') })
  const { context, page } = await freshContext(e)
  try {
    await page.goto(url)
    await page.evaluate(() => Promise.all([fetch('/api/slow?user=42'), fetch('/api/fast')]))
    const w = widget(page)
    await w.launcher.click()
    await w.host.getByRole('checkbox', { name: 'Include a screenshot' }).uncheck()
    await w.text.fill('Slow page')
    await w.send.click()
    await w.host.getByRole('status').filter({ hasText: 'Thanks' }).waitFor()
    const item = await report(e, (await reports(e)).find((r: any) => r.text === 'Slow page').id)
    expect(item.submissionMeta.network).toHaveLength(1)
    expect(item.submissionMeta.network[0]).toMatchObject({ method: 'GET', url: `${e.customer}/api/slow?user=`, status: 200 })
    expect(item.submissionMeta.network[0].ms).toBeGreaterThanOrEqual(1000)
  } finally {
    await context.close()
  }
})

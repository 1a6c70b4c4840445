/**
 * A report's session replay in the dashboard, in Chromium against the compiled binary: a real recording
 * (made with @rrweb/record in Chromium: a page with text, a click, a console.error and a failed fetch,
 * plus the widget's custom events) plays in the replay frame; the timeline lists the console error and
 * the failed request and seeks; "Jump to the report" seeks to the report moment; keyboard only; axe
 * clean; a hostile recording (<script>, javascript: link, inline handlers, an image calling out) runs
 * nothing; a report without a replay never loads the replayer; damaged replays say so and leave the page
 * whole. Screenshots at 1280 and 375 px (FIXLOOP_SCREENSHOT_DIR, default test-output/).
 *
 * The server side of replays (kind "replay", the scrub) is another change: these tests store a report's
 * replay attachment by uploading the bytes as an ordinary attachment and then naming it a replay in the
 * report's row, as the server will list it.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { gzipSync } from 'node:zlib'
import { Database } from 'bun:sqlite'
import type { Browser, Frame, Page, Request } from 'playwright-core'
import { signInByKeyboard, launchBrowserEarly } from './browser'
import { call, freePort, ROOT, runBinary, tempDir } from './harness'
import { cliTenant, ensureBinary } from './helpers-lifecycle'
import { axeViolations, screenshots, settle, spawnWithStdout, submitReport, writePasswordFile, type SpawnedServer } from './dashboard-helpers'

const EMAIL = 'replay@example.com'
const PASSWORD = 'replay password 42'
const RECORDER = readFileSync(join(ROOT, 'node_modules/@rrweb/record/dist/record.umd.min.cjs'), 'utf8')

let dir: string
let server: SpawnedServer
let browser: Browser
let early: ReturnType<typeof launchBrowserEarly> | undefined
let page: Page
let tenant: Awaited<ReturnType<typeof cliTenant>>
let recording: { type: number; timestamp: number; data: any }[] = []
const pageErrors: string[] = []
/** Requests the hostile recording might make: none may arrive. */
const beaconHits: string[] = []
let beacon: ReturnType<typeof Bun.serve>
/** The report with the real recording as its replay. */
let replayId: string

/** The small shop page the fixture is recorded on (served by the test, recorded in Chromium). */
const SHOP_PAGE = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Shop</title>
<style>body { font-family: sans-serif; background: #fdf6e3; } h1 { color: #b58900; } .total { font-weight: bold; }</style>
<script src="/record.js"></script>
<script>
window.__events = []
rrwebRecord.record({ emit: (e) => window.__events.push(e) })
const tell = (tag, payload) => rrwebRecord.record.addCustomEvent(tag, payload)
</script></head>
<body><h1>Checkout</h1><p>Your cart holds 3 items.</p><p class="total" id="total">Total: 42.00 EUR</p>
<button id="pay" type="button">Pay now</button>
<script>
document.getElementById('pay').addEventListener('click', async () => {
  document.getElementById('total').textContent = 'Total: NaN EUR'
  console.error('Cart total is NaN')
  tell('fixloop.console', { level: 'error', message: 'Cart total is NaN' })
  const started = performance.now()
  const res = await fetch('/api/pay', { method: 'POST' })
  tell('fixloop.network', { method: 'POST', url: location.origin + '/api/pay', status: res.status, durationMs: Math.round(performance.now() - started) })
})
</script></body></html>`

/** Records the shop page in Chromium: load, wait, click Pay (error + failed request), wait, open the report. */
async function recordShop(): Promise<typeof recording> {
  const shop = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    fetch(req) {
      const path = new URL(req.url).pathname
      if (path === '/') return new Response(SHOP_PAGE, { headers: { 'content-type': 'text/html' } })
      if (path === '/record.js') return new Response(RECORDER, { headers: { 'content-type': 'text/javascript' } })
      if (path === '/api/pay') return new Response('{"error":"payment backend down"}', { status: 502, headers: { 'content-type': 'application/json' } })
      return new Response('not found', { status: 404 })
    },
  })
  const ctx = await browser.newContext({ viewport: { width: 1024, height: 640 } })
  try {
    const p = await ctx.newPage()
    await p.goto(`http://127.0.0.1:${shop.port}/`)
    await p.waitForTimeout(1200)
    await p.click('#pay')
    await p.waitForFunction(() => (window as any).__events.some((e: any) => e.type === 5 && e.data.tag === 'fixloop.network'))
    await p.waitForTimeout(1500)
    await p.evaluate(() => (window as any).rrwebRecord.record.addCustomEvent('fixloop.report', {}))
    await p.waitForTimeout(1000)
    // One last event so the recording runs past the report moment ("Jump to the report" is not the end).
    await p.evaluate(() => (window as any).rrwebRecord.record.addCustomEvent('fixloop.console', { level: 'info', message: 'report dialog shown' }))
    return (await p.evaluate(() => (window as any).__events)) as typeof recording
  } finally {
    await ctx.close()
    shop.stop(true)
  }
}

/**
 * A report whose attachments list `bytes` as its session replay: uploaded through the upload flow as an
 * ordinary attachment, then named a replay in the report's row (kind "replay", as the server lists it)
 * and marked scrubbed, so the player is tested on any bytes, including ones the scrub would refuse.
 */
async function reportWithReplay(text: string, bytes: Uint8Array, extra: Record<string, unknown> = {}, key?: string): Promise<string> {
  const ask = () => call(server.url, 'POST', '/v1/feedback/upload-url', { auth: tenant.pub, body: { contentType: 'application/json', byteSize: bytes.length, kind: 'attachment', filename: 'replay.json.gz' } })
  // A kept-alive connection the server closed while the test recorded the fixture: asked again once.
  const presign = await ask().catch(ask)
  expect(presign.status).toBe(200)
  expect((await fetch(presign.body.url, { method: 'PUT', headers: presign.body.headers, body: bytes })).status).toBeLessThan(300)
  const id = await submitReport(server.url, tenant.pub, text, { attachments: [{ key: presign.body.key, kind: 'attachment', contentType: 'application/json', byteSize: bytes.length }], ...extra })
  const db = new Database(join(dir, 'fixloop.db'))
  try {
    db.run('PRAGMA busy_timeout = 10000')
    const replay = { key: key ?? presign.body.key, kind: 'replay', contentType: 'application/gzip', byteSize: bytes.length }
    db.run('UPDATE feedback SET attachments = ? WHERE id = ?', [JSON.stringify([replay]), id])
    // The server lists a replay's URL only once it has scrubbed it (docs/api.md "Reading a replay"): the
    // upload is marked a scrubbed replay, so the player gets exactly these bytes, damaged ones included.
    db.run("UPDATE uploads SET kind = 'replay', replay_state = 'ready' WHERE key = ?", [presign.body.key])
  } finally {
    db.close()
  }
  return id
}

const gz = (value: unknown) => new Uint8Array(gzipSync(typeof value === 'string' ? value : JSON.stringify(value)))

/** The frame rrweb rebuilt the recording into (inside the dashboard's replay frame). */
async function recordedFrame(p: Page): Promise<Frame> {
  for (let i = 0; i < 100; i++) {
    const f = p.frames().find((x) => x.parentFrame() && x.parentFrame()!.url().endsWith('/admin/replay-frame'))
    if (f) return f
    await p.waitForTimeout(100)
  }
  throw new Error('no recorded frame')
}

const timeText = () => page.locator('.replay-time').textContent()

async function openReport(id: string, p: Page = page) {
  await p.goto(`${server.url}/admin/o/${tenant.orgId}/r/${id}`)
  await p.getByRole('heading', { name: 'Session replay' }).waitFor()
}

async function playerReady(p: Page = page) {
  await p.getByRole('button', { name: 'Play', exact: true }).and(p.locator(':enabled')).waitFor({ timeout: 20_000 })
}

beforeAll(async () => {
  early = launchBrowserEarly()
  ensureBinary()
  dir = tempDir('fixloop-dash-replay-')
  tenant = await cliTenant(dir)
  const admin = await runBinary(['admin', 'create', '--email', EMAIL, '--password-file', writePasswordFile(dir, 'pw', PASSWORD), '--data-dir', dir])
  expect(admin.code).toBe(0)
  server = await spawnWithStdout(dir, { FIXLOOP_RATE_LIMIT_MULTIPLIER: '100' })
  beacon = Bun.serve({
    port: await freePort(),
    hostname: '127.0.0.1',
    fetch(req) {
      beaconHits.push(new URL(req.url).pathname)
      return new Response('ok', { headers: { 'access-control-allow-origin': '*' } })
    },
  })
  browser = await early.ready
  recording = await recordShop()
  replayId = await reportWithReplay('Paying shows NaN and nothing happens', gz({ v: 1, events: recording }))
  page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage()
  page.on('pageerror', (e) => pageErrors.push(e.message))
  await signInByKeyboard(page, server.url, EMAIL, PASSWORD)
})

afterAll(async () => {
  await early?.close()
  await server?.stop()
  beacon?.stop(true)
  rmSync(dir, { recursive: true, force: true })
})

describe('session replay on the report page', () => {
  test('the fixture is a real rrweb recording: meta, full snapshot, a click, the widget’s custom events', () => {
    const types = new Set(recording.map((e) => e.type))
    expect(types.has(4) && types.has(2) && types.has(3)).toBe(true)
    const tags = recording.filter((e) => e.type === 5).map((e) => e.data.tag)
    expect(tags).toEqual(['fixloop.console', 'fixloop.network', 'fixloop.report', 'fixloop.console'])
  })

  test('the player renders the recorded page; the timeline lists the console error and the failed request, and seeks', async () => {
    const requests: string[] = []
    page.on('request', (r) => requests.push(new URL(r.url()).pathname))
    await openReport(replayId)
    await playerReady()
    expect(requests.some((u) => u.startsWith('/admin/assets/rrweb.'))).toBe(true)
    const inner = await recordedFrame(page)
    // rrweb's iframe: sandboxed with exactly allow-same-origin (no allow-scripts).
    const sandbox = await page.frameLocator('iframe.replay-frame').locator('iframe').getAttribute('sandbox')
    expect(sandbox).toBe('allow-same-origin')
    await inner.getByText('Your cart holds 3 items.').waitFor()
    expect(await inner.locator('#total').textContent()).toBe('Total: 42.00 EUR')

    const timeline = page.getByRole('list', { name: 'Console and network' })
    const error = timeline.getByRole('button', { name: /console\.error Cart total is NaN/ })
    const failed = timeline.getByRole('button', { name: /POST http:\/\/127\.0\.0\.1:\d+\/api\/pay → 502/ })
    await error.waitFor()
    await failed.waitFor()
    expect(await timeline.getByRole('button', { name: /report The reporter opened the report dialog/ }).count()).toBe(1)

    const before = await timeText()
    expect(before).toStartWith('0:00.0 / ')
    await failed.click()
    await page.waitForFunction((b) => document.querySelector('.replay-time')!.textContent !== b, before)
    expect(await timeText()).not.toBe(before)
    // After the click the recorded page shows what the reporter saw.
    await inner.locator('#total', { hasText: 'Total: NaN EUR' }).waitFor()
    expect(await failed.getAttribute('aria-current')).toBe('time')

    // "Jump to the report": the report moment, not the end of the recording.
    const start = recording[0].timestamp
    const reportAt = recording.find((e) => e.type === 5 && e.data.tag === 'fixloop.report')!.timestamp - start
    const fmt = (ms: number) => `${Math.floor(ms / 60000)}:${String(Math.floor(ms / 1000) % 60).padStart(2, '0')}.${Math.floor((ms % 1000) / 100)}`
    await page.getByRole('button', { name: 'Jump to the report' }).click()
    await page.waitForFunction((t) => document.querySelector('.replay-time')!.textContent!.startsWith(t), fmt(reportAt))
    expect(await timeline.getByRole('button', { name: /report The reporter/ }).getAttribute('aria-current')).toBe('time')
  })

  test('keyboard only: Tab reaches every control; Enter plays, pauses and seeks; focus is visible', async () => {
    await openReport(replayId)
    await playerReady()
    const play = page.getByRole('button', { name: 'Play', exact: true })
    await play.focus()
    const outline = await play.evaluate((el) => getComputedStyle(el).outlineStyle)
    expect(outline).not.toBe('none')
    // From Play, Tab walks the slider, the speed, Jump, then the timeline entries.
    const order: string[] = []
    for (let i = 0; i < 6; i++) {
      await page.keyboard.press('Tab')
      order.push(await page.evaluate(() => {
        const a = document.activeElement as HTMLElement
        const label = a.getAttribute('aria-label') || (a.closest('label') ? 'Speed' : a.textContent!.trim().replace(/\s+/g, ' '))
        return label
      }))
    }
    expect(order[0]).toBe('Position in the replay')
    expect(order[1]).toBe('Speed')
    expect(order[2]).toBe('Jump to the report')
    expect(order[3]).toContain('console.error Cart total is NaN')
    // Enter on an entry seeks.
    const before = await timeText()
    await page.keyboard.press('Enter')
    await page.waitForFunction((b) => document.querySelector('.replay-time')!.textContent !== b, before)
    // The slider moves by keyboard too.
    await page.getByRole('slider', { name: 'Position in the replay' }).focus()
    const atSlider = await timeText()
    await page.keyboard.press('End')
    await page.waitForFunction((b) => document.querySelector('.replay-time')!.textContent !== b, atSlider)
    // Speed by keyboard, then Play and Pause with Enter / Space.
    await page.getByRole('combobox', { name: 'Speed' }).focus()
    await page.keyboard.press('ArrowDown')
    expect(await page.getByRole('combobox', { name: 'Speed' }).inputValue()).toBe('2')
    await page.getByRole('slider', { name: 'Position in the replay' }).focus()
    await page.keyboard.press('Home')
    await page.waitForFunction(() => document.querySelector('.replay-time')!.textContent!.startsWith('0:00.0'))
    await play.focus()
    await page.keyboard.press('Enter')
    await page.getByRole('button', { name: 'Pause', exact: true }).waitFor()
    await page.waitForFunction(() => !document.querySelector('.replay-time')!.textContent!.startsWith('0:00.0'))
    await page.keyboard.press('Space')
    await page.getByRole('button', { name: 'Play', exact: true }).waitFor()
  })

  test('axe-core clean; screenshots at 1280 and 375 px: the player scales down, the timeline goes below', async () => {
    await openReport(replayId)
    await playerReady()
    await page.getByRole('button', { name: /POST .*502/ }).click()
    await settle(page)
    expect(await axeViolations(page)).toEqual([])
    expect(await screenshots(page, 'report-replay')).toEqual([])
    await page.setViewportSize({ width: 375, height: 740 })
    await page.waitForTimeout(300)
    const stage = await page.locator('.replay-stage').boundingBox()
    const events = await page.locator('.replay-events').boundingBox()
    expect(stage!.width).toBeLessThanOrEqual(375)
    expect(events!.y).toBeGreaterThan(stage!.y + stage!.height - 1)
    const frame = await page.locator('iframe.replay-frame').boundingBox()
    expect(frame!.width).toBeLessThanOrEqual(375)
    await page.setViewportSize({ width: 1280, height: 800 })
    const wide = await page.locator('.replay-events').boundingBox()
    const wideStage = await page.locator('.replay-stage').boundingBox()
    expect(wide!.x).toBeGreaterThan(wideStage!.x + wideStage!.width - 1)
    if (process.env.FIXLOOP_REPLAY_SHOTS) {
      await page.locator('.replay-section').scrollIntoViewIfNeeded()
      await page.screenshot({ path: `${process.env.FIXLOOP_REPLAY_SHOTS}-1280.png` })
      await page.setViewportSize({ width: 375, height: 740 })
      await page.waitForTimeout(300)
      await page.locator('.replay-section').scrollIntoViewIfNeeded()
      await page.screenshot({ path: `${process.env.FIXLOOP_REPLAY_SHOTS}-375.png` })
      await page.setViewportSize({ width: 1280, height: 800 })
    }
  })

  test('a hostile recording runs nothing: <script>, javascript: link, onerror, onclick, an image calling out', async () => {
    const events = structuredClone(recording)
    const full = events.find((e) => e.type === 2)!
    let maxId = 0
    const walk = (n: any) => {
      maxId = Math.max(maxId, n.id)
      for (const c of n.childNodes || []) walk(c)
    }
    walk(full.data.node)
    const find = (n: any, tag: string): any => (n.tagName === tag ? n : (n.childNodes || []).map((c: any) => find(c, tag)).find(Boolean))
    const body = find(full.data.node, 'body')
    const hit = (what: string) => `window.top.__pwned = '${what}'; parent.__pwned = '${what}'; new Image().src = 'http://127.0.0.1:${beacon.port}/${what}'; fetch('http://127.0.0.1:${beacon.port}/${what}-fetch')`
    const el = (tagName: string, attributes: Record<string, string>, children: any[] = []) => ({ type: 2, tagName, attributes, childNodes: children, id: ++maxId })
    const txt = (textContent: string) => ({ type: 3, textContent, id: ++maxId })
    body.childNodes.push(
      el('script', {}, [txt(hit('script'))]),
      el('img', { src: 'data:image/png;base64,AAAA', onerror: hit('onerror') }),
      el('img', { src: `http://127.0.0.1:${beacon.port}/img` }),
      el('a', { id: 'evil-link', href: `javascript:${hit('href')}` }, [txt('Evil link')]),
      el('button', { id: 'evil-button', onclick: hit('onclick'), onfocus: hit('onfocus'), autofocus: '' }, [txt('Evil button')]),
      el('div', { id: 'evil-div', onmouseover: hit('onmouseover') }, [txt('Hostile text rendered')]),
      el('iframe', { srcdoc: `<script>${hit('srcdoc')}</script>` }),
    )
    const id = await reportWithReplay('A recording with scripts in it', gz({ v: 1, events }))
    await openReport(id)
    await playerReady()
    const inner = await recordedFrame(page)
    await inner.getByText('Hostile text rendered').waitFor()
    await page.getByRole('button', { name: 'Jump to the report' }).click()
    await inner.locator('#evil-link').dispatchEvent('click')
    await inner.locator('#evil-link').focus()
    await page.keyboard.press('Enter')
    await inner.locator('#evil-button').dispatchEvent('click')
    await inner.locator('#evil-button').focus()
    await inner.locator('#evil-div').dispatchEvent('mouseover')
    await page.getByRole('button', { name: 'Play', exact: true }).click()
    await page.waitForTimeout(1500)
    const flags = await Promise.all(page.frames().map((f) => f.evaluate(() => (window as any).__pwned ?? null).catch(() => null)))
    expect(flags).toEqual(page.frames().map(() => null))
    expect(await page.evaluate(() => (window as any).__pwned ?? null)).toBeNull()
    expect(beaconHits).toEqual([])
    // The dashboard is still whole.
    await page.getByRole('heading', { name: 'History' }).waitFor()
  })

  test('a hostile recording reaches no URL of this server: stylesheets, @import, prefetch (also added and set later)', async () => {
    // Found by the web attack of attack-web: the recorded frame inherited style-src 'self', and Chromium
    // checks no policy for <link rel=prefetch>, so a recording made the operator's browser GET any URL
    // of this server with their cookies (/admin/oidc/start replaced a sign-in or confirmation under way).
    const events = structuredClone(recording)
    const full = events.find((e) => e.type === 2)!
    let maxId = 0
    const walk = (n: any) => {
      maxId = Math.max(maxId, n.id)
      for (const c of n.childNodes || []) walk(c)
    }
    walk(full.data.node)
    const find = (n: any, tag: string): any => (n.tagName === tag ? n : (n.childNodes || []).map((c: any) => find(c, tag)).find(Boolean))
    const head = find(full.data.node, 'head')
    const body = find(full.data.node, 'body')
    const probe = (what: string) => `/admin/replay-probe-${what}`
    const el = (tagName: string, attributes: Record<string, string>, children: any[] = []) => ({ type: 2, tagName, attributes, childNodes: children, id: ++maxId })
    const later = el('link', { rel: 'prefetch' })
    head.childNodes.push(
      el('link', { rel: 'stylesheet', href: probe('stylesheet') }),
      el('link', { rel: 'prefetch', href: probe('prefetch') }),
      el('link', { rel: 'preload', as: 'style', href: probe('preload') }),
      el('style', {}, [{ type: 3, textContent: `@import url(${probe('import')}); body { background: url(${probe('background')}) }`, isStyle: true, id: ++maxId }]),
      later,
    )
    body.childNodes.push({ type: 3, textContent: 'Probing the server', id: ++maxId })
    const at = full.timestamp + 50
    const addedId = ++maxId
    events.push({
      type: 3,
      timestamp: at,
      data: {
        source: 0,
        texts: [],
        removes: [],
        adds: [{ parentId: body.id, nextId: null, node: { type: 2, tagName: 'link', attributes: { rel: 'prefetch', href: probe('added') }, childNodes: [], id: addedId } }],
        attributes: [{ id: later.id, attributes: { href: probe('set-later') } }],
      },
    })
    events.sort((a, b) => a.timestamp - b.timestamp)
    const id = await reportWithReplay('A recording that calls this server', gz({ v: 1, events }))
    // Every request the recording starts, less those the policy blocked before they left the browser (a
    // stylesheet of the wrong type is refused only after the server answered it: that one counts).
    const reached: string[] = []
    const probed = (r: Request) => r.url().includes('/admin/replay-probe-')
    const onRequest = (r: Request) => probed(r) && reached.push(new URL(r.url()).pathname)
    const onFailed = (r: Request) => {
      if (probed(r) && r.failure()?.errorText === 'csp') reached.splice(reached.indexOf(new URL(r.url()).pathname), 1)
    }
    page.on('request', onRequest)
    page.on('requestfailed', onFailed)
    try {
      await openReport(id)
      await playerReady()
      const inner = await recordedFrame(page)
      await inner.getByText('Probing the server').waitFor()
      await page.getByRole('button', { name: 'Play', exact: true }).click()
      await page.waitForTimeout(2500)
      await page.getByRole('button', { name: 'Jump to the report' }).click()
      await page.waitForTimeout(1000)
    } finally {
      page.off('request', onRequest)
      page.off('requestfailed', onFailed)
    }
    expect(reached.sort()).toEqual([])
    // The recording still looks like itself: rrweb's and the frame's styles are inline in the frame now.
    const res = await fetch(server.url + '/admin/replay-frame')
    expect(res.headers.get('content-security-policy')).toContain("style-src 'unsafe-inline';")
    expect(await res.text()).not.toContain('rel="stylesheet"')
  })

  test('a report without a replay never loads the replayer (network log)', async () => {
    const id = await submitReport(server.url, tenant.pub, 'No replay here, just text', {})
    const requests: string[] = []
    const listen = (r: { url(): string }) => requests.push(new URL(r.url()).pathname)
    page.on('request', listen)
    await page.goto(`${server.url}/admin/o/${tenant.orgId}/r/${id}`)
    await page.getByRole('heading', { name: 'History' }).waitFor()
    await settle(page)
    page.off('request', listen)
    expect(requests.some((u) => u.startsWith('/admin/assets/report.'))).toBe(true)
    expect(requests.filter((u) => u.startsWith('/admin/assets/rrweb') || u === '/admin/replay-frame')).toEqual([])
    expect(await page.getByRole('heading', { name: 'Session replay' }).count()).toBe(0)
  })

  test('damaged replays say why and leave the page whole: junk, damaged gzip, gzip of non-JSON, deep nesting', async () => {
    const deepNode: any = { type: 2, tagName: 'div', attributes: {}, childNodes: [], id: 100 }
    let at = deepNode
    for (let i = 0; i < 3000; i++) {
      const next = { type: 2, tagName: 'div', attributes: {}, childNodes: [], id: 101 + i }
      at.childNodes.push(next)
      at = next
    }
    const deepRecording = structuredClone(recording)
    const full = deepRecording.find((e) => e.type === 2)!
    full.data.node.childNodes.at(-1).childNodes.push(deepNode)
    const cases: [string, Uint8Array, RegExp][] = [
      ['junk bytes', new Uint8Array([0xff, 0xfe, 0x00, 0x81, 0x9c, 0x12, 0xc3, 0x28, 0x00]), /cannot be played: it is neither gzip nor UTF-8 JSON/],
      ['damaged gzip', new Uint8Array([0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0xde, 0xad, 0xbe, 0xef]), /cannot be played: its gzip data is damaged/],
      ['gzip of non-JSON', gz('<html><body>not a recording</body></html>'), /cannot be played: it is not JSON/],
      ['JSON that is no recording', gz({ v: 2, frames: [] }), /cannot be played: it is not a recording/],
      ['deeply nested JSON', gz('{"v":1,"events":' + '['.repeat(200_000) + ']'.repeat(200_000) + '}'), /cannot be played: /],
      ['a deeply nested page', gz({ v: 1, events: deepRecording }), /cannot be played: it is nested too deeply/],
    ]
    for (const [name, bytes, message] of cases) {
      const id = await reportWithReplay(`Damaged replay: ${name}`, bytes)
      pageErrors.length = 0
      await openReport(id)
      const section = page.getByRole('region', { name: 'Session replay' })
      const alert = section.getByRole('alert')
      await alert.waitFor({ timeout: 20_000 })
      expect({ name, text: await alert.textContent() }).toEqual({ name, text: expect.stringMatching(message) })
      await page.getByRole('heading', { name: 'History' }).waitFor()
      expect(await page.locator('iframe.replay-frame').count()).toBe(0)
      expect(pageErrors).toEqual([])
    }
    expect(await axeViolations(page)).toEqual([])
  })

  test('a replay not ready yet: no download URL, or a refused download, says the replay is being prepared', async () => {
    // A replay the server has not scrubbed yet: listed with replayState "pending" and no download URL. (Its
    // upload is detached from the report too, so no scrub run picks it up while the page is looked at.)
    const pending = await reportWithReplay('Replay still pending', gz({ v: 1, events: recording }))
    const pendingKey = JSON.parse((new Database(join(dir, 'fixloop.db'), { readonly: true }).query('SELECT attachments FROM feedback WHERE id = ?').get(pending) as { attachments: string }).attachments)[0].key
    const db = new Database(join(dir, 'fixloop.db'))
    try {
      db.run('PRAGMA busy_timeout = 10000')
      db.run("UPDATE uploads SET replay_state = 'pending', feedback_id = NULL WHERE key = ?", [pendingKey])
    } finally {
      db.close()
    }
    await openReport(pending)
    await page.getByRole('region', { name: 'Session replay' }).getByRole('status').filter({ hasText: 'being prepared' }).waitFor()
    // A download answering non-2xx (the object is not there: 404).
    const refused = await reportWithReplay('Replay refused', gz({ v: 1, events: recording }))
    const key = JSON.parse((new Database(join(dir, 'fixloop.db'), { readonly: true }).query('SELECT attachments FROM feedback WHERE id = ?').get(refused) as { attachments: string }).attachments)[0].key
    rmSync(join(dir, 'blobs', key), { force: true })
    await openReport(refused)
    const status = page.getByRole('region', { name: 'Session replay' }).getByRole('status').filter({ hasText: 'being prepared' })
    await status.waitFor()
    expect(await status.textContent()).toContain('HTTP 404')
    expect(await axeViolations(page)).toEqual([])
  })

  test('the replay frame’s own policy: scripts only from the server, framed by the dashboard only', async () => {
    const res = await fetch(server.url + '/admin/replay-frame')
    expect(res.status).toBe(200)
    const csp = res.headers.get('content-security-policy')!
    expect(csp).toContain("script-src 'self'")
    expect(csp).toContain("frame-ancestors 'self'")
    expect(res.headers.get('x-frame-options')).toBe('SAMEORIGIN')
    expect(csp).toContain('img-src data: blob:')
    expect(csp).not.toContain("'unsafe-eval'")
    // The replayer is an immutable asset, sent gzipped to a browser that accepts it (all do).
    const rrwebUrl = /\/admin\/assets\/rrweb\.[0-9a-f]{12}\.js/.exec(await res.text())![0]
    const packed = await fetch(server.url + rrwebUrl, { headers: { 'accept-encoding': 'gzip' }, decompress: false } as RequestInit)
    expect(packed.headers.get('content-encoding')).toBe('gzip')
    expect(packed.headers.get('cache-control')).toBe('public, max-age=31536000, immutable')
    const gzBytes = (await packed.arrayBuffer()).byteLength
    const plain = await fetch(server.url + rrwebUrl, { headers: { 'accept-encoding': 'identity' }, decompress: false } as RequestInit)
    expect(plain.headers.get('content-encoding')).toBeNull()
    const plainText = await plain.text()
    expect(plainText).toContain('Replayer')
    expect(gzBytes).toBeLessThan(plainText.length / 2)
    // The dashboard's own pages keep their strict styles and still refuse to be framed.
    const shellRes = await fetch(server.url + '/admin')
    expect(shellRes.headers.get('x-frame-options')).toBe('DENY')
    const shell = shellRes.headers.get('content-security-policy')!
    expect(shell).toContain("style-src 'self';")
    expect(shell).toContain("frame-ancestors 'none'")
    expect(shell).toContain("frame-src 'self'")
  })
})

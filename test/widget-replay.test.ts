/**
 * Session replay in the browser widget (issue 39.1), in Chromium against the compiled binary: the replay
 * chunk is loaded only when the App has replay on; "masked" records none of the page's text, input values
 * or image bytes; "inputs" records the page's text but no input value; passwords never; the memory stays
 * under its cap on a busy page; offline then online sends one report with one replay; beforeSend can drop
 * the replay; a server that refuses the replay still gets the report.
 *
 * The server side (the App's setting behind GET /v1/widget/config, upload kind "replay") is built on
 * another branch. Here a small reverse proxy in front of the binary answers GET /v1/widget/config and takes
 * the replay's upload-url + PUT itself (keeping the bytes the widget sent), strips the replay attachment
 * from the submission and forwards everything else to the binary unchanged.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { gunzipSync } from 'node:zlib'
import type { Page } from 'playwright-core'
import { eventually } from './harness'
import { decodeReplay, replayTimeline } from '../src/agent/replay-timeline'
import { freshContext, reports, watchPage, widget, widgetEnv, type WidgetEnv } from './widget-fixture'

const env = widgetEnv()

interface ProxyState {
  config: unknown
  configStatus: number
  configRequests: number
  /** upload-url bodies of kind "replay". */
  replayUploads: Record<string, unknown>[]
  /** The bytes of every replay PUT. */
  puts: Buffer[]
  /** Every submission: its text and the replay attachments it referenced. */
  submitted: { text: string; replays: { key: string; kind: string; contentType: string; byteSize: number }[] }[]
  /** Answer a replay's upload-url with 400 (a server without replay support). */
  refuseReplay: boolean
}

let proxyUrl = ''
let stopProxy: (() => void) | undefined
const state: ProxyState = { config: {}, configStatus: 200, configRequests: 0, replayUploads: [], puts: [], submitted: [], refuseReplay: false }

function reset(config: unknown, configStatus = 200): void {
  Object.assign(state, { config, configStatus, configRequests: 0, replayUploads: [], puts: [], submitted: [], refuseReplay: false })
}

beforeAll(() => {
  const e = env()
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(req) {
      const url = new URL(req.url)
      const cors = {
        'access-control-allow-origin': req.headers.get('origin') ?? '*',
        'access-control-allow-headers': 'authorization, content-type',
        'access-control-allow-methods': 'GET, PUT, OPTIONS',
        vary: 'origin',
      }
      const stubbed = url.pathname === '/v1/widget/config' || url.pathname.startsWith('/__replay/')
      if (stubbed && req.method === 'OPTIONS') return new Response(null, { status: 204, headers: cors })
      if (url.pathname === '/v1/widget/config') {
        state.configRequests++
        if (req.headers.get('authorization') !== `Bearer ${e.tenant.pub}`) return Response.json({ error: { code: 'unauthorized', message: 'key' } }, { status: 401, headers: cors })
        return Response.json(state.config, { status: state.configStatus, headers: { ...cors, 'cache-control': 'public, max-age=60' } })
      }
      if (url.pathname.startsWith('/__replay/') && req.method === 'PUT') {
        state.puts.push(Buffer.from(await req.arrayBuffer()))
        return new Response(null, { status: 200, headers: cors })
      }
      let body = req.method === 'GET' || req.method === 'HEAD' ? undefined : Buffer.from(await req.arrayBuffer())
      if (url.pathname === '/v1/feedback/upload-url' && req.method === 'POST' && body) {
        const json = JSON.parse(body.toString())
        if (json.kind === 'replay') {
          state.replayUploads.push(json)
          const allow = { 'access-control-allow-origin': req.headers.get('origin') ?? '*', vary: 'origin' }
          if (state.refuseReplay) return Response.json({ error: { code: 'validation_error', message: 'kind must be screenshot, attachment or recording' } }, { status: 400, headers: allow })
          const n = state.replayUploads.length
          return Response.json({ key: `replay-stub-${n}`, url: `${proxyUrl}/__replay/${n}`, method: 'PUT', headers: { 'content-type': 'application/gzip' } }, { headers: allow })
        }
      }
      if (url.pathname === '/v1/feedback' && req.method === 'POST' && body) {
        const json = JSON.parse(body.toString())
        const all = (json.attachments ?? []) as { kind: string }[]
        state.submitted.push({ text: json.text, replays: all.filter((a) => a.kind === 'replay') as ProxyState['submitted'][number]['replays'] })
        const rest = all.filter((a) => a.kind !== 'replay')
        if (rest.length) json.attachments = rest
        else delete json.attachments
        body = Buffer.from(JSON.stringify(json))
      }
      const headers = new Headers(req.headers)
      headers.delete('host')
      headers.delete('content-length')
      const res = await fetch(e.api + url.pathname + url.search, { method: req.method, headers, body, redirect: 'manual' })
      const out = new Headers(res.headers)
      out.delete('content-encoding')
      out.delete('content-length')
      return new Response(res.body, { status: res.status, headers: out })
    },
  })
  proxyUrl = `http://127.0.0.1:${server.port}`
  stopProxy = () => server.stop(true)
})
afterAll(() => stopProxy?.())

const PNG_BASE64 = 'iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAFklEQVR4nGP8z8DAwMDAxMDAwMDAAAANHQEDasKb6QAAAABJRU5ErkJggg=='

/** The page under test: text, a form (email, password, card number), an image, a canvas, block/mask classes. */
const BODY = `
<main>
  <h1>Zephyrine quarterly ledger</h1>
  <p>Tangerine invoice for Okonkwo Bartholomew, card 4242 4242 4242 4242 on file.</p>
  <form>
    <label>Email <input id="email" type="email" placeholder="Marmalade address"></label>
    <label>Password <input id="pw" type="password"></label>
    <label>Card <input id="card" autocomplete="cc-number"></label>
    <input type="hidden" name="csrf" value="CsrfGrapefruitToken">
    <label>Promo <input id="promo" type="promo-code" value="PlatypusCode"></label>
    <label><input id="consent" type="checkbox" checked> Newsletter</label>
    <label><input id="condition" type="checkbox"> Heart condition</label>
    <label><input id="plan-a" type="radio" name="plan" checked> Plan A</label>
    <label><input id="plan-b" type="radio" name="plan"> Plan B</label>
  </form>
  <img id="logo" src="data:image/png;base64,${PNG_BASE64}" alt="Gooseberry logo" width="40" height="30">
  <canvas id="cv" width="60" height="40"></canvas>
  <p class="fixloop-block">Pumpernickel blocked paragraph</p>
  <p class="fixloop-mask">Quokka masked paragraph</p>
</main>
<script>
  const ctx = document.getElementById('cv').getContext('2d'); ctx.fillStyle = '#c00'; ctx.fillRect(0, 0, 60, 40)
</script>`

function mount(extra = ''): string {
  return `<script src="${proxyUrl}/widget.js"></script>
<script>Fixloop.init({ publicKey: ${JSON.stringify(env().tenant.pub)}, endpoint: ${JSON.stringify(proxyUrl)}, screenshot: false ${extra} })</script>`
}

const recorderReady = (page: Page) => page.waitForFunction(() => !!(window as any)[Symbol.for('fixloop.recorder')], undefined, { timeout: 10_000 })
const stats = (page: Page) => page.evaluate(() => (window as any)[Symbol.for('fixloop.recorder')].stats())

/** Types into the form as a user does; the password field is then shown as text ("show password") and typed into again. */
async function fillForm(page: Page): Promise<void> {
  await page.locator('#email').pressSequentially('wisteria.secret@example.org')
  await page.locator('#pw').pressSequentially('Hunter2Cobalt')
  await page.locator('#card').pressSequentially('5555 4444 3333 1111')
  await page.evaluate(() => ((document.getElementById('pw') as HTMLInputElement).type = 'text'))
  await page.locator('#pw').pressSequentially('RevealedSaffron')
  await page.locator('#condition').check()
  await page.locator('#plan-b').check()
  await page.locator('#consent').uncheck()
  await page.evaluate(() => {
    console.error('Nebula console failure')
    return fetch('/no-such-route').catch(() => undefined)
  })
}

async function sendReport(page: Page, text: string): Promise<void> {
  const w = widget(page)
  await w.launcher.click()
  await w.text.fill(text)
  await w.send.click()
  await w.host.getByRole('status').filter({ hasText: /Thanks|saved on this device/ }).waitFor({ timeout: 20_000 })
}

/** The replay the widget uploaded, decompressed and parsed, and its raw JSON text. */
function storedReplay(index = 0): { json: { v: number; events: { type: number; timestamp: number; data: any }[] }; text: string } {
  const text = gunzipSync(state.puts[index]).toString('utf8')
  return { json: JSON.parse(text), text }
}

const withText = async (e: WidgetEnv, text: string) => (await reports(e)).filter((r: any) => r.text === text)

test('masked: no page text, no input value, no image bytes; blocked and masked classes; console, network and report events merged', async () => {
  const e = env()
  reset({ replay: { mode: 'masked', seconds: 30 } })
  const url = e.page('/replay-masked', { body: BODY, mount: mount() })
  const { context, page } = await freshContext(e)
  try {
    await page.goto(url)
    await recorderReady(page)
    await fillForm(page)
    await sendReport(page, 'Masked replay report Lumberjack')
    await eventually(async () => (await withText(e, 'Masked replay report Lumberjack')).length === 1, 15_000)
    expect(state.replayUploads).toEqual([{ kind: 'replay', contentType: 'application/gzip', byteSize: state.puts[0].length, filename: 'replay.json.gz' }])
    expect(state.puts).toHaveLength(1)
    expect(state.submitted.at(-1)!.replays).toEqual([{ key: 'replay-stub-1', kind: 'replay', contentType: 'application/gzip', byteSize: state.puts[0].length }])
    const { json, text } = storedReplay()
    expect(json.v).toBe(1)
    expect(json.events[0].type).toBe(4) // Meta, then the full snapshot: replayable from the start
    expect(json.events.some((ev) => ev.type === 2)).toBe(true)
    for (let i = 1; i < json.events.length; i++) expect(json.events[i].timestamp).toBeGreaterThanOrEqual(json.events[i - 1].timestamp)
    // None of the page's text (text nodes and text attributes), no input value, no image bytes.
    for (const secret of ['Zephyrine', 'Tangerine', 'Okonkwo', '4242 4242', 'Marmalade', 'Gooseberry', 'wisteria', 'Hunter2', 'Cobalt', '4444 3333', 'Revealed', 'Saffron', 'Grapefruit', 'Platypus', 'Pumpernickel', 'Quokka', 'Lumberjack', PNG_BASE64.slice(0, 24), 'data:image']) {
      expect(text).not.toContain(secret)
    }
    // The image and canvas are placeholders of their size.
    expect(text).toMatch(/"rr_width":"40px","rr_height":"30px"/)
    expect(text).toMatch(/"rr_width":"60px","rr_height":"40px"/)
    const custom = json.events.filter((ev) => ev.type === 5).map((ev) => ev.data)
    expect(custom).toContainEqual({ tag: 'fixloop.console', payload: { level: 'error', message: 'Nebula console failure' } })
    expect(custom.find((c) => c.tag === 'fixloop.network')?.payload).toMatchObject({ method: 'GET', url: `${e.customer}/no-such-route`, status: 404 })
    expect(custom.filter((c) => c.tag === 'fixloop.report')).toEqual([{ tag: 'fixloop.report', payload: {} }])
    // Nothing of the widget's own shadow DOM (the dialog's strings).
    expect(text).not.toContain('Describe the problem')
    // The agent's reader (src/agent/replay-timeline.ts) reads what the widget stored.
    const timeline = replayTimeline(decodeReplay(new Uint8Array(state.puts[0]))!, (s) => s).join('\n')
    expect(timeline).toContain('Nebula console failure')
    expect(timeline).toMatch(/404/)
  } finally {
    await context.close()
  }
})

test('inputs: the page text is recorded, input values never (passwords included, also once shown as text)', async () => {
  const e = env()
  reset({ replay: { mode: 'inputs', seconds: 30 } })
  const url = e.page('/replay-inputs', { body: BODY, mount: mount() })
  const { context, page } = await freshContext(e)
  try {
    await page.goto(url)
    await recorderReady(page)
    await fillForm(page)
    await sendReport(page, 'Inputs replay report')
    await eventually(() => state.puts.length === 1, 15_000)
    const { text } = storedReplay()
    for (const shown of ['Zephyrine', 'Tangerine', 'Okonkwo', 'Marmalade']) expect(text).toContain(shown)
    for (const secret of ['wisteria', 'Hunter2', 'Cobalt', '4444 3333', 'Revealed', 'Saffron', 'Grapefruit', 'Platypus', 'Pumpernickel', 'Quokka']) expect(text).not.toContain(secret)
    // Nothing of the widget itself: its shadow DOM, its stylesheets, the report's text.
    for (const own of ['Describe the problem', 'Report a problem', 'fl-text', '--fixloop-accent', 'Inputs replay report']) expect(text).not.toContain(own)
    // Which boxes were ticked is an input value too: the clicks are recorded, their states are not (a box
    // ticked at load, one ticked and one unticked by the user, a radio chosen).
    expect(text).toContain('Heart condition')
    expect(text).toMatch(/"isChecked":false/)
    expect(text).not.toMatch(/"isChecked":true/)
    expect(text).not.toMatch(/"checked":(true|"")/)
  } finally {
    await context.close()
  }
})

test('under a strict CSP with Trusted Types the recorder loads with the nonce and records, no violation', async () => {
  const e = env()
  reset({ replay: { mode: 'masked', seconds: 30 } })
  const nonce = 'cspReplayNonce42'
  const csp = `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'none'; connect-src ${proxyUrl} ${e.api}; img-src data: blob:; require-trusted-types-for 'script'; trusted-types fixloop`
  const body = BODY.replace(/<script>[\s\S]*<\/script>/, '')
  const url = e.page('/replay-csp', { body, csp, mount: `<script src="${proxyUrl}/widget.js" data-public-key="${e.tenant.pub}" nonce="${nonce}" async></script>` })
  const { context, page } = await freshContext(e)
  try {
    const watch = await watchPage(page)
    await page.goto(url)
    await recorderReady(page)
    await page.locator('#card').pressSequentially('5555 4444')
    await sendReport(page, 'Replay under a strict CSP')
    await eventually(() => state.puts.length === 1, 15_000)
    expect(storedReplay().json.events.some((ev) => ev.type === 2)).toBe(true)
    expect(await watch.violations()).toEqual([])
    expect(watch.errors).toEqual([])
  } finally {
    await context.close()
  }
})

test('off (and a server without the config route): the replay chunk is never requested, no replay upload', async () => {
  const e = env()
  for (const [config, status] of [[{ replay: { mode: 'off', seconds: 60 } }, 200], [{ error: { code: 'not_found', message: 'no route' } }, 404]] as const) {
    reset(config, status)
    const url = e.page(`/replay-off-${status}`, { body: BODY, mount: mount() })
    const { context, page } = await freshContext(e)
    try {
      const requested: string[] = []
      page.on('request', (r) => requested.push(r.url()))
      await page.goto(url)
      await eventually(() => state.configRequests === 1, 10_000)
      await fillForm(page)
      const text = `Replay off report ${status}`
      await sendReport(page, text)
      await eventually(async () => (await withText(e, text)).length === 1, 15_000)
      expect(requested.some((u) => u.includes('/widget/ui-'))).toBe(true)
      expect(requested.filter((u) => u.includes('/widget/replay-'))).toEqual([])
      expect(await page.evaluate(() => (window as any)[Symbol.for('fixloop.recorder')] === undefined)).toBe(true)
      expect(state.replayUploads).toEqual([])
      expect(state.submitted.every((s) => s.replays.length === 0)).toBe(true)
    } finally {
      await context.close()
    }
  }
})

test('beforeSend drops the replay (replay: false): the report is sent, no replay upload', async () => {
  const e = env()
  reset({ replay: { mode: 'masked', seconds: 30 } })
  const url = e.page('/replay-before-send', { body: BODY, mount: mount(', beforeSend: (p) => { window.__sawReplay = p.replay; return { ...p, replay: false } }') })
  const { context, page } = await freshContext(e)
  try {
    await page.goto(url)
    await recorderReady(page)
    await sendReport(page, 'Replay dropped by beforeSend')
    await eventually(async () => (await withText(e, 'Replay dropped by beforeSend')).length === 1, 15_000)
    expect(await page.evaluate(() => (window as any).__sawReplay)).toBe(true)
    expect(state.replayUploads).toEqual([])
    expect(state.puts).toEqual([])
    expect(state.submitted.map((s) => s.replays)).toEqual([[]])
  } finally {
    await context.close()
  }
})

test('a server that refuses the replay upload still gets the report (without it), one console warning', async () => {
  const e = env()
  reset({ replay: { mode: 'masked', seconds: 30 } })
  state.refuseReplay = true
  const url = e.page('/replay-refused', { body: BODY, mount: mount() })
  const { context, page } = await freshContext(e)
  try {
    const warnings: string[] = []
    page.on('console', (m) => m.type() === 'warning' && warnings.push(m.text()))
    await page.goto(url)
    await recorderReady(page)
    await sendReport(page, 'Replay refused report')
    await eventually(async () => (await withText(e, 'Replay refused report')).length === 1, 15_000)
    expect(await widget(page).host.getByRole('status').textContent()).toContain('Thanks')
    expect(state.replayUploads).toHaveLength(1)
    expect(state.puts).toEqual([])
    expect(state.submitted.map((s) => s.replays)).toEqual([[]])
    expect(warnings.filter((w) => w.includes('session replay was refused'))).toHaveLength(1)
  } finally {
    await context.close()
  }
})

test('offline then online: one report, one replay', async () => {
  const e = env()
  reset({ replay: { mode: 'inputs', seconds: 30 } })
  const url = e.page('/replay-offline', { body: BODY, mount: mount() })
  const { context, page } = await freshContext(e)
  try {
    await page.goto(url)
    await recorderReady(page)
    const w = widget(page)
    await w.launcher.click()
    await w.text.fill('Replay sent after offline')
    await context.setOffline(true)
    await w.send.click()
    await w.host.getByRole('status').filter({ hasText: 'saved on this device' }).waitFor()
    expect(state.replayUploads).toEqual([])
    await context.setOffline(false)
    await eventually(async () => (await withText(e, 'Replay sent after offline')).length === 1, 20_000)
    await page.waitForTimeout(500)
    expect(state.replayUploads).toHaveLength(1)
    expect(state.puts).toHaveLength(1)
    const keys = new Set(state.submitted.filter((s) => s.text === 'Replay sent after offline').flatMap((s) => s.replays.map((r) => r.key)))
    expect([...keys]).toEqual(['replay-stub-1'])
    expect(storedReplay().text).toContain('Zephyrine')
  } finally {
    await context.close()
  }
})

test('a busy page (20 s of heavy DOM changes, window 10 s, a 256 KB cap) stays under the memory cap and keeps only the window', async () => {
  const e = env()
  reset({ replay: { mode: 'inputs', seconds: 10 } })
  // 400 rows a second (40 every 100 ms): the cap is reached within seconds and binds from then on (the
  // log line says "most retained 256 KB of 256 KB"). At 2,000 a second (every 20 ms) the page cost
  // Chromium ~15 CPU-s over the 20 s (renderer and compositor) for the same bound; at 400, ~5.
  const busy = `<div id="feed"></div><script>
  let n = 0
  setInterval(() => {
    const feed = document.getElementById('feed')
    for (let i = 0; i < 40; i++) {
      const d = document.createElement('div')
      d.textContent = 'row ' + (n++) + ' ' + Math.random().toString(36).repeat(8)
      d.setAttribute('data-n', String(n))
      feed.appendChild(d)
    }
    while (feed.childNodes.length > 300) feed.firstChild.remove()
  }, 100)
</script>`
  const url = e.page('/replay-busy', { body: busy, mount: mount(', replayMemoryBytes: 262144') })
  const { context, page } = await freshContext(e)
  try {
    await page.goto(url)
    await recorderReady(page)
    const started = await page.evaluate(() => Date.now())
    let most = 0
    let polls = 0
    for (let end = Date.now() + 20_000; Date.now() < end; ) {
      const s = await stats(page)
      expect(s.maxBytes).toBe(262144)
      expect(s.bytes).toBeLessThanOrEqual(s.maxBytes)
      expect(s.overflow).toBe(false)
      most = Math.max(most, s.bytes)
      polls++
      await page.waitForTimeout(200)
    }
    const last = await stats(page)
    console.log(`busy page: ${polls} polls, most retained ${(most / 1024).toFixed(0)} KB of ${(last.maxBytes / 1024).toFixed(0)} KB; now ${last.segments} segments, ${last.events} events`)
    expect(most).toBeGreaterThan(last.maxBytes / 4) // the page was busy enough for the cap to matter
    expect(last.oldest).toBeGreaterThan(started + 5_000) // the first segments were dropped
    await sendReport(page, 'Busy page replay')
    await eventually(() => state.puts.length === 1, 15_000)
    const { json } = storedReplay()
    expect(json.events[0].type).toBe(4)
    expect(json.events[1].type).toBe(2)
  } finally {
    await context.close()
  }
})

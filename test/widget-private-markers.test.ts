/**
 * What the page marks private stays out of the stored report, in Chromium against the compiled binary with
 * nothing stubbed (an App with `--replay inputs`): one page is recorded, reported with a screenshot, and
 * read back through the sk API once the server has scrubbed the replay.
 *
 * - The markers are one set for both channels: `data-fixloop-mask` (the screenshot's) masks in the replay,
 *   `fixloop-mask` / `fixloop-block` (the replay's) black out in the screenshot. Before, each channel read
 *   only its own, so a field marked for one was sent in clear by the other.
 * - Under a `fixloop-mask` element the attributes (title, aria-label, alt, data-*) are masked too, and so is
 *   a web component's shadow tree (rrweb looked for the class with closest(), which stops at a shadow root),
 *   in the snapshot and in later changes.
 * - A stylesheet's `url(…)` with a token in its query is scrubbed by the server (the CSS was kept whole).
 */
import { beforeAll, expect, test } from 'bun:test'
import { gunzipSync } from 'node:zlib'
import { call, eventually } from './harness'
import { freshContext, report, reports, widget, widgetEnv } from './widget-fixture'

const env = widgetEnv(['--replay', 'inputs', '--replay-seconds', '30'])

const GREEN = 'display:block;background:#00ff00;color:#00ff00;width:300px;height:60px;margin:4px'
const BODY = `
<main>
  <h1>Marker page</h1>
  <p id="dmask" data-fixloop-mask style="${GREEN}">Axolotl by data attribute</p>
  <div id="cmask" class="fixloop-mask" title="Wombat title" data-owner="Numbat owner" style="${GREEN}">
    <span id="cspan" aria-label="Quetzal label">Ibis text</span><img alt="Narwhal alt" width="10" height="10">
  </div>
  <p id="cblock" class="fixloop-block" style="${GREEN}">Pumpernickel blocked</p>
  <priv-card id="card" class="fixloop-mask" style="${GREEN}"></priv-card>
  <input id="ccnum" autocomplete="cc-number" value="4111 1111 1111 1111" style="${GREEN}">
  <input id="otp" autocomplete="one-time-code" value="482913" style="${GREEN}">
  <style>.avatar{background-image:url("https://cdn.example.com/a.png?token=KestrelSecretValue123")}</style>
  <div class="avatar">Avatar</div>
</main>
<script>
customElements.define('priv-card', class extends HTMLElement { constructor() { super(); this.attachShadow({ mode: 'open' }).innerHTML = '<p>Ocelot shadow</p>' } })
</script>`

const MARKED = ['dmask', 'cmask', 'cblock', 'card', 'ccnum', 'otp']

interface Recorded {
  /** The stored replay's JSON text, as the server serves it after its scrub. */
  replay: string
  /** The screenshot's RGBA at a point inside each marked element. */
  pixels: Record<string, number[]>
}

let recorded: Recorded

beforeAll(async () => {
  const e = env()
  const url = e.page('/markers', { body: BODY, mount: `<script src="${e.api}/widget.js" data-public-key="${e.tenant.pub}"></script>` })
  const { context, page } = await freshContext(e)
  let points: Record<string, { x: number; y: number }>
  try {
    await page.goto(url)
    await page.waitForFunction(() => !!(window as any)[Symbol.for('fixloop.recorder')], undefined, { timeout: 15_000 })
    // Changes after the first snapshot: texts and attributes under the markers, a node added in a shadow root.
    await page.evaluate(() => {
      const card = document.getElementById('card')!
      ;card.shadowRoot!.querySelector('p')!.firstChild.data = 'Pangolin late'
      const p = document.createElement('p')
      p.textContent = 'Tamarin added'
      card.shadowRoot!.appendChild(p)
      document.getElementById('cmask')!.setAttribute('title', 'Wallaby changed')
      document.getElementById('cspan')!.firstChild.data = 'Ibex changed'
      document.getElementById('dmask')!.textContent = 'Aardvark changed'
    })
    points = await page.evaluate((ids) => Object.fromEntries(ids.map((id) => {
      const r = document.getElementById(id)!.getBoundingClientRect()
      return [id, { x: r.x + 20, y: r.y + 20 }]
    })), MARKED)
    const w = widget(page)
    await w.launcher.click()
    await w.text.fill('Markers report')
    await page.locator('fixloop-widget canvas').waitFor({ state: 'visible' })
    await w.send.click()
    await w.host.getByRole('status').filter({ hasText: /Thanks/ }).waitFor({ timeout: 20_000 })
  } finally {
    await context.close()
  }
  const id = (await eventually(async () => (await reports(e)).find((r: any) => r.text === 'Markers report'), 20_000)).id
  const attachment = await eventually(async () => {
    const r = await call(e.api, 'GET', `/v1/feedback/${id}`, { auth: e.tenant.key })
    const a = (r.body.attachments ?? []).find((x: any) => x.kind === 'replay')
    return a?.replayState === 'ready' && a.url ? a : undefined
  }, 30_000)
  const replay = gunzipSync(Buffer.from(await (await fetch(attachment.url)).arrayBuffer())).toString('utf8')
  const shot = (await report(e, id)).attachments.find((a: any) => a.kind === 'screenshot')
  const png = Buffer.from(await (await fetch(shot.url)).arrayBuffer()).toString('base64')
  const reader = await freshContext(e)
  try {
    const pixels = await reader.page.evaluate(async ({ png, points }) => {
      const bitmap = await (window as any).createImageBitmap(await (await fetch(`data:image/png;base64,${png}`)).blob())
      const ctx = new (window as any).OffscreenCanvas(bitmap.width, bitmap.height).getContext('2d')
      ctx.drawImage(bitmap, 0, 0)
      return Object.fromEntries(Object.entries(points).map(([k, p]) => [k, Array.from(ctx.getImageData(p.x, p.y, 1, 1).data as number[])]))
    }, { png, points: points! })
    recorded = { replay, pixels }
  } finally {
    await reader.context.close()
  }
}, 120_000)

test('replay: data-fixloop-mask masks; under fixloop-mask the attributes and a shadow tree are masked too, also when they change', () => {
  expect(recorded.replay).toContain('Marker page')
  const leaked = ['Axolotl', 'Aardvark', 'Wombat', 'Wallaby', 'Numbat', 'Quetzal', 'Narwhal', 'Ibis', 'Ibex', 'Ocelot', 'Pangolin', 'Tamarin', 'Pumpernickel'].filter((s) => recorded.replay.includes(s))
  expect(leaked).toEqual([])
})

test("replay: a stylesheet's url() keeps no token (the server scrubs CSS URLs, the rule stays)", () => {
  expect(recorded.replay).not.toContain('KestrelSecretValue123')
  expect(recorded.replay).toContain('https://cdn.example.com/a.png?token=')
})

test('screenshot: fixloop-mask and fixloop-block elements are blacked out as data-fixloop-mask ones are, and so are card-number and one-time-code inputs', () => {
  expect(recorded.pixels).toEqual(Object.fromEntries(MARKED.map((id) => [id, [0, 0, 0, 255]])))
})

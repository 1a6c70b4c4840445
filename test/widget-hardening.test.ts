/**
 * The widget on hostile or unusual host pages, in Chromium against the compiled binary: elements whose
 * id/name clobber the globals the widget reads, a page enforcing Trusted Types, console.log of values
 * that are huge, have throwing or side-effecting getters, or are Proxies (summarised without running page
 * code, bounded), and fixloop served on the app's own origin behind a reverse proxy (the app's failed
 * calls to that origin are summarised, the widget's own calls are not), a <body> with a transform and a
 * <body> swapped by a Turbo-style router (the launcher stays in the window, and mounted), and Prototype.js's
 * Array#toJSON (the report is still plain JSON), and a CSS reset with `all: unset` on every element (the
 * page's text styles stay out of the widget).
 */
import { expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { ROOT } from './harness'
import { DEFAULT_BODY, freshContext, report, reports, scriptTag, watchPage, widget, widgetEnv, type WidgetEnv } from './widget-fixture'

const env = widgetEnv()

const byText = async (e: WidgetEnv, text: string) => report(e, (await reports(e)).find((r: any) => r.text === text).id)

/** Elements that shadow `window.X` (any id) or `document.X` (img/form/embed/object name) for every X the widget reads. */
const CLOBBER_GLOBALS = `
<div id="__fixloopUI"></div>
<form id="Fixloop" name="Fixloop"><input name="loaded"><input name="init"><input name="open"></form>
<div id="addEventListener"></div>
<img name="currentScript" alt=""><img name="cookie" alt=""><img name="body" alt=""><img name="head" alt="">
<img name="documentElement" alt=""><img name="activeElement" alt=""><img name="querySelectorAll" alt="">
<img name="elementFromPoint" alt=""><img name="addEventListener" alt=""><img name="removeEventListener" alt="">`
/** The element factories: modern-screenshot (third-party) calls them on the document it renders. */
const CLOBBER_FACTORIES = `<img name="createElement" alt=""><img name="createElementNS" alt=""><img name="createTextNode" alt="">`

test('a page whose elements clobber the globals the widget reads: the widget mounts, opens, captures and sends', async () => {
  const e = env()
  const cookieScript = `<script>
    Object.getOwnPropertyDescriptor(Document.prototype, 'cookie').set.call(document, 'sid=clobberCOOKIE123; path=/')
  </script>`
  for (const [path, extra, screenshot] of [
    ['/clobber', CLOBBER_GLOBALS, true],
    ['/clobber-factories', CLOBBER_GLOBALS + CLOBBER_FACTORIES, false],
  ] as const) {
    const url = e.page(path, { body: cookieScript + DEFAULT_BODY + extra, mount: scriptTag(e) })
    const { context, page } = await freshContext(e)
    try {
      const watch = await watchPage(page)
      await page.goto(url)
      const w = widget(page)
      await w.launcher.click()
      await w.dialog.waitFor()
      // The page's scripts see the real API, not the <form id="Fixloop">.
      expect(await page.evaluate(() => typeof (window as any).Fixloop.open)).toBe('function')
      await page.evaluate(() => console.log('session sid=clobberCOOKIE123 here'))
      const text = `Clobbered page ${path}`
      await w.text.fill(text)
      const include = w.host.getByRole('checkbox', { name: 'Include a screenshot' })
      if (screenshot) await w.host.getByRole('button', { name: 'Edit screenshot' }).waitFor()
      else await w.host.getByText('No screenshot could be taken').waitFor()
      // What is sent matches the checkbox: with the factories clobbered the renderer fails, the box is unticked.
      expect(await include.isChecked()).toBe(screenshot)
      await w.send.click()
      await w.host.getByRole('status').filter({ hasText: 'Thanks' }).waitFor()
      const item = await byText(e, text)
      expect(item.attachments).toHaveLength(screenshot ? 1 : 0)
      const logged = item.consoleLogs.find((l: any) => l.message.startsWith('session'))
      expect(logged.message).not.toContain('clobberCOOKIE123')
      expect(watch.errors).toEqual([])
      // The style sandbox iframe of the renderer is gone again.
      expect(await page.evaluate(() => [...(window as any).Document.prototype.querySelectorAll.call(document, 'iframe')].map((f: any) => f.outerHTML).join(' '))).toBe('')
    } finally {
      await context.close()
    }
  }
})

test('Trusted Types enforced: the widget loads its UI through the "fixloop" policy, captures and sends; no violation', async () => {
  const e = env()
  const nonce = 'tt' + Math.random().toString(36).slice(2)
  const base = `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'none'; connect-src ${e.api}; img-src data: blob:; require-trusted-types-for 'script'`
  const url = e.page('/trusted-types', { mount: scriptTag(e, `nonce="${nonce}"`), csp: `${base}; trusted-types fixloop` })
  const { context, page } = await freshContext(e)
  try {
    const watch = await watchPage(page)
    await page.goto(url)
    const w = widget(page)
    await w.launcher.click()
    await w.text.fill('Under Trusted Types')
    await w.host.getByRole('button', { name: 'Edit screenshot' }).waitFor()
    await w.send.click()
    await w.host.getByRole('status').filter({ hasText: 'Thanks' }).waitFor()
    expect(await watch.violations()).toEqual([])
    expect(watch.errors).toEqual([])
    expect((await byText(e, 'Under Trusted Types')).attachments).toHaveLength(1)
  } finally {
    await context.close()
  }
  // A directive that does not allow the name: the widget says what to add instead of failing silently.
  const denied = e.page('/trusted-types-denied', { mount: scriptTag(e, `nonce="${nonce}"`), csp: `${base}; trusted-types other` })
  const second = await freshContext(e)
  try {
    const warnings: string[] = []
    second.page.on('console', (m) => m.type() === 'warning' && warnings.push(m.text()))
    await second.page.goto(denied)
    await widget(second.page).launcher.click()
    for (let i = 0; i < 50 && !warnings.some((w) => w.includes('"fixloop"')); i++) await second.page.waitForTimeout(100)
    expect(warnings.some((w) => w.includes('trusted-types') && w.includes('"fixloop"'))).toBe(true)
  } finally {
    await second.context.close()
  }
})

test('console.log of a huge array, throwing and side-effecting getters and Proxies: bounded summaries, no page code runs', async () => {
  const e = env()
  const url = e.page('/console-values', { mount: scriptTag(e) })
  const { context, page } = await freshContext(e)
  try {
    const watch = await watchPage(page)
    await page.goto(url)
    const w = widget(page)
    await w.launcher.waitFor()
    const seen = await page.evaluate(() => {
      const counts = { getter: 0, toJSON: 0, proxyGet: 0, proxyOther: 0 }
      const huge = new Array(1_000_000).fill(7)
      console.log('huge', huge)
      const tricky = {
        ok: 1,
        get boom(): number {
          throw new Error('getter ran')
        },
        get count() {
          counts.getter++
          return 1
        },
        toJSON() {
          counts.toJSON++
          return 'serialised'
        },
      }
      console.log('tricky', tricky)
      const proxied = new Proxy(new Array(1_000_000).fill(1), {
        get(t, k, r) {
          counts.proxyGet++
          return Reflect.get(t, k, r)
        },
        getOwnPropertyDescriptor(t, k) {
          counts.proxyOther++
          return Reflect.getOwnPropertyDescriptor(t, k)
        },
        ownKeys(t) {
          counts.proxyOther++
          return Reflect.ownKeys(t)
        },
      })
      console.log('proxy', proxied)
      console.log('hostile', new Proxy({}, { ownKeys() { throw new Error('trap') }, getPrototypeOf() { throw new Error('trap') } }))
      console.log('deep', { a: { b: { c: { d: { e: 1 } } } } })
      console.log('wide', Object.fromEntries(Array.from({ length: 1000 }, (_, i) => ['k' + i, i])))
      const cyclic: any = { name: 'cyc' }
      cyclic.self = cyclic
      console.log('cyclic', cyclic)
      console.log('error', new TypeError('bad input'))
      const fake = new Error('fake')
      Object.defineProperty(fake, 'stack', {
        get() {
          counts.getter++
          return 'page code ran'
        },
      })
      console.log('stack-getter', fake)
      return { counts }
    })
    expect(seen.counts).toEqual({ getter: 0, toJSON: 0, proxyGet: 0, proxyOther: expect.any(Number) })
    // Bounded work on a Proxy of a million elements: a few dozen traps, not a million.
    expect(seen.counts.proxyOther).toBeLessThan(100)
    await w.launcher.click()
    await w.host.getByRole('checkbox', { name: 'Include a screenshot' }).uncheck()
    await w.text.fill('Console values')
    await w.send.click()
    await w.host.getByRole('status').filter({ hasText: 'Thanks' }).waitFor()
    const logs: string[] = (await byText(e, 'Console values')).consoleLogs.map((l: any) => l.message)
    const msg = (prefix: string) => logs.find((m) => m.startsWith(prefix + ' '))!
    expect(msg('huge')).toStartWith('huge [7,7,7')
    expect(msg('huge')).toContain(',… 999980 more]')
    expect(msg('tricky')).toBe('tricky {"ok":1,"boom":[Getter],"count":[Getter],"toJSON":[Function toJSON]}')
    expect(msg('proxy')).toContain('… 999980 more]')
    expect(msg('hostile')).toBe('hostile [unreadable]')
    expect(msg('deep')).toBe('deep {"a":{"b":{"c":{…}}}}')
    expect(msg('wide')).toContain('"k19":19,… 980 more}')
    expect(msg('cyclic')).toBe('cyclic {"name":"cyc","self":[Circular]}')
    expect(msg('error')).toStartWith('error TypeError: bad input\n') // with the engine's stack
    expect(msg('stack-getter')).toBe('stack-getter Error: fake')
    expect(logs.every((m) => m.length <= 1000)).toBe(true)
    expect(watch.errors).toEqual([])
  } finally {
    await context.close()
  }
})

test("fixloop on the app's own origin (reverse proxy): the app's failed calls are summarised, the widget's own are not", async () => {
  const e = env()
  const uiFile = JSON.parse(readFileSync(join(ROOT, 'widget', 'dist', 'manifest.json'), 'utf8')).uiFile
  // The customer origin forwards fixloop's paths to fixloop, as a reverse proxy would.
  const forward = async (req: Request) => {
    const u = new URL(req.url)
    const headers = new Headers(req.headers)
    headers.delete('host')
    const body = req.method === 'GET' || req.method === 'HEAD' ? undefined : await req.arrayBuffer()
    const res = await fetch(e.api + u.pathname + u.search, { method: req.method, headers, body })
    const out = new Headers(res.headers)
    out.delete('content-encoding')
    out.delete('content-length')
    return new Response(await res.arrayBuffer(), { status: res.status, headers: out })
  }
  for (const path of ['/widget.js', `/widget/${uiFile}`, '/v1/feedback', '/v1/feedback/upload-url']) e.routes.set(path, forward)
  e.routes.set('/api/orders', () => new Response('{"error":"boom"}', { status: 500 }))
  const url = e.page('/same-origin', {
    mount: `<script src="/widget.js"></script>
<script>Fixloop.init({ publicKey: ${JSON.stringify(e.tenant.pub)}, slowRequestMs: 1 })</script>`,
  })
  const { context, page } = await freshContext(e)
  try {
    await page.goto(url)
    const w = widget(page)
    // A first report: its upload and submission (all slower than 1 ms) would be summarised if not excluded.
    await w.launcher.click()
    await w.text.fill('Same origin first')
    await w.host.getByRole('button', { name: 'Edit screenshot' }).waitFor()
    await w.send.click()
    await w.host.getByRole('status').filter({ hasText: 'Thanks' }).waitFor()
    await page.evaluate(() => fetch('/api/orders?id=7').then((r) => r.status))
    await w.host.getByRole('button', { name: 'Report another problem' }).click()
    await w.text.fill('Same origin second')
    await w.send.click()
    await w.host.getByRole('status').filter({ hasText: 'Thanks' }).waitFor()
    const network = (await byText(e, 'Same origin second')).submissionMeta.network as any[]
    expect(network.map((n) => `${n.method} ${n.url} ${n.status}`)).toContain(`GET ${e.customer}/api/orders?id= 500`)
    expect(network.filter((n) => n.url.includes('/v1/') || n.url.includes('/uploads'))).toEqual([])
  } finally {
    await context.close()
  }
})

test('a body with a transform, and a body replaced as Turbo Drive does: the launcher stays in the window, and stays', async () => {
  const e = env()
  const tall = `<main><h1>Tall page</h1>${'<p>Line of text</p>'.repeat(150)}</main>`
  // `transform` (and filter, will-change, contain) on <body> makes it the containing block of fixed
  // descendants: a launcher inside <body> was drawn at the bottom of the page, thousands of pixels below.
  const url = e.page('/transformed-body', { body: `<style>body { transform: translateZ(0) }</style>${tall}`, mount: scriptTag(e) })
  const { context, page } = await freshContext(e)
  try {
    await page.goto(url)
    const w = widget(page)
    await w.launcher.waitFor()
    const box = (await w.launcher.boundingBox())!
    expect(box.y + box.height).toBeLessThanOrEqual(800)
    expect(box.y + box.height).toBeGreaterThan(700)
    await w.launcher.click()
    await w.text.fill('From a transformed body')
    await w.send.click()
    await w.host.getByRole('status').filter({ hasText: 'Thanks' }).waitFor()
    await page.keyboard.press('Escape')
    await w.dialog.waitFor({ state: 'hidden' })

    // Turbo Drive (Rails' default) swaps <body> for the next page's on every visit, and runs the new
    // body's scripts (widget.js again: the first copy is already mounted). The widget must still be there.
    await page.evaluate(({ src, key }) => {
      const next = document.createElement('body')
      next.innerHTML = '<main><h1>Next page</h1></main>'
      const tag = document.createElement('script')
      tag.src = src
      tag.dataset.publicKey = key
      next.appendChild(tag)
      document.body.replaceWith(next)
    }, { src: `${e.api}/widget.js`, key: e.tenant.pub })
    await page.getByRole('heading', { name: 'Next page' }).waitFor()
    await w.launcher.waitFor()
    await w.launcher.click()
    await w.text.fill('After a Turbo visit')
    await w.send.click()
    await w.host.getByRole('status').filter({ hasText: 'Thanks' }).waitFor()
    expect(await page.locator('fixloop-widget').count()).toBe(1)
  } finally {
    await context.close()
  }
})

test('a page whose library gives arrays a toJSON (Prototype.js 1.6): the report goes as plain JSON', async () => {
  const e = env()
  // Prototype.js 1.6's Array#toJSON returns a string, so JSON.stringify sent `"consoleLogs": "[...]"` and
  // `"attachments": "[...]"`: the server answered 400 invalid_body and the report was dropped.
  const prototypeJs = `<script>
    Array.prototype.toJSON = function () { var out = []; for (var i = 0; i < this.length; i++) out.push(JSON.stringify(this[i])); return '[' + out.join(', ') + ']' }
  </script>`
  const url = e.page('/prototype-js', { body: prototypeJs + DEFAULT_BODY, mount: scriptTag(e) })
  const { context, page } = await freshContext(e)
  try {
    await page.goto(url)
    const w = widget(page)
    await w.launcher.waitFor()
    await page.evaluate(() => console.log('checkout loaded', [1, 2]))
    await w.launcher.click()
    await w.text.fill('Under Prototype.js')
    await w.host.getByRole('button', { name: 'Edit screenshot' }).waitFor()
    await w.send.click()
    await w.host.getByRole('status').filter({ hasText: /Thanks|sent/ }).waitFor()
    expect(await w.host.getByRole('status').filter({ hasText: /\S/ }).textContent()).toContain('Thanks')
    const item = await byText(e, 'Under Prototype.js')
    expect(item.attachments).toHaveLength(1)
    expect(item.consoleLogs.some((l: any) => l.message === 'checkout loaded [1,2]')).toBe(true)
  } finally {
    await context.close()
  }
})

test("a page's global CSS (a reset with `all: unset` on every element, text styles on <html>) does not reach the widget", async () => {
  const e = env()
  // elad2412/the-new-css-reset puts `all: unset` on every element: on <fixloop-widget> too, where the page's
  // rule beats the shadow root's `:host { all: initial }`, so the inherited text styles of its parent flowed in.
  const css = `<style>
    *:where(:not(html, iframe, canvas, img, svg, video, audio):not(svg *, symbol *)) { all: unset; display: revert; }
    html, body { text-transform: uppercase; letter-spacing: 4px; word-spacing: 9px; text-align: center; text-indent: 30px; white-space: nowrap; text-shadow: 1px 1px red; }
  </style>`
  const url = e.page('/css-reset', { body: css + DEFAULT_BODY, mount: scriptTag(e) })
  const { context, page } = await freshContext(e)
  try {
    await page.goto(url)
    const w = widget(page)
    const textStyle = (el: HTMLElement) => {
      const c = getComputedStyle(el)
      return [c.textTransform, c.letterSpacing, c.wordSpacing, c.textAlign, c.textIndent, c.whiteSpace, c.textShadow].join(' | ')
    }
    expect(await w.launcher.evaluate(textStyle)).toBe('none | normal | 0px | center | 0px | normal | none')
    await w.launcher.click()
    await w.dialog.waitFor()
    const clean = 'none | normal | 0px | start | 0px | normal | none'
    expect(await w.host.getByRole('heading', { name: 'Report a problem' }).evaluate(textStyle)).toBe(clean)
    expect(await w.host.getByText('Describe the problem', { exact: true }).evaluate(textStyle)).toBe(clean)
    expect(await w.host.getByText('Include a screenshot of this page', { exact: true }).evaluate(textStyle)).toBe(clean)
    expect(await w.host.getByText('Attach an image', { exact: true }).evaluate(textStyle)).toBe(clean)
  } finally {
    await context.close()
  }
})

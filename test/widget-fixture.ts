/**
 * Shared set-up of the widget browser tests: the compiled binary on one port, a customer page server on
 * another port (a different origin), an App created through the CLI, Debian's Chromium, and helpers
 * to read reports back through the sk API.
 */
import { afterAll, beforeAll } from 'bun:test'
import { rmSync } from 'node:fs'
import type { Browser, Page } from 'playwright-core'
import { call, freePort, spawnServer, tempDir } from './harness'
import { cliTenant, ensureBinary } from './helpers-lifecycle'
import { launchBrowser } from './browser'

export interface CustomerPage {
  /** The page's <head>/<body> extras and the script that mounts the widget. */
  mount: string
  body?: string
  csp?: string
  /** Same-origin JSON routes of the customer's own backend (e.g. a token endpoint). */
}

export interface WidgetEnv {
  api: string
  customer: string
  tenant: Awaited<ReturnType<typeof cliTenant>>
  browser: Browser
  /** Registers a customer page at `path` (served by the customer origin). */
  page(path: string, spec: CustomerPage): string
  /** Customer backend routes: path -> handler. */
  routes: Map<string, (req: Request) => Response | Promise<Response>>
  dataDir: string
}

export const DEFAULT_BODY = `
<main>
  <h1>Acme checkout</h1>
  <form data-component="CheckoutForm">
    <p><label for="holder">Card holder</label> <input id="holder" value="Ada Lovelace"></p>
    <p><label for="pw">Password</label> <input id="pw" type="password" value="hunter2"></p>
    <p id="acct" data-fixloop-mask>Account 1234 5678</p>
    <p><button type="button" id="pay" data-component="PayButton">Pay now</button></p>
  </form>
</main>`

/** Starts everything once per test file; `appFlags` go to `fixloop app create`. */
export function widgetEnv(appFlags: string[] = [], serverEnv: Record<string, string> = {}): () => WidgetEnv {
  let env: WidgetEnv | undefined
  const stops: (() => Promise<void> | void)[] = []
  beforeAll(async () => {
    ensureBinary()
    const dataDir = tempDir('fixloop-widget-')
    // Chromium starts while the CLI makes the tenant and the server comes up: they do not depend on each
    // other, and the file's set-up is about a second shorter. Closed after the file even if a step below fails.
    const launching = launchBrowser()
    launching.catch(() => {})
    stops.push(async () => (await launching).close())
    const tenant = await cliTenant(dataDir, appFlags)
    const server = await spawnServer(dataDir, serverEnv)
    stops.push(server.stop, () => rmSync(dataDir, { recursive: true, force: true }))
    const pages = new Map<string, { html: string; csp?: string }>()
    const routes = new Map<string, (req: Request) => Response | Promise<Response>>()
    const port = await freePort()
    const customer = Bun.serve({
      port,
      hostname: '127.0.0.1',
      async fetch(req) {
        const path = new URL(req.url).pathname
        const route = routes.get(path)
        if (route) return route(req)
        const p = pages.get(path)
        if (!p) return new Response('not found', { status: 404 })
        return new Response(p.html, { headers: { 'content-type': 'text/html; charset=utf-8', ...(p.csp ? { 'content-security-policy': p.csp } : {}) } })
      },
    })
    stops.push(() => customer.stop(true))
    const browser = await launching
    const customerOrigin = `http://localhost:${port}`
    env = {
      api: server.url,
      customer: customerOrigin,
      tenant,
      browser,
      dataDir,
      routes,
      page(path, spec) {
        const html = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Customer page</title></head><body>${spec.body ?? DEFAULT_BODY}${spec.mount}</body></html>`
        pages.set(path, { html, csp: spec.csp })
        return customerOrigin + path
      },
    }
  })
  afterAll(async () => {
    for (const stop of stops.reverse()) await Promise.resolve(stop()).catch(() => {})
  })
  return () => env!
}

/** The standard mount: the script tag with data-public-key, loaded from the API origin. */
export function scriptTag(env: WidgetEnv, extra = ''): string {
  return `<script src="${env.api}/widget.js" data-public-key="${env.tenant.pub}" ${extra} async></script>`
}

/** Every report of the App (duplicates included), newest first, through the sk API. */
export async function reports(env: WidgetEnv): Promise<any[]> {
  const r = await call(env.api, 'GET', `/v1/feedback?appId=${env.tenant.appId}&includeDuplicates=true&limit=100`, { auth: env.tenant.key })
  if (r.status !== 200) throw new Error(`list failed: ${r.status} ${r.text}`)
  return r.body.data
}

/**
 * One report through the sk API, once the worker has sanitized it: until then its console, network and
 * error logs are not served (never raw), and on a loaded machine the worker may be a moment behind.
 */
export async function report(env: WidgetEnv, id: string): Promise<any> {
  const deadline = Date.now() + 15_000
  for (;;) {
    const r = await call(env.api, 'GET', `/v1/feedback/${id}`, { auth: env.tenant.key })
    if (r.status !== 200) throw new Error(`get failed: ${r.status} ${r.text}`)
    if (!['received', 'sanitizing'].includes(r.body.status) || Date.now() > deadline) return r.body
    await Bun.sleep(50)
  }
}

/** The widget's shadow-DOM parts, found by role and name as a user (or a screen reader) finds them. */
export function widget(page: Page) {
  const host = page.locator('fixloop-widget')
  return {
    host,
    launcher: host.getByRole('button', { name: 'Report a problem' }),
    dialog: host.getByRole('dialog'),
    text: host.getByLabel('Describe the problem'),
    send: host.getByRole('button', { name: 'Send' }),
    status: host.getByRole('status').filter({ hasText: /\S/ }),
  }
}

/** Opens the widget as a keyboard user does (focus the launcher, Enter); its parts, with the dialog open. */
export async function openByKeyboard(page: Page): Promise<ReturnType<typeof widget>> {
  const w = widget(page)
  await w.launcher.waitFor()
  await w.launcher.focus()
  await page.keyboard.press('Enter')
  await w.dialog.waitFor()
  return w
}

/** Records CSP violations and page errors for assertions. */
export async function watchPage(page: Page): Promise<{ violations: () => Promise<string[]>; errors: string[] }> {
  const errors: string[] = []
  page.on('pageerror', (e) => errors.push(String(e)))
  await page.addInitScript(() => {
    ;(window as any).__cspViolations = []
    document.addEventListener('securitypolicyviolation', (e: any) => (window as any).__cspViolations.push(`${e.violatedDirective} ${e.blockedURI}`))
  })
  return { violations: () => page.evaluate(() => (window as any).__cspViolations as string[]), errors }
}

export async function freshContext(env: WidgetEnv, viewport = { width: 1280, height: 800 }) {
  const context = await env.browser.newContext({ viewport })
  const page = await context.newPage()
  return { context, page }
}

/** What has the keyboard focus, through shadow roots: `tag#id:text` (for keyboard-only tests). */
/** Reports waiting in the widget's offline queue (IndexedDB `fixloop`, store `queue`) of this page's origin. */
export function queuedCount(page: Page): Promise<number> {
  return page.evaluate(
    () =>
      new Promise<number>((resolve) => {
        const req = indexedDB.open('fixloop', 1)
        req.onsuccess = () => {
          const count = req.result.transaction('queue').objectStore('queue').count()
          count.onsuccess = () => resolve(count.result)
        }
      }),
  )
}

export function focused(page: Page): Promise<string> {
  return page.evaluate(() => {
    let el = document.activeElement
    while (el?.shadowRoot?.activeElement) el = el.shadowRoot.activeElement
    return `${el?.tagName.toLowerCase()}${el?.id ? '#' + el.id : ''}:${(el?.textContent ?? '').trim().slice(0, 50)}`
  })
}

/** Tabs until the focused element's description matches (bounded). */
export async function tabTo(page: Page, match: RegExp): Promise<void> {
  for (let i = 0; i < 30; i++) {
    if (match.test(await focused(page))) return
    await page.keyboard.press('Tab')
  }
  throw new Error(`never focused ${match}; last: ${await focused(page)}`)
}

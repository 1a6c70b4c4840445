/**
 * Launches Debian's Chromium through playwright-core (no browser download), headless, for page tests: its
 * old headless shell (package chromium-headless-shell: the same Blink and V8, without the full browser's
 * windows and UI layers) when installed, else the full browser in its new headless mode. The shell draws
 * the same pages for a third less CPU, Chromium's processes included (the 31 browser files at --parallel=3:
 * ~570 s -> ~320-380 s; dashboard.test.ts ~44 s -> ~34 s, sso.test.ts ~32 s -> ~14 s alone), and on 2 cores
 * that CPU is wall time for every file running beside them.
 */
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core'
import { existsSync } from 'node:fs'
import { atFileEnd } from './file-end'

export const CHROMIUM = ['/usr/lib/chromium/chromium-headless-shell', '/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => existsSync(p))

/**
 * Why browser tests skip, or undefined when Chromium is there. Browser tests use
 * `test.skipIf(!!BROWSER_SKIP)` so a machine without Chromium passes and says why (install.sh and .ci/run
 * install it when they can).
 */
export const BROWSER_SKIP = CHROMIUM ? undefined : 'Chromium not found at /usr/bin/chromium: run "sudo apt-get install chromium" (install.sh does when it runs as root) to run the browser tests'
if (BROWSER_SKIP) console.warn(`browser tests skipped: ${BROWSER_SKIP}`)

/** Chromium itself, launched with the suite's flags (one per test process: see launchBrowser). */
function launchChromium(): Promise<Browser> {
  if (!CHROMIUM) throw new Error('Chromium not found: apt-get install chromium (.ci/run does this)')
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  })
}

/**
 * The test process's one Chromium, on globalThis: it outlives a file's modules (under --no-isolate a worker
 * runs file after file in one process), and a new one is launched when it is gone (closed or crashed). It
 * ends with the process: Chromium quits when its pipe to this process closes, on a kill -9 too.
 */
const SHARED = Symbol.for('fixloop.test.chromium')

function sharedChromium(): Promise<Browser> {
  const g = globalThis as unknown as Record<symbol, Promise<Browser> | undefined>
  // Chained on the last answer, so two callers at once get one Chromium; a failed launch is tried again.
  const next = (g[SHARED] ?? Promise.reject(new Error('not launched yet'))).then(
    (browser) => (browser.isConnected() ? browser : launchChromium()),
    () => launchChromium(),
  )
  g[SHARED] = next
  return next
}

/**
 * A Browser for a test file: the process's shared Chromium (sharedChromium), of which the file sees and
 * closes only its own contexts. `close()` closes those (the file's afterAll calls it, as it did when the
 * file had a Chromium of its own) and, whatever the file did, they are closed after it (atFileEnd): no
 * page, cookie or cache of one file is there for the next. Launching Chromium for each of the ~34 browser
 * files cost ~0.3-0.4 CPU-s each (its browser, zygote and GPU processes starting and stopping), and a file
 * that awaited it without overlap ~0.5 s.
 */
export async function launchBrowser(): Promise<Browser> {
  const mine = new Set<BrowserContext>()
  const track = (context: BrowserContext) => {
    mine.add(context)
    context.once('close', () => mine.delete(context))
    return context
  }
  const closeMine = async () => {
    await Promise.all([...mine].map((c) => c.close().catch(() => undefined)))
  }
  // Registered before the wait, so it belongs to this file even when the launch ends after it.
  atFileEnd(closeMine)
  const browser = await sharedChromium()
  return new Proxy(browser, {
    get(target, prop) {
      if (prop === 'newContext') return async (options?: Parameters<Browser['newContext']>[0]) => track(await target.newContext(options))
      if (prop === 'newPage') {
        return async (options?: Parameters<Browser['newPage']>[0]) => {
          const page = await target.newPage(options)
          track(page.context())
          return page
        }
      }
      if (prop === 'contexts') return () => [...mine]
      if (prop === 'close') return closeMine
      const value = Reflect.get(target, prop, target)
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
}

/**
 * The file's Browser asked for now, for its set-up to await once its server is up: where Chromium is still
 * to be launched (a process's first browser file), the launch overlaps the CLI commands and the server's
 * start (about a second less). `close()` (in afterAll) closes the file's contexts whether or not the set-up
 * got as far as awaiting it.
 */
export function launchBrowserEarly(): { ready: Promise<Browser>; close(): Promise<void> } {
  const ready = launchBrowser()
  ready.catch(() => {})
  return { ready, close: async () => (await ready.catch(() => undefined))?.close() }
}

/** Signs in to the dashboard at `baseUrl` as a keyboard user does (type, Tab, Enter); resolves once signed in. */
export async function signInByKeyboard(page: Page, baseUrl: string, email: string, password: string): Promise<void> {
  await page.goto(baseUrl + '/admin')
  await page.getByLabel('Email').focus()
  await page.keyboard.type(email)
  await page.keyboard.press('Tab')
  await page.keyboard.type(password)
  await page.keyboard.press('Enter')
  await page.getByRole('button', { name: /Sign out/ }).waitFor()
}

/**
 * Launches Debian's Chromium through playwright-core (no browser download), headless, for page tests: its
 * old headless shell (package chromium-headless-shell: the same Blink and V8, without the full browser's
 * windows and UI layers) when installed, else the full browser in its new headless mode. The shell draws
 * the same pages for a third less CPU, Chromium's processes included (the 31 browser files at --parallel=3:
 * ~570 s -> ~320-380 s; dashboard.test.ts ~44 s -> ~34 s, sso.test.ts ~32 s -> ~14 s alone), and on 2 cores
 * that CPU is wall time for every file running beside them.
 */
import { chromium, type Browser, type Page } from 'playwright-core'
import { existsSync } from 'node:fs'

export const CHROMIUM = ['/usr/lib/chromium/chromium-headless-shell', '/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => existsSync(p))

/**
 * Why browser tests skip, or undefined when Chromium is there. Browser tests use
 * `test.skipIf(!!BROWSER_SKIP)` so a machine without Chromium passes and says why (install.sh and .ci/run
 * install it when they can).
 */
export const BROWSER_SKIP = CHROMIUM ? undefined : 'Chromium not found at /usr/bin/chromium: run "sudo apt-get install chromium" (install.sh does when it runs as root) to run the browser tests'
if (BROWSER_SKIP) console.warn(`browser tests skipped: ${BROWSER_SKIP}`)

export async function launchBrowser(): Promise<Browser> {
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
 * Chromium launched now, for a file's set-up to await once its server is up: the launch overlaps the CLI
 * commands and the server's start (about a second less per file). `close()` (in afterAll) closes it whether
 * or not the set-up got as far as awaiting it.
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

/**
 * Helpers for the dashboard's browser tests: the compiled binary with its stdout captured (for the
 * setup link), axe-core injected from node_modules, screenshots at 1280 and 375 px into test-output/.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Locator, Page } from 'playwright-core'
import type { Subprocess } from 'bun'
import { expect } from 'bun:test'
import { BINARY, call, freePort, ROOT, TEST_PASSWORD_ENV } from './harness'

/** Where screenshots go: test-output/, or FIXLOOP_SCREENSHOT_DIR when set (to look at them outside the repo). */
export const OUT_DIR = process.env.FIXLOOP_SCREENSHOT_DIR || join(ROOT, 'test-output')

/**
 * Whether the browser tests write their screenshots: only when asked for (FIXLOOP_SCREENSHOTS=1, or
 * FIXLOOP_SCREENSHOT_DIR set), for a human to look at. No assertion reads an image: the sideways-overflow
 * check measures the page itself (see `screenshots`). The ~250 PNGs of a plain run were Chromium CPU on a
 * 2-core machine where the suite is CPU-bound (dashboard.test.ts's 36: ~2 s of its ~20 s of CPU).
 */
export const SHOTS = process.env.FIXLOOP_SCREENSHOTS === '1' || !!process.env.FIXLOOP_SCREENSHOT_DIR

/** `target` (a page, or one element of it) photographed into OUT_DIR/`file`, when SHOTS; else nothing. */
export async function photo(target: Page | Locator, file: string): Promise<void> {
  if (!SHOTS) return
  mkdirSync(OUT_DIR, { recursive: true })
  await target.screenshot({ path: join(OUT_DIR, file) })
}

/**
 * The width a full-page screenshot of the page has: Playwright's own measure of the page for one
 * (_fullPageSize in playwright-core), as wide as everything painted, absolutely positioned elements included.
 */
const PAINTED_WIDTH = `Math.max(document.body.scrollWidth, document.documentElement.scrollWidth, document.body.offsetWidth,
  document.documentElement.offsetWidth, document.body.clientWidth, document.documentElement.clientWidth)`
const AXE = readFileSync(join(ROOT, 'node_modules/axe-core/axe.min.js'), 'utf8')

export interface SpawnedServer {
  url: string
  proc: Subprocess
  /** Everything the server printed on stdout so far. */
  stdout(): string
  stop(): Promise<void>
}

/** `fixloop serve` from the compiled binary (`args`: more flags, e.g. --demo), with stdout kept (the first-run setup link is printed there). */
export async function spawnWithStdout(dataDir: string, env: Record<string, string> = {}, args: string[] = []): Promise<SpawnedServer> {
  const port = await freePort()
  const proc = Bun.spawn([BINARY, 'serve', '--host', '127.0.0.1', '--port', String(port), '--data-dir', dataDir, ...args], {
    env: { PATH: process.env.PATH ?? '', FIXLOOP_LOG_LEVEL: 'warn', ...TEST_PASSWORD_ENV, ...env },
    stdout: 'pipe',
    stderr: 'inherit',
  })
  let out = ''
  void (async () => {
    const decoder = new TextDecoder()
    for await (const chunk of proc.stdout as ReadableStream<Uint8Array>) out += decoder.decode(chunk)
  })()
  const url = `http://127.0.0.1:${port}`
  await waitHealthy(url, proc)
  return {
    url,
    proc,
    stdout: () => out,
    async stop() {
      if (proc.exitCode === null) proc.kill('SIGTERM')
      await proc.exited
    },
  }
}

/**
 * Waits until the page has drawn its data: loaded, no "Loading…" left, and a short quiet spell. Not
 * 'networkidle': the inbox keeps its live event stream open, so the network is never idle there.
 */
export async function settle(page: Page): Promise<void> {
  await page.waitForLoadState('load')
  await page.waitForFunction(() => !document.body.innerText.includes('Loading…'), undefined, { timeout: 15_000 })
  await page.waitForTimeout(300)
}

/** axe-core's violations on the current page (WCAG 2 A/AA and best practices), as readable lines. */
export async function axeViolations(page: Page): Promise<string[]> {
  // Loaded once per document: the dashboard moves between its pages without a new one, and compiling
  // axe-core's 0.5 MB again for every check cost Chromium CPU (axe.run starts afresh each time).
  if (!(await page.evaluate("typeof axe === 'object' && typeof axe.run === 'function'"))) await page.evaluate(AXE)
  // resultTypes: every violation with every node, as before, while passes, incomplete and inapplicable
  // keep one node each (axe-core builds a selector for every node it reports: most of a check's time); and
  // only the lines come back, not the whole result. Side by side on dashboard.test.ts's 18 checks: the same
  // lines, ~2.5x less time (~6 s instead of ~14 s).
  return (await page.evaluate(`axe
    .run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] }, resultTypes: ['violations'] })
    .then((r) => r.violations.map((v) => v.id + ': ' + v.help + ' at ' + v.nodes.map((n) => n.target.join(' ')).join(', ')))`)) as string[]
}

/**
 * The current page at 1280 and 375 px wide (photographed when SHOTS); the viewport is restored after.
 * Returns the elements that stick out past the right edge at either width (a page must not scroll
 * sideways; wide tables scroll inside their own box), and a page painted wider than the window.
 */
export async function screenshots(page: Page, name: string): Promise<string[]> {
  if (SHOTS) mkdirSync(OUT_DIR, { recursive: true })
  const before = page.viewportSize() ?? { width: 1280, height: 800 }
  const overflow: string[] = []
  for (const width of [1280, 375]) {
    await page.setViewportSize({ width, height: width === 375 ? 740 : 800 })
    await page.waitForTimeout(50)
    const wide = (await page.evaluate(`(() => {
      const out = []
      if (document.documentElement.scrollWidth <= innerWidth) return out
      for (const el of document.querySelectorAll('body *')) {
        const r = el.getBoundingClientRect()
        if (r.right > innerWidth + 1 && !(el.parentElement && el.parentElement.closest('.table-wrap, pre, dialog'))) out.push(el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + (el.className ? '.' + String(el.className).split(' ').join('.') : '') + ' right=' + Math.round(r.right))
      }
      return out.slice(0, 5)
    })()`)) as string[]
    overflow.push(...wide.map((w) => `${width}px: ${w}`))
    const painted = (await page.evaluate(PAINTED_WIDTH)) as number
    if (painted > width) overflow.push(`${width}px: the page paints ${painted} px wide`)
    if (SHOTS) {
      const png = await page.screenshot({ path: join(OUT_DIR, `dashboard-${name}-${width}.png`), fullPage: true })
      // The image measures the page too: where the two differ, the measure above is not the image's.
      const imageWidth = png.readUInt32BE(16)
      if (imageWidth !== painted) overflow.push(`${width}px: the full-page image is ${imageWidth} px wide, the page measured ${painted} px`)
    }
  }
  await page.setViewportSize(before)
  return overflow
}

/** Settled, free of axe-core violations, and photographed at 1280 and 375 px without sideways overflow. */
export async function expectPageClean(page: Page, name: string): Promise<void> {
  await settle(page)
  expect(await axeViolations(page)).toEqual([])
  expect(await screenshots(page, name)).toEqual([])
}

/** Submits a report in public mode as the widget would; its id. */
export async function submitReport(baseUrl: string, pub: string | undefined, text: string, extra: Record<string, unknown> = {}): Promise<string> {
  const r = await call(baseUrl, 'POST', '/v1/feedback', { auth: pub, body: { text, url: 'https://shop.example/cart', ...extra } })
  expect(r.status).toBe(201)
  return r.body.id
}

export function writePasswordFile(dir: string, name: string, password: string): string {
  const path = join(dir, name)
  writeFileSync(path, password + '\n', { mode: 0o600 })
  return path
}

/** Waits until a spawned `fixloop serve` answers /healthz (15 s at most); fails at once if it exited. */
export async function waitHealthy(url: string, proc: { exitCode: number | null }): Promise<void> {
  const deadline = Date.now() + 15_000
  for (;;) {
    try {
      if ((await fetch(url + '/healthz')).status === 200) return
    } catch {
      // not listening yet
    }
    if (proc.exitCode !== null) throw new Error(`fixloop serve exited with ${proc.exitCode}`)
    if (Date.now() > deadline) throw new Error('fixloop serve did not become healthy in 15 s')
    await Bun.sleep(50)
  }
}

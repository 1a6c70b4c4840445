/**
 * The widget in the user's language, in Chromium against the compiled binary at 375 px: the dialog in
 * every built-in locale (data-locale) with no text overflowing its box and nothing wider than the
 * window; the browser's languages choosing the table when the page does not; ar (right to left) and ja
 * keyboard-usable and axe-clean, with the layout mirrored in ar (launcher, close button, actions, the
 * screenshot editor's toolbar). With FIXLOOP_LOCALE_SHOTS=1, screenshots of every locale's dialog and of
 * ar and ja go to /tmp/s39-locales-<tag>.png, for a human to look at: nothing reads them otherwise, and
 * the 30 of them cost ~0.3 s of CPU each, so a plain run takes none.
 */
import { afterAll, expect, test } from 'bun:test'
import axe from 'axe-core'
import type { BrowserContext, Page } from 'playwright-core'
import { LOCALES, type Locale } from '../widget/src/locale'
import { TABLES } from '../widget/src/locales/index'
import { focused, freshContext, reports, scriptTag, widgetEnv, type WidgetEnv } from './widget-fixture'

const env = widgetEnv()
const PHONE = { width: 375, height: 667 }

/** A screenshot for a human, only when asked for (FIXLOOP_LOCALE_SHOTS=1): no assertion reads it. */
async function shot(page: Page, name: string): Promise<void> {
  if (process.env.FIXLOOP_LOCALE_SHOTS) await page.screenshot({ path: `/tmp/s39-locales-${name}.png` })
}

/**
 * One page at 375 px for the 24 one-locale tests, each on a document of its own (a new URL): a page of
 * its own each cost a renderer process (~0.7 s of CPU) and they keep no state between them (they only
 * type, never send, so the widget's offline queue stays empty). Made on first use, so each still runs
 * alone; a test that failed halfway leaves nothing behind, as the next one loads a new document.
 */
let localePage: Promise<{ context: BrowserContext; page: Page }> | undefined
afterAll(async () => (await localePage?.catch(() => undefined))?.context.close())

async function axeViolations(page: Page): Promise<string[]> {
  await page.evaluate(axe.source)
  return page.evaluate(async () => {
    const result = await (window as any).axe.run(document, { resultTypes: ['violations'] })
    return result.violations.map((v: any) => `${v.id}: ${v.nodes.map((n: any) => n.target.join(' ')).join(', ')}`)
  })
}

/**
 * Every visible element of the widget that is cut off or sticks out: a box whose content is wider than
 * the box (scrollWidth > clientWidth + 1), or whose edges leave the window. The honeypot is off-screen
 * on purpose and left out.
 */
function overflows(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const root = document.querySelector('fixloop-widget')!.shadowRoot!
    const vw = document.documentElement.clientWidth
    const bad: string[] = []
    const name = (el: any) => `${el.tagName.toLowerCase()}${el.className && typeof el.className === 'string' ? '.' + el.className.split(' ').join('.') : ''}${el.id ? '#' + el.id : ''} "${(el.textContent ?? '').trim().slice(0, 30)}"`
    for (const el of root.querySelectorAll('*')) {
      if (el.closest('.trap') || el.classList.contains('visually-hidden') || el.tagName === 'STYLE') continue
      const r = el.getBoundingClientRect()
      if (!r.width || !r.height || getComputedStyle(el).visibility === 'hidden') continue
      if (r.left < -0.5 || r.right > vw + 0.5) bad.push(`${name(el)} spans ${Math.round(r.left)}..${Math.round(r.right)} of ${vw}`)
      if (el.scrollWidth > el.clientWidth + 1 && el.clientWidth > 0 && el.tagName !== 'TEXTAREA') bad.push(`${name(el)} content ${el.scrollWidth} > box ${el.clientWidth}`)
    }
    return bad
  })
}

/**
 * Opens the widget with data-locale=<tag> at 375 px; resolves once the dialog speaks the language. On
 * the shared locale page when `shared`, else in a new context (the caller closes it).
 */
async function openIn(e: WidgetEnv, locale: Locale, body?: string, shared = false) {
  const t = TABLES[locale]
  const url = e.page(`/lang-${locale}-${Math.random().toString(36).slice(2)}`, { mount: scriptTag(e, `data-locale="${locale}"`), body })
  const { context, page } = shared ? await (localePage ??= freshContext(e, PHONE)) : await freshContext(e, PHONE)
  await page.goto(url)
  const host = page.locator('fixloop-widget')
  const launcher = host.getByRole('button', { name: t.launcher, exact: true })
  await launcher.waitFor()
  return { context, page, host, launcher, t }
}

for (const locale of LOCALES) {
  test(`${locale} at 375 px: the launcher and the dialog in that language, nothing cut off or wider than the window`, async () => {
    const e = env()
    const failures: string[] = []
    const { page, host, launcher, t } = await openIn(e, locale, undefined, true)
    const dir = locale === 'ar' || locale === 'he' ? 'rtl' : 'ltr'
    expect(await launcher.getAttribute('lang')).toBe(locale)
    expect(await launcher.getAttribute('dir')).toBe(dir)
    for (const f of await overflows(page)) failures.push(`launcher: ${f}`)
    await launcher.click()
    const dialog = host.getByRole('dialog', { name: t.title })
    await dialog.waitFor()
    expect(await dialog.getAttribute('lang')).toBe(locale)
    expect(await dialog.getAttribute('dir')).toBe(dir)
    await host.getByLabel(t.describe).fill('x')
    await host.getByRole('button', { name: t.send, exact: true }).waitFor()
    await host.getByRole('button', { name: t.pick, exact: true }).waitFor()
    // Wait for the screenshot (its thumbnail button, or the note saying it failed), so the full form is measured.
    await host.getByRole('button', { name: t.edit }).or(host.getByText(t.screenshotFailed)).waitFor()
    for (const f of await overflows(page)) failures.push(`dialog: ${f}`)
    await shot(page, `${locale}-dialog`)
    expect(failures).toEqual([])
  }, 60_000)
}

test('without data-locale the browser\'s languages choose: pt-PT gets pt-BR, zh-HK gets zh-TW, an unknown one English', async () => {
  const e = env()
  const url = e.page('/lang-browser', { mount: scriptTag(e) })
  for (const [browser, locale] of [['pt-PT', 'pt-BR'], ['zh-HK', 'zh-TW'], ['iw', 'he'], ['sw', 'en']] as const) {
    const context = await e.browser.newContext({ viewport: PHONE, locale: browser })
    try {
      const page = await context.newPage()
      await page.goto(url)
      expect(await page.evaluate(() => navigator.languages[0])).toBe(browser)
      const host = page.locator('fixloop-widget')
      await host.getByRole('button', { name: TABLES[locale].launcher, exact: true }).click()
      await host.getByRole('dialog', { name: TABLES[locale].title }).waitFor()
      await host.getByRole('button', { name: TABLES[locale].cancel, exact: true }).waitFor()
    } finally {
      await context.close()
    }
  }
})

for (const locale of ['ar', 'ja'] as const) {
  test(`${locale} at 375 px: keyboard only, axe-clean, ${locale === 'ar' ? 'mirrored right to left' : 'left to right'}; the editor too`, async () => {
    const e = env()
    const { context, page, host, launcher, t } = await openIn(e, locale, '<main><h1>Acme</h1><p>Content</p></main>')
    const rtl = locale === 'ar'
    try {
      const box = (await launcher.boundingBox())!
      // The launcher sits in the bottom inline-end corner: left in ar, right in ja.
      if (rtl) expect(box.x).toBeLessThan(PHONE.width / 2 - box.width / 2)
      else expect(box.x + box.width).toBeGreaterThan(PHONE.width / 2 + box.width / 2)
      expect(await axeViolations(page)).toEqual([])

      // Keyboard: focus the launcher, Enter opens with the text field focused; Tab stays in the dialog.
      await launcher.focus()
      await page.keyboard.press('Enter')
      const dialog = host.getByRole('dialog', { name: t.title })
      await dialog.waitFor()
      expect(await focused(page)).toBe('textarea#fl-text:')
      await page.keyboard.type(`${locale} keyboard report`)
      await host.getByRole('button', { name: t.edit }).waitFor()
      const seen = new Set<string>()
      for (let i = 0; i < 20; i++) {
        await page.keyboard.press('Tab')
        seen.add(await focused(page))
      }
      expect([...seen].some((f) => f.startsWith(`button:${t.send}`))).toBe(true)
      expect([...seen].every((f) => !f.startsWith('body') && !f.startsWith('a'))).toBe(true)
      expect(await overflows(page)).toEqual([])
      expect(await axeViolations(page)).toEqual([])

      // Mirrored: the close button on the title's inline-end side, Send at the inline end of the actions.
      const title = (await host.locator('#fl-title').boundingBox())!
      const close = (await host.getByRole('button', { name: t.close, exact: true }).boundingBox())!
      const send = (await host.getByRole('button', { name: t.send, exact: true }).boundingBox())!
      const cancel = (await host.getByRole('button', { name: t.cancel, exact: true }).boundingBox())!
      if (rtl) {
        expect(close.x + close.width).toBeLessThanOrEqual(title.x)
        expect(send.x + send.width).toBeLessThanOrEqual(cancel.x)
      } else {
        expect(close.x).toBeGreaterThanOrEqual(title.x + title.width)
        expect(send.x).toBeGreaterThanOrEqual(cancel.x + cancel.width)
      }
      await shot(page, locale)

      // The screenshot editor: its title at the inline start, Done at the inline end, nothing cut off.
      await host.getByRole('button', { name: t.edit }).focus()
      await page.keyboard.press('Enter')
      const editor = host.getByRole('dialog', { name: t.edit })
      await editor.waitFor()
      expect(await editor.getAttribute('dir')).toBe(rtl ? 'rtl' : 'ltr')
      const heading = (await host.locator('#fl-edit-title').boundingBox())!
      const done = (await host.getByRole('button', { name: t.done, exact: true }).boundingBox())!
      if (rtl) expect(heading.x).toBeGreaterThan(done.x)
      else expect(heading.x).toBeLessThan(done.x)
      expect(await overflows(page)).toEqual([])
      expect(await axeViolations(page)).toEqual([])
      await shot(page, `${locale}-editor`)
      await page.keyboard.press('Escape')
      await editor.waitFor({ state: 'hidden' })

      // Send by keyboard: Tab to Send, Enter; the thanks are in the language, then Esc returns focus.
      for (let i = 0; i < 30 && !(await focused(page)).startsWith(`button:${t.send}`); i++) await page.keyboard.press('Tab')
      await page.keyboard.press('Enter')
      await host.getByRole('status').filter({ hasText: t.thanks }).waitFor()
      expect(await overflows(page)).toEqual([])
      expect(await axeViolations(page)).toEqual([])
      await shot(page, `${locale}-sent`)
      await page.keyboard.press('Escape')
      await dialog.waitFor({ state: 'hidden' })
      expect(await focused(page)).toBe(`button:${t.launcher}`)
      expect((await reports(e)).some((r: any) => r.text === `${locale} keyboard report`)).toBe(true)
    } finally {
      await context.close()
    }
  }, 120_000)
}

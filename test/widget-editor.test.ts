/**
 * The report dialog's usability, in Chromium against the compiled binary, at 1280 and 375 px: after the
 * 201 the dialog shows a confirmation (and a second report from it carries its screenshot, as the still
 * ticked checkbox says); the screenshot editor opens full-window, where hiding an area and cropping work
 * by mouse and by keyboard and what is uploaded is the edited image; "Attach an image" is a button-like
 * control reachable by keyboard; Ctrl/⌘+Enter sends. axe-core finds no violation in any of these states.
 * With FIXLOOP_WIDGET_SHOTS=<dir> the states are also saved as PNGs for a human to look at.
 */
import { expect, test } from 'bun:test'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import axe from 'axe-core'
import type { Page } from 'playwright-core'
import { freshContext, report, reports, scriptTag, widget, widgetEnv, type WidgetEnv } from './widget-fixture'

const env = widgetEnv()
const SHOTS = process.env.FIXLOOP_WIDGET_SHOTS

async function shot(page: Page, name: string): Promise<void> {
  if (!SHOTS) return
  mkdirSync(SHOTS, { recursive: true })
  await page.screenshot({ path: join(SHOTS, `${name}.png`) })
}

async function axeViolations(page: Page): Promise<string[]> {
  await page.evaluate(axe.source)
  return page.evaluate(async () => {
    const result = await (window as any).axe.run(document, { resultTypes: ['violations'] })
    return result.violations.map((v: any) => `${v.id}: ${v.nodes.map((n: any) => n.target.join(' ')).join(', ')}`)
  })
}

/** The focused element inside the widget: "tag:text" (or "tag#id"). */
function focused(page: Page): Promise<string> {
  return page.evaluate(() => {
    let el = document.activeElement
    while (el?.shadowRoot?.activeElement) el = el.shadowRoot.activeElement
    return `${el?.tagName.toLowerCase()}${el?.id ? '#' + el.id : ''}:${(el?.textContent ?? '').trim().slice(0, 40)}`
  })
}

async function tabTo(page: Page, prefix: string, max = 40): Promise<void> {
  for (let i = 0; i < max && !(await focused(page)).startsWith(prefix); i++) await page.keyboard.press('Tab')
  expect(await focused(page)).toStartWith(prefix)
}

/** A page of four flat colour quadrants, so pixels of the uploaded screenshot can be checked. */
const QUADRANTS = `<main><h1 class="sr">Quadrants</h1>
<div id="q"><div id="red"></div><div id="green"></div><div id="blue"></div><div id="yellow"></div></div></main>`
function quadrantsPage(e: WidgetEnv, path: string): string {
  const css = `body{margin:0} .sr{position:absolute;left:-9999px} #q{display:grid;grid-template-columns:1fr 1fr;width:100vw;height:100vh}
#red{background:#ff0000}#green{background:#00ff00}#blue{background:#0000ff}#yellow{background:#ffff00}`
  return e.page(path, { body: `<style>${css}</style>${QUADRANTS}`, mount: scriptTag(e) })
}

/** Pixels of an uploaded PNG, read in the browser. */
async function pngPixels(page: Page, url: string, points: [number, number][]): Promise<{ size: [number, number]; px: number[][] }> {
  const png = Buffer.from(await (await fetch(url)).arrayBuffer())
  const viewer = await page.context().newPage()
  await viewer.setContent(`<img src="data:image/png;base64,${png.toString('base64')}">`)
  const out = await viewer.evaluate(async (pts) => {
    const img = document.querySelector('img')!
    await img.decode()
    const c = document.createElement('canvas')
    c.width = img.naturalWidth
    c.height = img.naturalHeight
    const ctx = c.getContext('2d')!
    ctx.drawImage(img, 0, 0)
    return { size: [c.width, c.height] as [number, number], px: pts.map(([x, y]) => Array.from(ctx.getImageData(x, y, 1, 1).data as ArrayLike<number>).slice(0, 3)) }
  }, points)
  await viewer.close()
  return out
}

const byText = async (e: WidgetEnv, text: string) => report(e, (await reports(e)).find((r: any) => r.text === text).id)

for (const viewport of [
  { width: 1280, height: 800 },
  { width: 375, height: 667 },
]) {
  const tag = `${viewport.width}`

  test(`${tag} px: after the 201 a confirmation replaces the form; "Report another problem" (keyboard, Ctrl+Enter) sends its screenshot too`, async () => {
    const e = env()
    const url = e.page(`/again-${tag}`, { mount: scriptTag(e) })
    const { context, page } = await freshContext(e, viewport)
    try {
      await page.goto(url)
      const w = widget(page)
      await w.launcher.click()
      await w.text.fill(`First report ${tag}`)
      await w.host.getByRole('button', { name: 'Edit screenshot' }).waitFor()
      await shot(page, `dialog-${tag}`)
      expect(await axeViolations(page)).toEqual([])
      await w.send.click()
      await w.host.getByRole('status').filter({ hasText: 'Thanks' }).waitFor()
      // Success looks like success: the form is gone, "Close" has focus, the page behind stays inert.
      await expect(w.text.isVisible()).resolves.toBe(false)
      await expect(w.send.isVisible()).resolves.toBe(false)
      expect(await focused(page)).toBe('button:Close')
      await shot(page, `success-${tag}`)
      expect(await axeViolations(page)).toEqual([])

      // Keyboard only from here: Shift+Tab to "Report another problem", type, Ctrl+Enter.
      await page.keyboard.press('Shift+Tab')
      expect(await focused(page)).toBe('button:Report another problem')
      await page.keyboard.press('Enter')
      expect(await focused(page)).toBe('textarea#fl-text:')
      await expect(w.host.getByRole('checkbox', { name: 'Include a screenshot' }).isChecked()).resolves.toBe(true)
      await page.keyboard.type(`Second report ${tag}`)
      // Sent at once, while the new screenshot may still be rendering: it is awaited, not dropped.
      await page.keyboard.press('Control+Enter')
      await w.host.getByRole('status').filter({ hasText: 'Thanks' }).waitFor()
      const first = await byText(e, `First report ${tag}`)
      const second = await byText(e, `Second report ${tag}`)
      expect(first.attachments).toHaveLength(1)
      expect(second.attachments).toHaveLength(1)
      expect(second.attachments[0]).toMatchObject({ kind: 'screenshot', width: viewport.width, height: viewport.height })

      // Close from the confirmation: focus goes back to the launcher; reopening shows a fresh form.
      await page.keyboard.press('Enter')
      await w.dialog.waitFor({ state: 'hidden' })
      expect(await focused(page)).toBe('button:Report a problem')
      await page.keyboard.press('Enter')
      await w.text.waitFor()
      expect(await w.text.inputValue()).toBe('')
    } finally {
      await context.close()
    }
  })

  test(`${tag} px: the screenshot editor opens full-window; hide an area by keyboard, crop by mouse; the upload is the edited image`, async () => {
    const e = env()
    const url = quadrantsPage(e, `/editor-${tag}`)
    const { context, page } = await freshContext(e, viewport)
    try {
      await page.goto(url)
      const w = widget(page)
      await w.launcher.click()
      await w.text.fill(`Edited screenshot ${tag}`)
      const edit = w.host.getByRole('button', { name: 'Edit screenshot' })
      await edit.waitFor()
      await edit.focus()
      await page.keyboard.press('Enter')
      const editor = w.host.getByRole('dialog', { name: 'Edit screenshot' })
      await editor.waitFor()
      const canvas = page.locator('fixloop-widget canvas')
      // A usable view: most of the window, not a thumbnail (it was 18 % of the image before).
      const box = (await canvas.boundingBox())!
      const scale = box.width / viewport.width
      expect(scale).toBeGreaterThan(0.6)
      expect(Math.abs(box.height / viewport.height - scale)).toBeLessThan(0.02)
      // "Actual size" shows the image 1:1 (scrollable), and back.
      await w.host.getByRole('button', { name: 'Actual size' }).click()
      expect(Math.round((await canvas.boundingBox())!.width)).toBe(viewport.width)
      await w.host.getByRole('button', { name: 'Actual size' }).click()
      const fit = (await canvas.boundingBox())!

      // Keyboard: Tab to the image, a box appears in the middle third; move it to the top-left corner
      // (arrows), Enter hides it.
      await tabTo(page, 'div:')
      const marker = w.host.locator('.box')
      await marker.waitFor()
      for (let i = 0; i < 30; i++) await page.keyboard.press('ArrowLeft')
      for (let i = 0; i < 30; i++) await page.keyboard.press('ArrowUp')
      await shot(page, `editor-keyboard-${tag}`)
      await page.keyboard.press('Enter')
      expect(await axeViolations(page)).toEqual([])

      // Mouse: Crop to the left half (the red and blue quadrants), drawn where the user drags.
      await w.host.getByRole('button', { name: 'Crop' }).click()
      const at = (fx: number, fy: number) => [fit.x + fit.width * fx, fit.y + fit.height * fy] as const
      await page.mouse.move(...at(0, 0))
      await page.mouse.down()
      await page.mouse.move(...at(0.3, 0.7), { steps: 4 })
      await shot(page, `editor-${tag}`)
      await page.mouse.move(...at(0.5, 1), { steps: 4 })
      await page.mouse.up()
      await w.host.getByRole('button', { name: 'Done' }).click()
      await editor.waitFor({ state: 'hidden' })
      expect(await focused(page)).toBe('button:Edit screenshot')
      await w.send.click()
      await w.host.getByRole('status').filter({ hasText: 'Thanks' }).waitFor()

      const item = await byText(e, `Edited screenshot ${tag}`)
      const a = item.attachments[0]
      expect(Math.abs(a.width - viewport.width / 2)).toBeLessThanOrEqual(2)
      expect(Math.abs(a.height - viewport.height)).toBeLessThanOrEqual(2)
      const { size, px } = await pngPixels(page, a.url, [
        [2, 2], // hidden by keyboard (top-left box)
        [a.width - 4, 4], // red, outside the hidden box
        [4, a.height - 4], // blue
      ])
      expect(size).toEqual([a.width, a.height])
      expect(px[0]).toEqual([0, 0, 0])
      expect(px[1]).toEqual([255, 0, 0])
      expect(px[2]).toEqual([0, 0, 255])
    } finally {
      await context.close()
    }
  })
}

test('"Attach an image" is a styled, keyboard-reachable control with a visible focus ring', async () => {
  const e = env()
  const url = e.page('/attach-style', { mount: scriptTag(e) })
  const { context, page } = await freshContext(e)
  try {
    await page.goto(url)
    const w = widget(page)
    await w.launcher.click()
    await w.host.getByRole('button', { name: 'Edit screenshot' }).waitFor()
    const input = w.host.getByLabel('Attach an image')
    const label = w.host.locator('label[for="fl-file"]')
    // The native input is visually hidden; its label looks like the other buttons.
    const inputBox = (await input.boundingBox())!
    expect(inputBox.width).toBeLessThanOrEqual(1)
    const style = (sel: string) =>
      label.evaluate((el, which) => {
        const other = (el.getRootNode() as any).querySelector(which)
        const a = getComputedStyle(el)
        const b = getComputedStyle(other)
        return { same: a.borderTopStyle === b.borderTopStyle && a.paddingTop === b.paddingTop && a.borderRadius === b.borderRadius, outline: a.outlineStyle }
      }, sel)
    expect((await style('.actions button:not(.primary)')).same).toBe(true)
    await tabTo(page, 'input#fl-file')
    expect((await style('button')).outline).toBe('solid')
  } finally {
    await context.close()
  }
})

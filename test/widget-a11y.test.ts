/**
 * The widget's accessibility, strict-CSP behaviour and mount API, in Chromium against the compiled
 * binary: keyboard-only reporting (focus trapped, Esc closes, focus returns to the trigger, the picker
 * by keyboard), axe-core with 0 violations, a nonce-only CSP with no violation reported, and
 * Fixloop.init with attachTo/autoInject:false/beforeSend/strings/setTheme/callbacks.
 */
import { expect, test } from 'bun:test'
import axe from 'axe-core'
import type { Page } from 'playwright-core'
import { freshContext, report, reports, scriptTag, watchPage, widget, widgetEnv } from './widget-fixture'

const env = widgetEnv()

/** The focused element, looking into the widget's shadow root; described as "tag#id:text". */
function focused(page: Page): Promise<string> {
  return page.evaluate(() => {
    let el = document.activeElement
    let inWidget = false
    while (el?.shadowRoot?.activeElement) {
      el = el.shadowRoot.activeElement
      inWidget = true
    }
    return `${inWidget ? 'widget:' : ''}${el?.tagName.toLowerCase()}${el?.id ? '#' + el.id : ''}:${(el?.textContent ?? '').trim().slice(0, 40)}`
  })
}

async function axeViolations(page: Page): Promise<string[]> {
  await page.evaluate(axe.source)
  return page.evaluate(async () => {
    const result = await (window as any).axe.run(document, { resultTypes: ['violations'] })
    return result.violations.map((v: any) => `${v.id}: ${v.nodes.map((n: any) => n.target.join(' ')).join(', ')}`)
  })
}

test('keyboard only: launcher, dialog, focus trap, Esc, focus back, picker and send', async () => {
  const e = env()
  const url = e.page('/keyboard', { mount: scriptTag(e) })
  const { context, page } = await freshContext(e)
  try {
    await page.goto(url)
    const w = widget(page)
    await w.launcher.waitFor()
    let steps = 0
    while (!(await focused(page)).startsWith('widget:button') && steps++ < 20) await page.keyboard.press('Tab')
    expect(await focused(page)).toBe('widget:button:Report a problem')
    await page.keyboard.press('Enter')
    await w.dialog.waitFor()
    expect(await focused(page)).toBe('widget:textarea#fl-text:')
    // Focus stays inside the modal dialog however far the user tabs.
    const seen = new Set<string>()
    for (let i = 0; i < 25; i++) {
      await page.keyboard.press('Tab')
      const f = await focused(page)
      seen.add(f)
      expect(f.startsWith('widget:')).toBe(true)
    }
    expect([...seen].some((f) => f.includes('Send'))).toBe(true)
    await page.keyboard.press('Escape')
    await w.dialog.waitFor({ state: 'hidden' })
    expect(await focused(page)).toBe('widget:button:Report a problem')

    // Again, now pick an element by keyboard and send.
    await page.keyboard.press('Enter')
    await w.dialog.waitFor()
    await page.keyboard.type('Checkout form is broken')
    await w.host.getByRole('button', { name: 'Point at the broken element' }).focus()
    await page.keyboard.press('Enter')
    await w.dialog.waitFor({ state: 'hidden' })
    await w.host.getByText('Tab to move, Enter to choose').waitFor()
    // Tab stops: the form (a component), then the holder input...: the first stop is the form.
    await page.keyboard.press('Tab')
    await page.keyboard.press('Enter')
    await w.dialog.waitFor()
    await w.host.getByText('Selected element: CheckoutForm').waitFor()
    while (!(await focused(page)).includes('Send') && steps++ < 60) await page.keyboard.press('Tab')
    await page.keyboard.press('Enter')
    await w.host.getByRole('status').filter({ hasText: 'Thanks' }).waitFor()
    const list = await reports(e)
    const item = await report(e, list.find((r: any) => r.text === 'Checkout form is broken').id)
    expect(item.componentTarget.name).toBe('CheckoutForm')
    expect(item.componentTarget.meta.role).toBe('form')
  } finally {
    await context.close()
  }
})

test('Send with nothing written: the text field is marked invalid and focused; typing clears the mark; nothing is sent', async () => {
  const e = env()
  const url = e.page('/empty-send', { mount: scriptTag(e) })
  const { context, page } = await freshContext(e)
  try {
    await page.goto(url)
    const w = widget(page)
    let posted = 0
    page.on('request', (r) => void (r.method() === 'POST' && r.url().endsWith('/v1/feedback') && posted++))
    await w.launcher.click()
    await w.text.fill('   ')
    await page.keyboard.press('Control+Enter')
    await w.status.filter({ hasText: 'Describe the problem' }).waitFor()
    expect(await w.text.getAttribute('aria-invalid')).toBe('true')
    expect(await focused(page)).toBe('widget:textarea#fl-text:')
    await page.keyboard.type('The coupon field rejects valid codes')
    expect(await w.text.getAttribute('aria-invalid')).toBeNull()
    expect(posted).toBe(0)
  } finally {
    await context.close()
  }
})

test('axe-core finds no violation with the launcher and with the dialog open', async () => {
  const e = env()
  const url = e.page('/axe', { mount: scriptTag(e), body: '<main><h1>Acme</h1><p>Content</p></main>' })
  const { context, page } = await freshContext(e)
  try {
    await page.goto(url)
    const w = widget(page)
    await w.launcher.waitFor()
    expect(await axeViolations(page)).toEqual([])
    await w.launcher.click()
    await page.locator('fixloop-widget canvas').waitFor({ state: 'visible' })
    await w.text.fill('x')
    expect(await axeViolations(page)).toEqual([])
  } finally {
    await context.close()
  }
})

test('a strict nonce-only CSP page: no violation, the report is sent with its screenshot', async () => {
  const e = env()
  const nonce = 'n0nce' + Math.random().toString(36).slice(2)
  const csp = `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'none'; connect-src ${e.api}; img-src data: blob:; base-uri 'none'`
  const url = e.page('/csp', { mount: scriptTag(e, `nonce="${nonce}"`), csp })
  const { context, page } = await freshContext(e)
  try {
    const watch = await watchPage(page)
    await page.goto(url)
    const w = widget(page)
    await w.launcher.click()
    await w.text.fill('Under a strict CSP')
    await page.locator('fixloop-widget canvas').waitFor({ state: 'visible' })
    await w.send.click()
    await w.host.getByRole('status').filter({ hasText: 'Thanks' }).waitFor()
    expect(await watch.violations()).toEqual([])
    expect(watch.errors).toEqual([])
    const list = await reports(e)
    const item = await report(e, list.find((r: any) => r.text === 'Under a strict CSP').id)
    expect(item.attachments).toHaveLength(1)
  } finally {
    await context.close()
  }
})

test('Fixloop.init: attachTo, autoInject:false, beforeSend, strings, locale, setTheme and callbacks', async () => {
  const e = env()
  const nonce = 'n' + Math.random().toString(36).slice(2)
  const mount = `
<button type="button" id="help">Help</button>
<script nonce="${nonce}" src="${e.api}/widget.js"></script>
<script nonce="${nonce}">
  window.results = []
  Fixloop.init({
    publicKey: ${JSON.stringify(e.tenant.pub)},
    endpoint: ${JSON.stringify(e.api)},
    autoInject: false,
    locale: 'de',
    strings: { send: 'Abschicken' },
    screenshot: false,
    metadata: { plan: 'pro' },
    identity: { email: 'ada@example.com' },
    beforeSend: function (p) { if (p.text.indexOf('cancel') >= 0) return null; p.text = p.text.replace(/\\d{4}/g, '####'); return p },
    onSubmitSuccess: function (r) { window.results.push(['ok', r.status]) },
    onSubmitError: function (err) { window.results.push(['error', err.code]) },
  })
  Fixloop.attachTo(document.getElementById('help'))
</script>`
  const url = e.page('/init', { mount, csp: `script-src 'nonce-${nonce}'; style-src 'none'; connect-src ${e.api}` })
  const { context, page } = await freshContext(e)
  try {
    const watch = await watchPage(page)
    await page.goto(url)
    const host = page.locator('fixloop-widget')
    await host.waitFor({ state: 'attached' })
    await expect(host.getByRole('button', { name: 'Problem melden' }).count()).resolves.toBe(0)
    await page.click('#help')
    await host.getByLabel('Beschreiben Sie das Problem').fill('Card 4242 declined, cancel')
    await host.getByRole('button', { name: 'Abschicken' }).click()
    await host.getByRole('status').filter({ hasText: 'Die Meldung wurde nicht gesendet.' }).waitFor()
    expect(await reports(e).then((l) => l.filter((r: any) => r.text.startsWith('Card')))).toHaveLength(0)

    await host.getByLabel('Beschreiben Sie das Problem').fill('Card 4242 declined')
    await host.getByRole('button', { name: 'Abschicken' }).click()
    await host.getByRole('status').filter({ hasText: 'Danke' }).waitFor()
    expect(await page.evaluate(() => (window as any).results)).toEqual([['ok', 'received']])
    const item = await report(e, (await reports(e)).find((r: any) => r.text === 'Card #### declined').id)
    expect(item.attachments).toEqual([])
    expect(item.submittedBy).toMatchObject({ mode: 'public', email: 'ada@example.com' })
    expect(item.submissionMeta.plan).toBe('pro')

    // Focus returned to the customer's own trigger after Esc.
    await page.keyboard.press('Escape')
    await expect(page.evaluate(() => document.activeElement?.id)).resolves.toBe('help')

    // setTheme changes the custom property the dialog's colours come from.
    await page.evaluate(() => (window as any).Fixloop.setTheme({ accent: 'rgb(15, 118, 110)' }))
    await page.evaluate(() => (window as any).Fixloop.open())
    const bg = await host.getByRole('button', { name: 'Abschicken' }).evaluate((b) => getComputedStyle(b).backgroundColor)
    expect(bg).toBe('rgb(15, 118, 110)')
    await page.evaluate(() => (window as any).Fixloop.close())
    await host.getByRole('dialog').waitFor({ state: 'hidden' })
    expect(await watch.violations()).toEqual([])
  } finally {
    await context.close()
  }
})

test('widget.js included twice mounts one widget; init + open() from <head> open the dialog once <body> exists', async () => {
  const e = env()
  const twice = e.page('/twice', { mount: scriptTag(e) + scriptTag(e) })
  const { context, page } = await freshContext(e)
  try {
    await page.goto(twice)
    await widget(page).launcher.waitFor()
    await page.waitForTimeout(300)
    expect(await page.locator('fixloop-widget').count()).toBe(1)
    const early = `${e.customer}/early`
    e.routes.set('/early', () =>
      new Response(
        `<!doctype html><html lang="en"><head><title>Early</title><script src="${e.api}/widget.js"></script>
<script>Fixloop.init({ publicKey: ${JSON.stringify(e.tenant.pub)}, endpoint: ${JSON.stringify(e.api)} }); Fixloop.open()</script></head>
<body><main><h1>Early</h1></main></body></html>`,
        { headers: { 'content-type': 'text/html' } },
      ),
    )
    await page.goto(early)
    await widget(page).dialog.waitFor()
    await expect(focused(page)).resolves.toBe('widget:textarea#fl-text:')
  } finally {
    await context.close()
  }
})

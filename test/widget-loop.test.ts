/**
 * Closing the loop in the widget, in Chromium against the compiled binary: "Email me when this is fixed"
 * (public mode: an email field, required when ticked; private mode: the token's address, named), and
 * in private mode "Your reports" with each report's status (GET /v1/me/feedback), keyboard-only and
 * with axe-core; with FIXLOOP_SCREENSHOTS=1, screenshots at 1280 and 375 px into test-output/widget-loop-*.png.
 */
import { expect, test } from 'bun:test'
import axe from 'axe-core'
import type { Page } from 'playwright-core'
import { signUserToken } from '../packages/client/src/user-token'
import { focused, freshContext, openByKeyboard, reports, scriptTag, tabTo, widgetEnv, type WidgetEnv } from './widget-fixture'
import { openDataDb } from './helpers-lifecycle'
import { call, eventually } from './harness'
import { photo } from './dashboard-helpers'
import { loadConfig } from '../src/config'
import { closeContext, openContext } from '../src/runtime/open'

const env = widgetEnv()

async function axeViolations(page: Page): Promise<string[]> {
  await page.evaluate(axe.source)
  return page.evaluate(async () => {
    const result = await (window as any).axe.run(document, { resultTypes: ['violations'] })
    return result.violations.map((v: any) => `${v.id}: ${v.nodes.map((n: any) => n.target.join(' ')).join(', ')}`)
  })
}

const notifySealed = (e: WidgetEnv, id: string) => {
  const db = openDataDb(e.dataDir)
  try {
    return (db.query('SELECT notify_email_sealed AS n FROM feedback WHERE id = ?').get(id) as { n: string | null }).n
  } finally {
    db.close()
  }
}

async function resolveInDataDir(e: WidgetEnv, id: string) {
  const ctx = await openContext(loadConfig({ dataDir: e.dataDir }))
  try {
    const { dbRows, dbRun } = await import('./sqlite-of')
    await eventually(async () => (await dbRows<{ redactions: string | null }>(ctx, 'SELECT redactions FROM feedback WHERE id = ?', [id]))[0].redactions !== null, 10_000)
    await dbRun(ctx, "UPDATE feedback SET status = 'pr_opened', version = version + 1 WHERE id = ?", [id])
    await ctx.store.lifecycle.move(id, 'resolved', { by: 'system', from: 'pr_opened' })
  } finally {
    await closeContext(ctx)
  }
}

/** The App can send the "fixed" mail: it has SMTP settings (a name that does not resolve is accepted; nothing is sent here). */
async function giveSmtp(e: WidgetEnv) {
  const r = await call(e.api, 'PUT', `/v1/apps/${e.tenant.appId}/smtp`, { auth: e.tenant.key, body: { host: 'smtp.fixloop-test.invalid', port: 587, tls: 'starttls', from: 'noreply@acme.test' } })
  expect(r.status).toBe(200)
}

test('the box is offered only when the App can send mail (SMTP settings): GET /v1/widget/challenge says notifyEmail (issue 36.6)', async () => {
  const e = env()
  const url = e.page('/loop-nosmtp', { mount: scriptTag(e, 'data-screenshot="false"') })
  const answer = await call(e.api, 'GET', '/v1/widget/challenge', { auth: e.tenant.pub })
  expect(answer.body).toMatchObject({ required: false, notifyEmail: false })
  const { context, page } = await freshContext(e, { width: 1280, height: 800 })
  try {
    await page.goto(url)
    const asked = page.waitForResponse((r) => r.url().includes('/v1/widget/challenge'))
    const w = await openByKeyboard(page)
    await (await asked).finished() // the answer that says whether the App can mail (asked as the form opens)
    await w.host.getByLabel('Describe the problem').waitFor()
    expect(await w.host.getByLabel('Email me when this is fixed').isVisible()).toBe(false)
    await page.keyboard.type('No mail for me')
    await page.keyboard.press('Control+Enter')
    await w.host.getByRole('status').filter({ hasText: 'Thanks' }).waitFor()
    const item = (await reports(e)).find((r: any) => r.text === 'No mail for me')
    expect(notifySealed(e, item.id)).toBeNull()
  } finally {
    await context.close()
  }
  await giveSmtp(e)
  expect((await call(e.api, 'GET', '/v1/widget/challenge', { auth: e.tenant.pub })).body.notifyEmail).toBe(true)
  const again = await freshContext(e, { width: 1280, height: 800 })
  try {
    await again.page.goto(url)
    const w = await openByKeyboard(again.page)
    await w.host.getByLabel('Email me when this is fixed').waitFor()
  } finally {
    await again.context.close()
  }
}, 60_000)

test('public mode: the email field appears when ticked, is required, and the opt-in is sent; keyboard only, axe clean', async () => {
  const e = env()
  await giveSmtp(e)
  const url = e.page('/loop-public', { mount: scriptTag(e, 'data-screenshot="false"') })
  for (const width of [1280, 375]) {
    const { context, page } = await freshContext(e, { width, height: width === 375 ? 740 : 800 })
    try {
      await page.goto(url)
      const w = await openByKeyboard(page)
      await page.keyboard.type(`Coupon field rejects valid codes (${width})`)
      await tabTo(page, /^input#fl-notify/)
      await page.keyboard.press('Space')
      const email = w.host.getByLabel('Your email')
      await email.waitFor()
      expect(await focused(page)).toMatch(/^input#fl-email/)
      // Ticked with no address: the form says what is missing and keeps the focus on the field.
      await page.keyboard.press('Control+Enter')
      await w.host.getByRole('status').filter({ hasText: 'Enter your email address' }).waitFor()
      expect(await focused(page)).toMatch(/^input#fl-email/)
      expect(await email.getAttribute('aria-invalid')).toBe('true')
      expect(await axeViolations(page)).toEqual([])
      await photo(page, `widget-loop-public-notify-${width}.png`)
      await page.keyboard.type(`reporter${width}@example.com`)
      await page.keyboard.press('Control+Enter')
      await w.host.getByRole('status').filter({ hasText: 'Thanks' }).waitFor()
      const item = (await reports(e)).find((r: any) => r.text.startsWith(`Coupon field rejects valid codes (${width})`))
      expect(item.submittedBy.email).toBe(`reporter${width}@example.com`)
      expect(notifySealed(e, item.id)).toStartWith('v1:')
      // Unticked: nothing asked.
      await w.host.getByRole('button', { name: 'Report another problem' }).click()
      expect(await w.host.getByLabel('Email me when this is fixed').isChecked()).toBe(false)
      expect(await w.host.getByRole('button', { name: 'Your reports' }).count()).toBe(0) // private mode only
    } finally {
      await context.close()
    }
  }
}, 90_000)

test('private mode: the token\'s address is named; "Your reports" lists the user\'s reports with their status', async () => {
  const e = env()
  await giveSmtp(e)
  const token = () => signUserToken({ secret: e.tenant.secret, appId: e.tenant.appId, sub: 'ada-1', ctx: { email: 'ada@acme.test' } })
  const other = () => signUserToken({ secret: e.tenant.secret, appId: e.tenant.appId, sub: 'bob-2', ctx: { email: 'bob@acme.test' } })
  e.routes.set('/private-loop/token', async () => new Response(await token()))
  const mount = `
<script src="${e.api}/widget.js"></script>
<script>
  Fixloop.init({ publicKey: ${JSON.stringify(e.tenant.pub)}, endpoint: ${JSON.stringify(e.api)}, screenshot: false,
    getUserToken: function () { return fetch('/private-loop/token').then(function (r) { return r.text() }) } })
</script>`
  const url = e.page('/private-loop', { mount })
  // Another user's report of the same App: never listed for ada.
  const bobs = await fetch(`${e.api}/v1/feedback`, {
    method: 'POST',
    headers: { authorization: `Bearer ${e.tenant.pub}`, 'x-service-user-token': await other(), 'content-type': 'application/json' },
    body: JSON.stringify({ text: 'Bob private report' }),
  })
  expect(bobs.status).toBe(201)
  for (const width of [1280, 375]) {
    const { context, page } = await freshContext(e, { width, height: width === 375 ? 740 : 800 })
    try {
      await page.goto(url)
      const w = await openByKeyboard(page)
      // No token yet (the page is asked for one when a report is sent): the label says which address, generically.
      await w.host.getByLabel("Email me at my account's address when this is fixed").waitFor()
      expect(await w.host.getByLabel('Your email').isVisible()).toBe(false)
      await page.keyboard.type(`Export button does nothing (${width})`)
      await tabTo(page, /^input#fl-notify/)
      await page.keyboard.press('Space')
      expect(await w.host.getByLabel('Your email').isVisible()).toBe(false)
      await page.keyboard.press('Control+Enter')
      await w.host.getByRole('status').filter({ hasText: 'Thanks' }).waitFor()
      expect(await w.host.getByRole('status').filter({ hasText: 'Thanks' }).count()).toBe(1)
      const mine = (await reports(e)).find((r: any) => r.text === `Export button does nothing (${width})`)
      expect(notifySealed(e, mine.id)).toStartWith('v1:')
      if (width === 1280) await resolveInDataDir(e, mine.id)

      // The next report: the token is known now, and the label names its address.
      await w.host.getByRole('button', { name: 'Report another problem' }).click()
      await w.host.getByLabel('Email me at ada@acme.test when this is fixed').waitFor()
      if (width === 1280) await photo(page, 'widget-loop-private-notify-1280.png')
      // Your reports, by keyboard.
      await tabTo(page, /^button:Your reports/)
      await page.keyboard.press('Enter')
      const list = w.host.getByRole('list', { name: 'Your reports' })
      await list.getByRole('listitem').first().waitFor()
      expect(await focused(page)).toMatch(/^h3#fl-mine-title/)
      const items = await list.getByRole('listitem').allInnerTexts()
      expect(items.join('\n')).not.toContain('Bob private report')
      const first = items.find((t) => t.includes('Export button does nothing (1280)'))!
      expect(first).toContain('Fixed')
      if (width === 375) expect(items.find((t) => t.includes('(375)'))).toContain('Received')
      expect(await axeViolations(page)).toEqual([])
      await photo(page, `widget-loop-your-reports-${width}.png`)
      await tabTo(page, /^button:Back/)
      await page.keyboard.press('Enter')
      expect(await focused(page)).toMatch(/^button:Your reports/)
      expect(await w.text.isVisible()).toBe(true)
    } finally {
      await context.close()
    }
  }
}, 120_000)

/**
 * The report page and the inbox as a first-time self-hoster meets them, in Chromium against the compiled
 * binary, keyboard only, with axe-core: "Mark as fixed" (resolved by hand, duplicates following, audited),
 * branch mode read as "Branch pushed", the network requests and metadata the widget captured (escaped),
 * no failed request in the console for a report without a mail, the duplicate notice's controls apart,
 * dashboard merges and unmerges in the audit log, the inbox's first row near the top of a phone, and `/`.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import type { Browser, Page } from 'playwright-core'
import { BROWSER_SKIP, signInByKeyboard, launchBrowserEarly } from './browser'
import { call, eventually, runBinary, tempDir } from './harness'
import { cliTenant, ensureBinary, openDataDb } from './helpers-lifecycle'
import { axeViolations, expectPageClean, screenshots, settle, spawnWithStdout, submitReport, writePasswordFile, type SpawnedServer } from './dashboard-helpers'

const EMAIL = 'fixer@example.com'
const PASSWORD = 'fixer password 42'
let dir: string
let server: SpawnedServer
let browser: Browser
let early: ReturnType<typeof launchBrowserEarly> | undefined
let page: Page
let tenant: Awaited<ReturnType<typeof cliTenant>>
let adminId: string
/** Console errors and failed responses the page met since the last look (a 404 is one). */
let problems: string[] = []

beforeAll(async () => {
  if (BROWSER_SKIP) return
  early = launchBrowserEarly()
  ensureBinary()
  dir = tempDir('fixloop-dash-fixed-')
  tenant = await cliTenant(dir)
  const admin = await runBinary(['admin', 'create', '--email', EMAIL, '--password-file', writePasswordFile(dir, 'pw', PASSWORD), '--data-dir', dir, '--json'])
  expect(admin.code).toBe(0)
  adminId = JSON.parse(admin.stdout).id
  server = await spawnWithStdout(dir, { FIXLOOP_RATE_LIMIT_MULTIPLIER: '100' })
  browser = await early.ready
  page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage()
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`))
  page.on('console', (m) => void (m.type() === 'error' && problems.push(`console: ${m.text()}`)))
  page.on('response', (r) => void (r.status() >= 400 && problems.push(`${r.status()} ${r.url()}`)))
  await signInByKeyboard(page, server.url, EMAIL, PASSWORD)
}, 90_000)

afterAll(async () => {
  await early?.close()
  await server?.stop()
  if (dir) rmSync(dir, { recursive: true, force: true })
})

const reportUrl = (id: string) => `${server.url}/admin/o/${tenant.orgId}/r/${id}`
const statusOf = async (id: string) => (await call(server.url, 'GET', `/v1/feedback/${id}`, { auth: tenant.key })).body.status
const awaiting = (id: string) => eventually(async () => (await statusOf(id)) === 'awaiting_manual', 10_000)

/** Tabs forward until the focused element is the button named `name` (keyboard only); fails after 80 stops. */
async function tabTo(name: string): Promise<void> {
  for (let i = 0; i < 80; i++) {
    await page.keyboard.press('Tab')
    if (await page.evaluate((n) => document.activeElement?.textContent?.trim() === n, name)) return
  }
  throw new Error(`no focusable "${name}" reached with Tab`)
}

function auditRows(action: string): { actor: string; target_id: string; data: string }[] {
  const db = openDataDb(dir)
  try {
    return db.query('SELECT actor, target_id, data FROM audit_log WHERE action = ? ORDER BY id').all(action) as never
  } finally {
    db.close()
  }
}

test.skipIf(!!BROWSER_SKIP)('"Mark as fixed" resolves a lead by hand with its duplicate, by keyboard; audited as the admin', async () => {
  const lead = await submitReport(server.url, tenant.pub, 'The invoice download button returns an empty PDF file.')
  const dup = await submitReport(server.url, tenant.pub, 'The invoice download gives me an empty PDF file.')
  await awaiting(lead)
  await awaiting(dup)
  const merged = await call(server.url, 'POST', `/v1/feedback/${dup}/merge`, { auth: tenant.key, body: { leadId: lead } })
  expect(merged.status).toBe(200)
  problems = []
  await page.goto(reportUrl(lead))
  await page.getByRole('button', { name: 'Mark as fixed' }).waitFor()
  expect(await page.locator('#resolve-hint').textContent()).toContain('resolved with its duplicates')
  await expectPageClean(page, 'report-mark-fixed')
  await tabTo('Mark as fixed')
  await page.keyboard.press('Enter')
  await page.locator('.status', { hasText: 'Resolved' }).first().waitFor()
  expect(await page.getByRole('button', { name: 'Mark as fixed' }).count()).toBe(0)
  expect(await statusOf(dup)).toBe('resolved')
  expect(auditRows('feedback.marked_fixed')).toEqual([{ actor: `admin:${adminId}`, target_id: lead, data: JSON.stringify({ appId: tenant.appId, from: 'awaiting_manual', duplicatesResolved: 1 }) }])
  await expectPageClean(page, 'report-marked-fixed')
  expect(problems).toEqual([])
}, 90_000)

test.skipIf(!!BROWSER_SKIP)('branch mode reads "Branch pushed" (not "Pull request opened"), says no request was opened, and offers "Mark as fixed"', async () => {
  const id = await submitReport(server.url, tenant.pub, 'Search results ignore the category filter.')
  await awaiting(id)
  const db = openDataDb(dir)
  db.query("UPDATE feedback SET status = 'pr_opened', merge_request_url = NULL, version = version + 1 WHERE id = ?").run(id)
  db.query("INSERT INTO agent_runs (id, org_id, app_id, feedback_id, provider, status, branch, timings, pr_url, created_at, started_at, trigger) VALUES (?, ?, ?, ?, 'command', 'succeeded', ?, ?, NULL, ?, ?, 'report')")
    .run('bbbbbbbbbbbbbbbbbbbbbbb1', tenant.orgId, tenant.appId, id, `fixloop/${id}`, JSON.stringify({ prepareMs: 1, cloneMs: 2, agentMs: 3, pushMs: 4, prMs: 0 }), Date.now(), Date.now())
  db.close()
  problems = []
  await page.goto(reportUrl(id))
  await page.getByRole('heading', { name: 'Agent runs' }).waitFor()
  const actions = (await page.locator('.report-main > .actions').textContent()) ?? ''
  expect(actions).toContain('Branch pushed')
  expect(actions).toContain('No pull request opened (branch mode)')
  expect(actions).not.toContain('Pull request opened')
  expect(await page.locator('article.run').textContent()).toContain('none opened (branch mode)')
  await expectPageClean(page, 'report-branch-pushed')
  // The inbox row says it too.
  await page.goto(`${server.url}/admin/o/${tenant.orgId}/inbox?folder=pr_opened`)
  const row = page.locator(`.rows [data-id="${id}"]`)
  await row.waitFor()
  expect(await row.locator('.status').textContent()).toBe('Branch pushed')
  await page.goto(reportUrl(id))
  await page.getByRole('button', { name: 'Mark as fixed' }).waitFor()
  await tabTo('Mark as fixed')
  await page.keyboard.press('Enter')
  await eventually(async () => (await statusOf(id)) === 'resolved', 10_000)
  expect(problems).toEqual([])
}, 90_000)

test.skipIf(!!BROWSER_SKIP)('the network requests and the host page\'s metadata are shown beside the console, as text; no failed request for a report without a mail', async () => {
  const metadata = {
    plan: 'pro',
    '<b>key</b>': '<img src=x onerror="window.pwned=1">',
    nested: { cart: 3 },
    network: [
      { method: 'POST', url: 'https://shop.example/api/cart?item=<script>alert(1)</script>', status: 500, ms: 1234.4, ts: 1 },
      { method: 'GET', url: 'https://shop.example/api/slow', status: 200, ms: 4100, ts: 2 },
      { method: 'GET', url: 'https://cdn.example/down.js', status: 0, ms: 30000, ts: 3 },
    ],
  }
  const id = await submitReport(server.url, tenant.pub, 'Adding to the cart fails with an error.', { consoleLogs: [{ level: 'error', message: 'cart failed', ts: 1 }], metadata })
  await awaiting(id)
  problems = []
  await page.goto(reportUrl(id))
  await page.getByRole('heading', { name: 'Network requests' }).waitFor()
  await settle(page)
  const table = page.getByRole('table')
  expect(await table.locator('thead th').allTextContents()).toEqual(['Method', 'URL', 'Status', 'Duration'])
  expect(await table.locator('tbody tr').evaluateAll((rows) => rows.map((r) => [...r.querySelectorAll('td')].map((td) => td.textContent)))).toEqual([
    ['POST', 'https://shop.example/api/cart?item=<script>alert(1)</script>', '500', '1234 ms'],
    ['GET', 'https://shop.example/api/slow', '200', '4100 ms'],
    ['GET', 'https://cdn.example/down.js', 'no answer', '30000 ms'],
  ])
  const meta = page.locator('section[aria-labelledby="meta-h"]')
  expect(await meta.locator('dt').allTextContents()).toEqual(['plan', '<b>key</b>', 'nested'])
  expect(await meta.locator('dd').allTextContents()).toEqual(['pro', '<img src=x onerror="window.pwned=1">', '{"cart":3}'])
  // Text, never markup: nothing the reporter sent became an element or ran.
  expect(await page.locator('.report-main img, .report-main script, .report-main b').count()).toBe(0)
  expect(await page.evaluate(() => (window as unknown as { pwned?: number }).pwned)).toBeUndefined()
  // The console section sits just before the requests.
  expect(await page.locator('.report-main h2').allTextContents()).toEqual(expect.arrayContaining(['Console', 'Network requests', 'Metadata']))
  await expectPageClean(page, 'report-network')
  // No mail was asked for: the page asked for nothing that is not there.
  expect(problems).toEqual([])
}, 90_000)

test.skipIf(!!BROWSER_SKIP)('a duplicate\'s notice keeps "Go to lead", Unmerge and Make lead apart; dashboard merges and unmerges are audited with who and what', async () => {
  const lead = await submitReport(server.url, tenant.pub, 'The newsletter signup form rejects valid email addresses.')
  const other = await submitReport(server.url, tenant.pub, 'The newsletter signup form says my valid email address is invalid.')
  await awaiting(lead)
  await awaiting(other)
  await page.goto(reportUrl(other))
  const mergeButton = page.locator('.similar li', { hasText: 'rejects valid email' }).getByRole('button', { name: /Merge into this/ })
  await mergeButton.waitFor()
  await mergeButton.focus()
  await page.keyboard.press('Enter')
  const notice = page.locator('p.notice', { hasText: 'This report is a duplicate' })
  await notice.waitFor()
  const text = (await notice.innerText()).replace(/\s+/g, ' ')
  expect(text).toContain('Go to lead Unmerge Make lead')
  expect(await notice.getByRole('link', { name: 'Go to lead' }).count()).toBe(1)
  expect(auditRows('feedback.merged')).toEqual([{ actor: `admin:${adminId}`, target_id: other, data: JSON.stringify({ leadId: lead }) }])
  await tabTo('Unmerge')
  await page.keyboard.press('Enter')
  await notice.waitFor({ state: 'detached' })
  expect(auditRows('feedback.unmerged')).toEqual([{ actor: `admin:${adminId}`, target_id: other, data: JSON.stringify({ leadId: lead }) }])
  // An sk_ key's merges are its backend's traffic, not audited (as its token mints are not).
  expect((await call(server.url, 'POST', `/v1/feedback/${other}/merge`, { auth: tenant.key, body: { leadId: lead } })).status).toBe(200)
  expect(auditRows('feedback.merged')).toHaveLength(1)
}, 90_000)

test.skipIf(!!BROWSER_SKIP)('on a 375 px phone the inbox\'s first row starts near the top', async () => {
  await page.goto(`${server.url}/admin/o/${tenant.orgId}/inbox?folder=all`)
  await page.locator('.rows .row').first().waitFor()
  await settle(page)
  await page.setViewportSize({ width: 375, height: 740 })
  await page.waitForTimeout(100)
  const y = await page.locator('.rows .row').first().evaluate((el) => el.getBoundingClientRect().top + window.scrollY)
  await page.setViewportSize({ width: 1280, height: 800 })
  expect(await axeViolations(page)).toEqual([])
  expect(await screenshots(page, 'inbox-phone')).toEqual([])
  expect(y).toBeLessThanOrEqual(320)
}, 90_000)

test.skipIf(!!BROWSER_SKIP)('`/` is a small styled page linking the dashboard and the docs, and /demo under --demo only', async () => {
  // Without --demo: no demo link, in the page or the JSON.
  problems = []
  await page.goto(server.url + '/')
  expect(await page.getByRole('link').evaluateAll((as) => as.map((a) => a.getAttribute('href')))).toEqual(['/admin', '/docs', '/openapi.json', '/readyz'])
  expect((await call(server.url, 'GET', '/')).body.links.demo).toBeUndefined()
  const demoDir = tempDir('fixloop-dash-root-')
  const demo = await spawnWithStdout(demoDir, {}, ['--demo'])
  try {
    await page.goto(demo.url + '/')
    expect(await page.getByRole('link').evaluateAll((as) => as.map((a) => a.getAttribute('href')))).toEqual(['/admin', '/demo', '/docs', '/openapi.json', '/readyz'])
    expect((await call(demo.url, 'GET', '/')).body.links.demo).toBe('/demo')
    // Styled (its one style allowed by the page's CSP, nothing refused): links are cards, not bare list items.
    expect(await page.locator('main').evaluate((m) => getComputedStyle(m).maxWidth)).not.toBe('none')
    expect(await page.getByRole('link', { name: /Widget demo/ }).evaluate((a) => getComputedStyle(a).borderTopStyle)).toBe('solid')
    await page.getByRole('heading', { level: 1 }).waitFor()
    expect(await axeViolations(page)).toEqual([])
    expect(await screenshots(page, 'root-demo')).toEqual([])
    // Keyboard: the first Tab reaches the dashboard link.
    await page.keyboard.press('Tab')
    expect(await page.evaluate(() => document.activeElement?.getAttribute('href'))).toBe('/admin')
  } finally {
    await demo.stop()
    rmSync(demoDir, { recursive: true, force: true })
  }
  expect(problems).toEqual([])
}, 90_000)

/**
 * The dashboard's issue-tracker pages in Chromium against the compiled binary (docs/trackers.md,
 * src/admin-ui/app/trackers.js): an owner connects Jira Cloud (the strict Jira stub, test/jira-stub.ts)
 * from the App page by keyboard, sees the webhook URL and the secret once and the connection's health;
 * on a lead's report page "Create issue in Jira" pushes it and the issue's key appears as a link with its
 * state and sync state. A report with a pull request resolved through its tracker issue (a "Deployed" status
 * the dashboard's state mapping makes `resolved`) does not claim the request was merged. A tracker that fails shows on both pages (the report's sync state with the tracker's
 * answer, the App's health with the next retry). A server without the tracker routes shows a note and no push button. Every page
 * axe-core clean and photographed at 1280 and 375 px (FIXLOOP_SCREENSHOT_DIR, default test-output/).
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import type { Browser, Page } from 'playwright-core'
import { BROWSER_SKIP, signInByKeyboard, launchBrowserEarly } from './browser'
import { call, eventually, runBinary, tempDir } from './harness'
import { cliTenant, ensureBinary, openDataDb } from './helpers-lifecycle'
import { expectPageClean, photo, settle, SHOTS, spawnWithStdout, submitReport, writePasswordFile, type SpawnedServer } from './dashboard-helpers'
import { startJiraStub, type JiraStub } from './jira-stub'

const EMAIL = 'trackers@example.com'
const PASSWORD = 'trackers password 42'
const MEMBER = 'member@example.com'

let dir: string
let server: SpawnedServer
let browser: Browser
let early: ReturnType<typeof launchBrowserEarly> | undefined
let page: Page
let jira: JiraStub
let tenant: Awaited<ReturnType<typeof cliTenant>>
/** Whether this build serves the tracker routes (GET /v1/apps/:id/tracker is not a 404). */
let routes = false
/** The webhook secret the connect case saw once, for the Jira stub's deliveries. */
let webhookSecret = ''

beforeAll(async () => {
  if (BROWSER_SKIP) return
  early = launchBrowserEarly()
  ensureBinary()
  dir = tempDir('fixloop-dash-trackers-')
  jira = await startJiraStub()
  tenant = await cliTenant(dir)
  expect((await runBinary(['admin', 'create', '--email', EMAIL, '--password-file', writePasswordFile(dir, 'pw', PASSWORD), '--data-dir', dir])).code).toBe(0)
  const member = ['admin', 'create', '--email', MEMBER, '--password-file', writePasswordFile(dir, 'mpw', PASSWORD), '--org', tenant.orgId, '--role', 'member', '--data-dir', dir]
  expect((await runBinary(member)).code).toBe(0)
  // The Jira stub listens on loopback: the operator knob for private tracker addresses lets it through.
  // Polling off: a poll would take the failure the failing case sets up for a push.
  server = await spawnWithStdout(dir, { FIXLOOP_RATE_LIMIT_MULTIPLIER: '100', FIXLOOP_TRACKER_ALLOW_PRIVATE: '1', FIXLOOP_PUBLIC_URL: 'http://127.0.0.1', FIXLOOP_TRACKER_POLL_MINUTES: '0' })
  routes = (await call(server.url, 'GET', `/v1/apps/${tenant.appId}/tracker`, { auth: tenant.key })).status !== 404
  browser = await early.ready
  page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage()
  await signInByKeyboard(page, server.url, EMAIL, PASSWORD)
}, 60_000)

afterAll(async () => {
  await early?.close()
  await server?.stop()
  await jira?.stop()
  if (dir) rmSync(dir, { recursive: true, force: true })
})

test.skipIf(!!BROWSER_SKIP)('a server without the tracker routes: a note on the App page, no push button on the report page', async () => {
  // This build may have the routes: answer them as an older server would (404), so the page's fallback is what is seen.
  if (routes) await page.route('**/v1/apps/*/tracker', (r) => r.fulfill({ status: 404, json: { error: { code: 'not_found', message: 'Not found' } } }))
  try {
    await page.goto(`${server.url}/admin/o/${tenant.orgId}/apps/${tenant.appId}`)
    const section = page.getByRole('region', { name: 'Issue tracker' })
    await section.getByText('This server does not offer issue-tracker sync.').waitFor()
    await expectPageClean(page, 'app-tracker-unavailable')
    const id = await submitReport(server.url, tenant.pub, 'The search box forgets what I typed')
    await page.goto(`${server.url}/admin/o/${tenant.orgId}/r/${id}`)
    await page.getByRole('heading', { name: 'History' }).waitFor()
    await settle(page)
    expect(await page.getByRole('button', { name: /Create issue in/ }).count()).toBe(0)
  } finally {
    await page.unrouteAll()
  }
}, 60_000)

/** Types into the field labelled `label` by keyboard (focus, select all, type). */
async function typeInto(p: Page, label: string, text: string) {
  // In the tracker section: the mail section below has a "Your fixloop password" field of its own.
  await p.getByRole('region', { name: 'Issue tracker' }).getByLabel(label, { exact: true }).focus()
  await p.keyboard.press('ControlOrMeta+a')
  await p.keyboard.type(text)
}

test.skipIf(!!BROWSER_SKIP)('connect Jira by keyboard, see the webhook and its secret once, push a lead, see its key as a link', async () => {
  if (!routes) {
    console.warn('dashboard-trackers: this build has no tracker routes; the connect-and-push case needs them (issue 26, h-trk)')
    return
  }
  await page.goto(`${server.url}/admin/o/${tenant.orgId}/apps/${tenant.appId}`)
  const section = page.getByRole('region', { name: 'Issue tracker' })
  await section.getByRole('button', { name: 'Connect tracker' }).waitFor()
  // The tracker select: focused, then chosen by typing its name, as a keyboard user does.
  await page.getByLabel('Tracker', { exact: true }).focus()
  await page.keyboard.type('Jira')
  await section.getByLabel('Account e-mail').waitFor()
  await typeInto(page, 'Project key', 'PROJ')
  await typeInto(page, 'API URL', jira.url)
  await typeInto(page, 'Account e-mail', jira.email)
  await typeInto(page, 'Access token', jira.token)
  await typeInto(page, 'State mapping', 'deployed = resolved')
  await page.keyboard.press('Tab') // leave the textarea (Enter there is a new line), then submit from a text input
  // Issues go to this tracker after the session too: the admin's own password is asked again, in a field
  // named apart from the tracker's token (docs/security.md "Which actions ask"). Submitted without it, nothing is sent.
  await section.getByText('Issues with the reports’ content go to this tracker, also after you sign out').waitFor()
  await expectPageClean(page, 'app-tracker-confirm')
  await page.getByLabel('Project key', { exact: true }).focus()
  await page.keyboard.press('Enter')
  expect(await section.getByLabel('Your fixloop password', { exact: true }).evaluate((el) => (el as HTMLInputElement).validity.valueMissing)).toBe(true)
  expect((await call(server.url, 'GET', `/v1/apps/${tenant.appId}/tracker`, { auth: tenant.key })).body.tracker).toBeNull()
  await typeInto(page, 'Your fixloop password', PASSWORD)
  await page.keyboard.press('Enter')

  const secret = section.getByLabel('Webhook secret')
  await secret.waitFor()
  expect(await secret.inputValue()).not.toBe('')
  webhookSecret = await secret.inputValue()
  expect(await section.getByLabel('Webhook URL').inputValue()).toContain(tenant.appId)
  await section.getByText('OK', { exact: true }).waitFor()
  // The token is never shown again: the field is empty and nothing on the page carries it.
  expect(await page.getByLabel('Access token', { exact: true }).inputValue()).toBe('')
  expect(await page.content()).not.toContain(jira.token)
  await expectPageClean(page, 'app-tracker-connected')
  // "Done" hides the secret for good; a reload does not bring it back.
  await section.getByRole('button', { name: 'Done' }).press('Enter')
  await page.reload()
  await section.getByRole('button', { name: 'Save tracker' }).waitFor()
  expect(await section.getByLabel('Webhook secret').count()).toBe(0)
  // Connected: the state mapping alone sends nothing elsewhere, so it is saved without the password.
  expect(await section.getByLabel('Your fixloop password', { exact: true }).count()).toBe(0)
  await typeInto(page, 'State mapping', 'deployed = resolved\nwont do = ignore')
  await page.getByLabel('Project key', { exact: true }).press('Enter')
  await section.getByText('Saved.').waitFor()
  // A new webhook secret lets its holder move reports: the dialog asks the password too, focused first.
  await section.getByRole('button', { name: 'Rotate webhook secret' }).press('Enter')
  const rotate = page.getByRole('dialog', { name: "Rotate the tracker's webhook secret?" })
  await rotate.getByLabel('Your fixloop password', { exact: true }).waitFor()
  expect(await page.evaluate(() => document.activeElement?.id)).toBe('t-rotate-password')
  expect(await rotate.getByRole('button', { name: 'Rotate now' }).isDisabled()).toBe(false)
  await expectPageClean(page, 'app-tracker-rotate')
  // The full-page image makes a dialog small: the dialog itself too, at both widths, to look at.
  if (SHOTS) {
    for (const width of [1280, 375]) {
      await page.setViewportSize({ width, height: width === 375 ? 740 : 800 })
      await photo(rotate, `dashboard-app-tracker-rotate-element-${width}.png`)
    }
    await page.setViewportSize({ width: 1280, height: 800 })
  }
  await rotate.getByLabel('Your fixloop password', { exact: true }).focus()
  await page.keyboard.type(PASSWORD)
  await page.keyboard.press('Enter')
  await rotate.waitFor({ state: 'hidden' })
  const rotated = section.getByLabel('Webhook secret', { exact: true })
  await rotated.waitFor()
  expect(await rotated.inputValue()).not.toBe(webhookSecret)
  webhookSecret = await rotated.inputValue()
  await section.getByRole('button', { name: 'Done' }).press('Enter')

  const id = await submitReport(server.url, tenant.pub, 'Checkout button does nothing on mobile Safari')
  await page.goto(`${server.url}/admin/o/${tenant.orgId}/r/${id}`)
  const push = page.getByRole('button', { name: 'Create issue in Jira' })
  await push.waitFor()
  await push.press('Enter')
  const link = page.getByRole('link', { name: /^PROJ-\d+$/ })
  await link.waitFor({ timeout: 20_000 })
  const key = (await link.textContent())!
  expect(await link.getAttribute('href')).toBe(`${jira.url}/browse/${key}`)
  await page.getByText('In sync').waitFor({ timeout: 20_000 })
  // The project the issue is in (a link keeps it when the App's tracker moves to another project).
  expect(await page.locator('.tracker-issue .tracker-project').textContent()).toBe('PROJ')
  expect(jira.issues.get(key)!.summary.length).toBeGreaterThan(0)
  await expectPageClean(page, 'report-tracker-issue')
}, 90_000)

test.skipIf(!!BROWSER_SKIP)('a member sees no connection form but pushes a lead from its report page', async () => {
  if (!routes) return
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } })
  try {
    const member = await context.newPage()
    await signInByKeyboard(member, server.url, MEMBER, PASSWORD)
    await member.goto(`${server.url}/admin/o/${tenant.orgId}/apps/${tenant.appId}`)
    const section = member.getByRole('region', { name: 'Issue tracker' })
    await section.getByText('Org owners connect an issue tracker here.').waitFor()
    expect(await section.getByLabel('Access token').count()).toBe(0)
    const id = await submitReport(server.url, tenant.pub, 'The invoice PDF is blank')
    await member.goto(`${server.url}/admin/o/${tenant.orgId}/r/${id}`)
    // The member may not read the connection (which tracker), so the button names none.
    const push = member.getByRole('button', { name: 'Create tracker issue' })
    await push.waitFor()
    await push.press('Enter')
    await member.getByRole('link', { name: /^PROJ-\d+$/ }).waitFor({ timeout: 20_000 })
    await expectPageClean(member, 'report-tracker-issue-member')
  } finally {
    await context.close()
  }
}, 60_000)

test.skipIf(!!BROWSER_SKIP)('a report whose pull request is open, resolved through its tracker issue, does not say "merged"', async () => {
  if (!routes) return
  expect(webhookSecret).not.toBe('')
  jira.setWebhook(`${server.url}/v1/tracker-hooks/${tenant.appId}`, webhookSecret)
  const id = await submitReport(server.url, tenant.pub, 'The coupon field rejects lowercase codes')
  await eventually(async () => (await call(server.url, 'GET', `/v1/feedback/${id}`, { auth: tenant.key })).body.status === 'awaiting_manual' || undefined, 15_000)
  expect((await call(server.url, 'POST', `/v1/feedback/${id}/tracker-issue`, { auth: tenant.key })).status).toBe(202)
  const key = await eventually(async () => {
    const v = (await call(server.url, 'GET', `/v1/feedback/${id}`, { auth: tenant.key })).body.trackerIssue
    return v && v.syncState === 'synced' ? (v.key as string) : undefined
  }, 20_000)
  // The report's run opened a pull request (as the runner writes it), still open on the host.
  const db = openDataDb(dir)
  db.query("UPDATE feedback SET status = 'pr_opened', merge_request_url = ?, version = version + 1 WHERE id = ?").run('https://github.com/acme/shop/pull/31', id)
  db.close()
  await page.goto(`${server.url}/admin/o/${tenant.orgId}/r/${id}`)
  await page.getByRole('link', { name: key }).waitFor()
  expect(await page.locator('.pr-state').textContent()).toBe('Pull request: open')

  // A person moves the Jira issue to "Deployed" (an in-progress status; the mapping entered on the App
  // page, "deployed = resolved", makes it resolve the report): the pull request is still open.
  const sent = await jira.setStatus(key, 'Deployed', 'indeterminate')
  expect(JSON.parse(sent!.text).outcome).toBe('moved')
  await page.reload()
  await page.getByRole('link', { name: key }).waitFor()
  expect((await call(server.url, 'GET', `/v1/feedback/${id}`, { auth: tenant.key })).body.status).toBe('resolved')
  expect(await page.locator('.pr-state').textContent()).toBe(`Resolved by its pull request or its tracker issue ${key}`)
  expect(await page.content()).not.toContain('Pull request: <strong>merged')
  await expectPageClean(page, 'report-resolved-by-tracker')
}, 60_000)

test.skipIf(!!BROWSER_SKIP)('a failing tracker: the report page shows it with the tracker\'s answer, the App page the health and the next retry', async () => {
  if (!routes) return
  const id = await submitReport(server.url, tenant.pub, 'The order history page shows yesterday twice')
  jira.failNext(429, 3600)
  await page.goto(`${server.url}/admin/o/${tenant.orgId}/r/${id}`)
  const push = page.getByRole('button', { name: 'Create issue in Jira' })
  await push.waitFor()
  await push.press('Enter')
  await page.getByRole('status').filter({ hasText: 'Failing, retrying' }).waitFor({ timeout: 20_000 })
  await page.getByText(/answered 429/).waitFor()
  expect(await page.content()).not.toContain(jira.token)
  await expectPageClean(page, 'report-tracker-failing')

  await page.goto(`${server.url}/admin/o/${tenant.orgId}/apps/${tenant.appId}`)
  const section = page.getByRole('region', { name: 'Issue tracker' })
  await section.getByText('Failing', { exact: true }).waitFor()
  await section.getByText(/answered 429/).waitFor()
  await section.getByText('Next retry').waitFor()
  await section.getByText('1 waiting to sync', { exact: false }).waitFor()
  expect(await page.content()).not.toContain(jira.token)
  await expectPageClean(page, 'app-tracker-failing')
}, 60_000)

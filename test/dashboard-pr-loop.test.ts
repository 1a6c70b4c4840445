/**
 * Following the pull request in the dashboard, in Chromium against the compiled binary: the report page
 * shows the pull request's state (open, then merged after a signed merge webhook), lists review
 * iterations (runs with trigger `review`) apart from the report's own run, and the reviews waiting for an
 * iteration (who and when). The page passes axe-core and
 * is photographed at 1280 and 375 px.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import type { Browser, Page } from 'playwright-core'
import { signInByKeyboard, launchBrowserEarly } from './browser'
import { call, eventually, runBinary, tempDir } from './harness'
import { cliJson, cliTenant, ensureBinary, openDataDb } from './helpers-lifecycle'
import { expectPageClean, spawnWithStdout, submitReport, writePasswordFile, type SpawnedServer } from './dashboard-helpers'
import { delivery, send } from './git-host-webhooks'

const EMAIL = 'loop@example.com'
const PASSWORD = 'loop password 42'
let dir: string
let server: SpawnedServer
let browser: Browser
let early: ReturnType<typeof launchBrowserEarly> | undefined
let page: Page
let tenant: Awaited<ReturnType<typeof cliTenant>>
let secret: string

beforeAll(async () => {
  early = launchBrowserEarly()
  ensureBinary()
  dir = tempDir('fixloop-dash-loop-')
  tenant = await cliTenant(dir)
  const connected = await cliJson(dir, ['app', 'connect-repo', tenant.appId, '--git-url', 'https://git.example/acme/shop.git', '--host', 'github', '--host-token-file', writePasswordFile(dir, 'tok', 'ghp_dashboardtoken'), '--agent', 'command', '--agent-command', 'true'])
  secret = connected.webhookSecret
  expect(connected.webhookPath).toBe(`/v1/git-hooks/${tenant.appId}`)
  const admin = await runBinary(['admin', 'create', '--email', EMAIL, '--password-file', writePasswordFile(dir, 'pw', PASSWORD), '--data-dir', dir])
  expect(admin.code).toBe(0)
  server = await spawnWithStdout(dir, { FIXLOOP_RATE_LIMIT_MULTIPLIER: '100', FIXLOOP_AGENT_SANDBOX: 'off' })
  browser = await early.ready
  page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage()
  page.on('pageerror', (e) => console.error('page error:', e.message))
  await signInByKeyboard(page, server.url, EMAIL, PASSWORD)
}, 60_000)

afterAll(async () => {
  await early?.close()
  await server?.stop()
  rmSync(dir, { recursive: true, force: true })
})

test('the report page shows the PR state and the review iterations; a merge webhook turns it to merged', async () => {
  const id = await submitReport(server.url, tenant.pub, 'The checkout button does nothing on the payment page.')
  await eventually(async () => (await call(server.url, 'GET', `/v1/feedback/${id}`, { auth: tenant.key })).body.status === 'awaiting_manual', 10_000)
  const url = 'https://github.com/acme/shop/pull/12'
  // The report's run opened the PR, then one review iteration ran (as the runner writes them).
  const db = openDataDb(dir)
  db.query("UPDATE feedback SET status = 'pr_opened', merge_request_url = ?, version = version + 1 WHERE id = ?").run(url, id)
  const run = (rid: string, trigger: string, status: string, at: number) =>
    db.query("INSERT INTO agent_runs (id, org_id, app_id, feedback_id, provider, status, branch, timings, pr_url, created_at, started_at, trigger) VALUES (?, ?, ?, ?, 'command', ?, ?, ?, ?, ?, ?, ?)")
      .run(rid, tenant.orgId, tenant.appId, id, status, `fixloop/${id}`, JSON.stringify({ prepareMs: 1, cloneMs: 2, agentMs: 3, pushMs: 4, prMs: 5 }), url, at, at, trigger)
  run('aaaaaaaaaaaaaaaaaaaaaaa1', 'report', 'succeeded', Date.now() - 60_000)
  run('aaaaaaaaaaaaaaaaaaaaaaa2', 'review', 'guardrailed', Date.now())
  // Two reviews wait for the next iteration (the App's slot was busy when they came).
  for (const [rid, author] of [['pr00000000000000000000a1', 'octo-reviewer'], ['pr00000000000000000000a2', null]] as const) {
    db.query("INSERT INTO pending_reviews (id, org_id, app_id, feedback_id, pr_url, text, author, received_at) VALUES (?, ?, ?, ?, ?, 'Please handle [EMAIL] too', ?, ?)").run(rid, tenant.orgId, tenant.appId, id, url, author, Date.now())
  }
  db.close()

  await page.goto(`${server.url}/admin/o/${tenant.orgId}/r/${id}`)
  await page.getByRole('heading', { name: 'Agent runs' }).waitFor()
  expect(await page.locator('.pr-state').textContent()).toBe('Pull request: open')
  const headings = await page.locator('article.run h3').allTextContents()
  expect(headings.length).toBe(2)
  expect(headings[0]).toStartWith('Review iteration · Stopped by a guardrail')
  expect(headings[1]).toStartWith('Succeeded')
  const waiting = page.locator('.pending-reviews')
  expect(await waiting.getByRole('heading').textContent()).toBe('2 reviews wait for an iteration')
  expect(await waiting.locator('li').allTextContents()).toEqual([expect.stringContaining('octo-reviewer'), expect.stringContaining('A reviewer')])
  // Who and when, never the review's text.
  expect(await waiting.textContent()).not.toContain('Please handle')
  await expectPageClean(page, 'report-pr-open')

  const merged = await send(server.url, tenant.appId, delivery('github', 'merged', { url, number: 12, head: `fixloop/${id}` }, secret))
  expect(merged.body.outcome).toBe('moved')
  await page.reload()
  await page.getByRole('heading', { name: 'Agent runs' }).waitFor()
  expect(await page.locator('.pr-state').textContent()).toBe('Pull request: merged')
  await expectPageClean(page, 'report-pr-merged')
}, 60_000)

test('the App page names the webhook URL; fixloop app rotate-webhook-secret prints a new secret, and the old one stops working at once', async () => {
  await page.goto(`${server.url}/admin/o/${tenant.orgId}/apps/${tenant.appId}`)
  await page.getByRole('heading', { name: 'Repository and agent' }).waitFor()
  expect(await page.getByText('Git host webhook:').textContent()).toContain(`${server.url}/v1/git-hooks/${tenant.appId}`)
  await expectPageClean(page, 'app-webhook-url')
  const rotated = await cliJson(dir, ['app', 'rotate-webhook-secret', tenant.appId])
  expect(rotated).toMatchObject({ appId: tenant.appId, webhookPath: `/v1/git-hooks/${tenant.appId}` })
  expect(rotated.webhookSecret).not.toBe(secret)
  const pr = { url: 'https://github.com/acme/shop/pull/99', number: 99, head: 'fixloop/x' }
  expect((await send(server.url, tenant.appId, delivery('github', 'closed', pr, secret))).status).toBe(401)
  expect((await send(server.url, tenant.appId, delivery('github', 'closed', pr, rotated.webhookSecret))).body).toEqual({ received: true, outcome: 'ignored' })
  // Audited.
  const db = openDataDb(dir)
  expect(db.query("SELECT action FROM audit_log WHERE action = 'app.webhook_secret_rotated' AND target_id = ?").all(tenant.appId)).toHaveLength(1)
  db.close()
}, 60_000)

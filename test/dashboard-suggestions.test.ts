/**
 * Duplicate suggestions in the dashboard, in Chromium against the compiled binary, keyboard only: the
 * report page shows the suggested lead (its theme, score, reason) with Confirm and Reject; the inbox
 * confirms (y) and rejects (n) the current row's suggestion and lists both keys in its help; the App page
 * shows its merge bars and the decisions they learned from. Every page passes axe-core and is
 * photographed at 1280 and 375 px (FIXLOOP_SCREENSHOT_DIR, default test-output/).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { Database } from 'bun:sqlite'
import type { Browser, Page } from 'playwright-core'
import { signInByKeyboard, launchBrowserEarly } from './browser'
import { call, eventually, runBinary, tempDir } from './harness'
import { cliTenant, ensureBinary } from './helpers-lifecycle'
import { expectPageClean, screenshots, spawnWithStdout, submitReport, writePasswordFile, type SpawnedServer } from './dashboard-helpers'

const EMAIL = 'triage@example.com'
const PASSWORD = 'triage password 42'
/** Three pairs: a lead and a report close to it, below a new App's merge bar (suggested, not merged). */
const PAIRS = [
  ['The checkout button does nothing when I click it on the payment page.', 'The checkout button is slow when I click it on the payment page, it takes ten seconds.'],
  ['The search field on the orders page ignores the enter key completely.', 'The search field on the orders page is slow when I press enter, about ten seconds.'],
  ['The profile picture upload fails with an error on the account settings page.', 'Uploading a profile picture on the account settings page takes a minute, then nothing changes.'],
]

let dir: string
let server: SpawnedServer
let browser: Browser
let early: ReturnType<typeof launchBrowserEarly> | undefined
let page: Page
let tenant: Awaited<ReturnType<typeof cliTenant>>
const pairs: { lead: string; near: string }[] = []

const item = async (id: string) => (await call(server.url, 'GET', `/v1/feedback/${id}`, { auth: tenant.key })).body

beforeAll(async () => {
  early = launchBrowserEarly()
  ensureBinary()
  dir = tempDir('fixloop-dash-suggest-')
  tenant = await cliTenant(dir)
  const admin = await runBinary(['admin', 'create', '--email', EMAIL, '--password-file', writePasswordFile(dir, 'pw', PASSWORD), '--data-dir', dir])
  expect(admin.code).toBe(0)
  server = await spawnWithStdout(dir, { FIXLOOP_RATE_LIMIT_MULTIPLIER: '100' })
  for (const [leadText, nearText] of PAIRS) {
    const lead = await submitReport(server.url, tenant.pub, leadText)
    await eventually(async () => (await item(lead)).status === 'awaiting_manual', 10_000)
    const near = await submitReport(server.url, tenant.pub, nearText)
    await eventually(async () => (await item(near)).status === 'awaiting_manual', 10_000)
    expect((await item(near)).suggestedDuplicateOf?.id).toBe(lead)
    pairs.push({ lead, near })
  }
  browser = await early.ready
  page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage()
  page.on('pageerror', (e) => console.error('page error:', e.message))
  // Sign in, keyboard only.
  await signInByKeyboard(page, server.url, EMAIL, PASSWORD)
})

afterAll(async () => {
  await early?.close()
  await server?.stop()
  rmSync(dir, { recursive: true, force: true })
})

describe('duplicate suggestions in the dashboard', () => {
  test('the report page shows the suggested lead, its score and reason; Confirm merges into it (keyboard)', async () => {
    const { lead, near } = pairs[0]
    await page.goto(`${server.url}/admin/o/${tenant.orgId}/r/${near}`)
    const box = page.getByRole('region', { name: 'Possible duplicate' })
    await box.waitFor()
    const leadTheme = (await item(lead)).theme as string
    await box.getByRole('link', { name: leadTheme }).waitFor()
    expect(await box.textContent()).toMatch(/similarity \d+%/)
    expect(await box.textContent()).toContain('< merge bar')
    await expectPageClean(page, 'report-suggestion')
    await box.getByRole('button', { name: 'Confirm duplicate' }).focus()
    await page.keyboard.press('Enter')
    await page.getByRole('link', { name: 'Go to lead' }).waitFor()
    expect(await page.locator('p.notice').first().textContent()).toContain('confirming a suggestion')
    const merged = await item(near)
    expect(merged.duplicateOfId).toBe(lead)
    expect(merged.duplicateMatch.reason).toBe('confirmed suggestion')
    await expectPageClean(page, 'report-confirmed')
  })

  test('the inbox: the row says "possible duplicate"; n rejects, y confirms the current row’s suggestion; ? lists both', async () => {
    await page.goto(`${server.url}/admin/o/${tenant.orgId}/inbox`)
    const rowOf = (text: string) => page.locator('li.row', { hasText: text })
    // Newest first: pair 3's near report, then its lead, then pair 2's near report.
    await rowOf(PAIRS[2][1].slice(0, 40)).locator('.suggested').waitFor()
    await page.locator('body').press('?')
    const help = page.getByRole('dialog', { name: 'Keyboard shortcuts' })
    await help.waitFor()
    expect(await help.textContent()).toContain('confirm the current report’s suggested duplicate')
    expect(await help.textContent()).toContain('reject the current report’s suggested duplicate')
    await screenshots(page, 'inbox-shortcuts')
    await page.keyboard.press('Escape')
    await help.waitFor({ state: 'detached' })
    await expectPageClean(page, 'inbox-suggestions')

    // The first row is current: n rejects its suggestion.
    expect(await page.locator('li.row.current').textContent()).toContain(PAIRS[2][1].slice(0, 40))
    await page.keyboard.press('n')
    await rowOf(PAIRS[2][1].slice(0, 40)).locator('.result.ok', { hasText: 'Suggestion rejected' }).waitFor()
    expect((await item(pairs[2].near)).suggestedDuplicateOf).toBeNull()
    expect(await rowOf(PAIRS[2][1].slice(0, 40)).locator('.suggested').count()).toBe(0)

    // j j: pair 2's near report; y merges it into its suggested lead and it leaves the list.
    await page.keyboard.press('j')
    await page.keyboard.press('j')
    expect(await page.locator('li.row.current').textContent()).toContain(PAIRS[1][1].slice(0, 40))
    await page.keyboard.press('y')
    await page.getByRole('status').filter({ hasText: 'Merged into the suggested report' }).waitFor()
    await rowOf(PAIRS[1][1].slice(0, 40)).waitFor({ state: 'detached' })
    expect((await item(pairs[1].near)).duplicateOfId).toBe(pairs[1].lead)
    // Focus stays on a row, so the keyboard goes on working.
    expect(await page.evaluate('document.activeElement.classList.contains("row")')).toBe(true)
    // A row without a suggestion: y says so and changes nothing.
    await page.keyboard.press('y')
    await page.getByRole('status').filter({ hasText: 'no suggested duplicate' }).waitFor()
    await screenshots(page, 'inbox-decided')
  })

  test('the App page shows its bars and the decisions they learned from', async () => {
    await page.goto(`${server.url}/admin/o/${tenant.orgId}/apps/${tenant.appId}`)
    const section = page.getByRole('region', { name: 'Duplicate detection' })
    await section.getByText(/2 confirmed, 1 rejected suggestion; 0 automatic merges undone/).waitFor()
    const state = (await call(server.url, 'GET', `/v1/apps/${tenant.appId}/triage`, { auth: tenant.key })).body
    expect(await section.textContent()).toContain(`at similarity ${state.bars.merge.toFixed(2)} or more`)
    expect(await section.textContent()).toContain(`from ${state.bars.suggest.toFixed(2)} up to the merge bar`)
    // A handful of reports teach nothing about arrival.
    expect(state.arrival).toEqual({ locality: 0, bonusAtMost: 0, longAgoBlock: false, mergeBar: null, mergeWithin: null })
    expect(await section.textContent()).toContain('Duplicates arrivein no order that helps yet')
    await expectPageClean(page, 'app-dedup')
  })

  test('the App page says when its duplicates come in bursts, from what the clustering stored', async () => {
    // As the clustering stores it with a verdict where duplicates came in bursts (test/repos/similar-order
    // learns it from real clustering on both dialects); every reader shows the stored value.
    const db = new Database(join(dir, 'fixloop.db'))
    // The running server writes too (its worker, the clustering): wait for its lock rather than fail at once
    // ("database is locked", seen on a loaded machine).
    db.run('PRAGMA busy_timeout = 10000')
    const before = db.query('SELECT arrival_locality AS l FROM app_calibration WHERE app_id = ?').get(tenant.appId) as { l: number }
    try {
      db.run('UPDATE app_calibration SET arrival_locality = 0.62 WHERE app_id = ?', [tenant.appId])
      const state = (await call(server.url, 'GET', `/v1/apps/${tenant.appId}/triage`, { auth: tenant.key })).body
      // 0.05 × (0.3 × 0.62 / 0.05 − 1) = 0.136 of the App's reports; the arrival bar halfway up its bars.
      expect(state.arrival).toEqual({ locality: 0.62, bonusAtMost: 0.186, longAgoBlock: true, mergeBar: expect.any(Number), mergeWithin: 0.136 })
      expect(state.arrival.mergeBar).toBeCloseTo((state.bars.corroboratedMerge + state.bars.merge) / 2, 2)
      await page.goto(`${server.url}/admin/o/${tenant.orgId}/apps/${tenant.appId}`)
      const section = page.getByRole('region', { name: 'Duplicate detection' })
      await section.getByText(/in bursts \(locality 0\.62\): a report that arrived close to another ranks up to \+0\.19 higher/).waitFor()
      expect(await section.textContent()).toContain(`one that arrived within 14 % of the App's reports of a lead merges into it at ${state.arrival.mergeBar.toFixed(2)} or more`)
      expect(await section.textContent()).toContain('a bug last reported long ago is suggested, not merged')
      await expectPageClean(page, 'app-dedup-bursts')
    } finally {
      db.run('UPDATE app_calibration SET arrival_locality = ? WHERE app_id = ?', [before.l, tenant.appId])
      db.close()
    }
  })
  // Issue 36 item 5: the Unmerge button says what the unmerge will change; one unmerge of an identical
  // pair leaves automatic merging on (bars below 1); the App page resets what the bars learned (audited).
  test('Unmerge says what it changes; an identical pair unmerged keeps the bars below 1; the App page resets them', async () => {
    const before = (await call(server.url, 'GET', `/v1/apps/${tenant.appId}/triage`, { auth: tenant.key })).body
    const twin = await submitReport(server.url, tenant.pub, PAIRS[0][0])
    await eventually(async () => (await item(twin)).duplicateMatch?.automatic === true, 10_000)
    const score = (await item(twin)).duplicateMatch.score
    const preview = (await call(server.url, 'GET', `/v1/apps/${tenant.appId}/triage?unmergeScore=${score}`, { auth: tenant.key })).body.afterUnmerge
    expect(preview.merge).toBeLessThan(1)
    await page.goto(`${server.url}/admin/o/${tenant.orgId}/r/${twin}`)
    const says = page.getByText(/Unmerging raises this App’s automatic merge bar|Unmerging raises this App's automatic merge bar/)
    await says.waitFor()
    expect(await says.textContent()).toBe(`Unmerging raises this App's automatic merge bar from ${before.bars.merge.toFixed(2)} to ${preview.merge.toFixed(2)}.`)
    await screenshots(page, 'report-unmerge-effect')
    await page.getByRole('button', { name: 'Unmerge', exact: true }).click()
    await eventually(async () => (await item(twin)).duplicateOfId === null, 10_000)
    const after = (await call(server.url, 'GET', `/v1/apps/${tenant.appId}/triage`, { auth: tenant.key })).body
    expect(after.bars.merge).toBe(preview.merge)
    expect(after.bars.merge).toBeLessThan(1)
    // The same text once more is still merged automatically: identity is evidence.
    const again = await submitReport(server.url, tenant.pub, PAIRS[0][0])
    await eventually(async () => (await item(again)).duplicateMatch?.automatic === true, 10_000)

    await page.goto(`${server.url}/admin/o/${tenant.orgId}/apps/${tenant.appId}`)
    const section = page.getByRole('region', { name: 'Duplicate detection' })
    await section.getByText(`at similarity ${after.bars.merge.toFixed(2)} or more`).waitFor()
    await screenshots(page, 'app-dedup-raised')
    page.once('dialog', (d) => void d.accept())
    await section.getByRole('button', { name: 'Reset what the bars learned' }).click()
    await section.getByRole('status').getByText(/Reset: 4 decisions forgotten/).waitFor()
    const reset = (await call(server.url, 'GET', `/v1/apps/${tenant.appId}/triage`, { auth: tenant.key })).body
    expect(reset.learned).toEqual({ raisedTo: null, provenBar: null, suggestRaisedTo: null, decisions: { confirmed: 0, rejected: 0, unmerged: 0 } })
    await section.getByText(`at similarity ${reset.bars.merge.toFixed(2)} or more`).waitFor()
    await expectPageClean(page, 'app-dedup-reset')
    const db = new Database(join(dir, 'fixloop.db'), { readonly: true })
    try {
      const rows = db.query("SELECT actor, target_id, data FROM audit_log WHERE action = 'app.triage_reset'").all() as { actor: string; target_id: string; data: string }[]
      expect(rows.length).toBe(1)
      expect(rows[0].actor).toStartWith('admin:')
      expect(rows[0].target_id).toBe(tenant.appId)
      expect(JSON.parse(rows[0].data).removed).toEqual({ confirmed: 2, rejected: 1, unmerged: 1 })
    } finally {
      db.close()
    }
  })
})

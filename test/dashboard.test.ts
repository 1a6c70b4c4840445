/**
 * The dashboard end to end, in Chromium against the compiled binary: first-run setup link → admin → Org →
 * App → reveal and rotate the secret (the old user token then fails at the API) → an sk_ key shown once
 * that works at the API → a submitted report in the inbox → keyboard archive → bulk queue with each row's
 * answer → merge and unmerge → another Org's admin gets 404 → a cross-site form post is refused.
 * Every page passes axe-core and paints nothing wider than the window at 1280 and 375 px (photographed into
 * test-output/ with FIXLOOP_SCREENSHOTS=1).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { launchBrowserEarly } from './browser'
import { call, eventually, freePort, runBinary, tempDir } from './harness'
import { userToken } from './helpers-auth'
import { base32Decode, totpCode } from '../src/modules/admins/totp'
import { screenshots, spawnWithStdout, writePasswordFile, type SpawnedServer, expectPageClean, submitReport } from './dashboard-helpers'

const EMAIL = 'owner@example.com'
const PASSWORD = 'correct horse battery'

let dir: string
let server: SpawnedServer
let browser: Browser
let early: ReturnType<typeof launchBrowserEarly> | undefined
let context: BrowserContext
let page: Page
const state: { orgId?: string; appId?: string; pub?: string; secret?: string; key?: string; reports: string[] } = { reports: [] }

const checkPage = (name: string) => expectPageClean(page, name)

const submit = (text: string, extra: Record<string, unknown> = {}) => submitReport(server.url, state.pub, text, extra)

const statusOf = async (id: string) => (await call(server.url, 'GET', `/v1/feedback/${id}`, { auth: state.key })).body.status as string

beforeAll(async () => {
  early = launchBrowserEarly()
  dir = tempDir('fixloop-dash-')
  server = await spawnWithStdout(dir, { FIXLOOP_RATE_LIMIT_MULTIPLIER: '100', FIXLOOP_WEBHOOK_ALLOW_PRIVATE: '1' })
  browser = await early.ready
  context = await browser.newContext({ viewport: { width: 1280, height: 800 } })
  page = await context.newPage()
  page.on('pageerror', (e) => console.error('page error:', e.message))
})

afterAll(async () => {
  await early?.close()
  await server?.stop()
  rmSync(dir, { recursive: true, force: true })
})

describe('dashboard in Chromium against the binary', () => {
  test('first start prints a single-use setup link; it creates the instance owner', async () => {
    const link = await eventually(() => /(http\S+\/admin\/setup#token=\S+)/.exec(server.stdout())?.[1])
    await page.goto(server.url + '/admin')
    await page.getByRole('button', { name: 'Sign in' }).waitFor({ state: 'visible', timeout: 20_000 })
    await checkPage('sign-in')
    await page.goto(link)
    await page.getByLabel('Email').fill(EMAIL)
    await page.getByLabel('Password').fill(PASSWORD)
    await checkPage('setup')
    await page.getByRole('button', { name: 'Create admin' }).click()
    await page.getByRole('heading', { name: 'Orgs' }).waitFor()
    // Single use: the same token is refused now.
    const token = new URL(link).hash.replace('#token=', '')
    const again = await call(server.url, 'POST', '/admin/api/setup', { body: { token, email: 'x@example.com', password: 'another password' } })
    expect(again.status).toBe(403)
    expect(again.body.error.code).toBe('invalid_setup_token')
  })

  test('sign out and sign in with the labelled form, keyboard only', async () => {
    await page.getByRole('button', { name: /Sign out/ }).click()
    await page.getByLabel('Email').fill(EMAIL)
    await page.getByLabel('Password').fill('wrong password!')
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.getByRole('alert').waitFor()
    expect(await page.getByRole('alert').textContent()).toContain('invalid_credentials')
    // Keyboard only: focus the email field, type, Tab to the password, Enter submits.
    await page.getByLabel('Email').focus()
    await page.keyboard.press('ControlOrMeta+a')
    await page.keyboard.type(EMAIL)
    await page.keyboard.press('Tab')
    expect(await page.evaluate('document.activeElement.id')).toBe('password')
    await page.keyboard.press('ControlOrMeta+a')
    await page.keyboard.type(PASSWORD)
    await page.keyboard.press('Enter')
    await page.getByRole('heading', { name: 'Orgs' }).waitFor()
    const cookie = (await context.cookies()).find((c) => c.name === 'fixloop_admin')!
    expect(cookie.httpOnly).toBe(true)
    expect(cookie.sameSite).toBe('Lax')
  })

  test('create an Org and an App; the App page has the widget snippet', async () => {
    await checkPage('orgs')
    await page.getByLabel('Org name').fill('Acme')
    await page.getByRole('button', { name: 'Create Org' }).click()
    await page.getByRole('heading', { name: 'Apps of Acme' }).waitFor()
    state.orgId = /\/admin\/o\/([0-9a-f]{24})\//.exec(page.url())![1]
    await page.getByLabel('App name').fill('Web shop')
    await page.getByRole('button', { name: 'Create App' }).click()
    // Once (a CI run), the App page never came: say what the page showed instead.
    await page
      .getByRole('heading', { name: 'Web shop' })
      .waitFor()
      .catch(async (e) => {
        const field = await page.getByLabel('App name').inputValue().catch(() => '(no field)')
        throw new Error(`${e.message}\nthe page: ${page.url()}\nthe App name field: ${JSON.stringify(field)}\n${(await page.locator('main').innerText()).slice(0, 2000)}`)
      })
    state.appId = /apps\/([0-9a-f]{24})/.exec(page.url())![1]
    state.pub = await page.getByLabel('Public key').inputValue()
    expect(state.pub).toMatch(/^pub_/)
    const snippet = await page.getByLabel('Widget script tag').inputValue()
    expect(snippet).toBe(`<script src="${server.url}/widget.js" data-public-key="${state.pub}" async></script>`)
    await checkPage('app')
  })

  test('settings are saved (processing mode, origins, batch window)', async () => {
    await page.getByLabel('Allowed origins').fill('https://shop.example')
    await page.getByLabel('Batch window (hours)').fill('12')
    await page.getByRole('button', { name: 'Save settings' }).click()
    await page.getByText('Saved.', { exact: true }).waitFor()
    const apps: any = await page.evaluate(async (orgId) => (await fetch(`/admin/api/orgs/${orgId}/apps`)).json(), state.orgId!)
    expect(apps.data[0].allowedOrigins).toEqual(['https://shop.example'])
    expect(apps.data[0].batchWindowHours).toBe(12)
    // Back to any origin, so the API calls below need no Origin header.
    await page.getByLabel('Allowed origins').fill('')
    await page.getByRole('button', { name: 'Save settings' }).click()
    await page.getByText('Saved.', { exact: true }).waitFor()
  })

  test('reveal needs the password; rotate warns, and the old user token then fails at the API', async () => {
    await page.getByRole('button', { name: 'Reveal' }).click()
    const dialog = page.getByRole('dialog', { name: 'Reveal the signing secret' })
    await dialog.getByLabel('Password').fill('not my password')
    await dialog.getByRole('button', { name: 'Reveal' }).click()
    await dialog.getByRole('alert').waitFor()
    await dialog.getByLabel('Password').fill(PASSWORD)
    await dialog.getByRole('button', { name: 'Reveal' }).click()
    const secret = await page.getByLabel('Signing secret (hex)').inputValue()
    expect(secret).toMatch(/^[0-9a-f]{64}$/)
    const oldToken = await userToken(secret, state.appId!)
    const ok = await call(server.url, 'POST', '/v1/feedback', { auth: state.pub, body: { text: 'signed in user report' }, headers: { 'x-service-user-token': oldToken } })
    expect(ok.status).toBe(201)

    await page.getByRole('button', { name: 'Rotate secret' }).click()
    const confirm = page.getByRole('dialog', { name: 'Rotate the signing secret?' })
    expect(await confirm.textContent()).toContain('Every outstanding user token stops working at once')
    await screenshots(page, 'rotate-confirm')
    // The answer holds the new secret: the proof a reveal asks for.
    await confirm.getByLabel('Password').fill('not my password')
    await confirm.getByRole('button', { name: 'Rotate now' }).click()
    await confirm.getByRole('alert').waitFor()
    await confirm.getByLabel('Password').fill(PASSWORD)
    await confirm.getByRole('button', { name: 'Rotate now' }).click()
    await page.getByText('Rotated.').waitFor()
    const newSecret = await page.getByLabel('Signing secret (hex)').inputValue()
    expect(newSecret).not.toBe(secret)
    const refused = await call(server.url, 'POST', '/v1/feedback', { auth: state.pub, body: { text: 'old token' }, headers: { 'x-service-user-token': oldToken } })
    expect(refused.status).toBe(401)
    expect(refused.body.error.code).toBe('invalid_user_token')
    const fresh = await call(server.url, 'POST', '/v1/feedback', { auth: state.pub, body: { text: 'new token' }, headers: { 'x-service-user-token': await userToken(newSecret, state.appId!) } })
    expect(fresh.status).toBe(201)
  })

  test('the audit log lists each reveal and rotation', async () => {
    await page.getByRole('link', { name: 'Audit log' }).click()
    await page.getByRole('heading', { name: /Audit log/ }).waitFor()
    await page.getByRole('cell', { name: 'Signing secret revealed' }).waitFor()
    expect(await page.getByRole('cell', { name: 'Signing secret rotated' }).count()).toBe(1)
    await checkPage('audit')
  })

  test('an sk_ key is shown once, works at the API, is listed by prefix and can be revoked', async () => {
    await page.getByRole('link', { name: 'API keys' }).click()
    await page.getByLabel('Key name').fill('backend')
    await page.getByLabel('Password').fill(PASSWORD)
    await page.getByRole('button', { name: 'Create key' }).click()
    state.key = await page.getByLabel('New API key').inputValue()
    expect(state.key).toMatch(/^sk_/)
    expect((await call(server.url, 'GET', '/v1/apps', { auth: state.key })).status).toBe(200)
    await checkPage('keys')
    await page.reload()
    await page.getByRole('cell', { name: 'backend', exact: true }).waitFor()
    expect(await page.content()).not.toContain(state.key)
    expect(await page.getByRole('cell', { name: `${state.key.slice(0, 7)}…` }).count()).toBe(1)
    // A second key, revoked from the page, is refused at once.
    await page.getByLabel('Key name').fill('temp')
    await page.getByLabel('Password').fill(PASSWORD)
    await page.getByRole('button', { name: 'Create key' }).click()
    const temp = await page.getByLabel('New API key').inputValue()
    page.once('dialog', (d) => d.accept())
    // By keyboard: the Revoke button is replaced by "revoked …"; focus must not fall to the document's top.
    await page.getByRole('button', { name: 'Revoke temp' }).focus()
    await page.keyboard.press('Enter')
    await page.getByText(/^revoked/).waitFor()
    expect((await call(server.url, 'GET', '/v1/apps', { auth: temp })).status).toBe(401)
    await eventually(async () => ((await page.evaluate(() => document.activeElement?.tagName)) === 'H1' ? true : undefined), 5_000)
  })

  test('a submitted report appears in the inbox, unread; opening it shows the detail', async () => {
    // A real screenshot through the upload flow (upload-url → PUT → submit).
    const png = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64')
    const presign = await call(server.url, 'POST', '/v1/feedback/upload-url', { auth: state.pub, body: { contentType: 'image/png', byteSize: png.length, kind: 'screenshot', filename: 'shot.png' } })
    expect(presign.status).toBe(200)
    expect((await fetch(presign.body.url, { method: 'PUT', headers: presign.body.headers, body: png })).status).toBeLessThan(300)
    const id = await submit('The checkout button does nothing on Safari', {
      attachments: [{ key: presign.body.key, kind: 'screenshot', contentType: 'image/png', byteSize: png.length }],
      severity: 'high',
      consoleLogs: [{ level: 'error', message: 'TypeError: x is undefined', ts: Date.now() }],
      viewport: { w: 390, h: 844, dpr: 3 },
    })
    state.reports.push(id)
    await eventually(async () => (await statusOf(id)) === 'awaiting_manual', 10_000)
    await page.getByRole('link', { name: 'Inbox' }).click()
    const row = page.getByRole('link', { name: /checkout button does nothing/ })
    await row.waitFor()
    expect(await page.locator('li.row.unread').count()).toBeGreaterThan(0)
    // A folder with unread reports is read out as "<folder>, unread: N" (it was "<folder> , unread: N").
    const folderNames = await page.locator('a:has(.badge)').evaluateAll((links) => links.map((a) => (a.textContent ?? '').replace(/\s+/g, ' ').trim()))
    expect(folderNames.length).toBeGreaterThan(0)
    for (const name of folderNames) expect(name).toMatch(/^\S.*\S, unread: \d+$/)
    expect(await page.locator('li.row', { hasText: 'checkout button does nothing' }).getByText('screenshot').count()).toBe(1)
    await checkPage('inbox')
    // The theme follows the OS: dark, with the same contrast checks.
    await page.emulateMedia({ colorScheme: 'dark' })
    expect(await page.evaluate('getComputedStyle(document.body).backgroundColor')).toBe('rgb(21, 23, 26)')
    await checkPage('inbox-dark')
    await page.emulateMedia({ colorScheme: 'light' })
    await row.click()
    await page.getByRole('heading', { name: 'Console' }).waitFor()
    expect(await page.locator('pre.console').textContent()).toContain('TypeError')
    expect(await page.getByText('390×844 @3x').count()).toBe(1)
    const shot = page.getByRole('img', { name: 'Screenshot 1' })
    await shot.waitFor()
    // Visible is not loaded: on a busy machine the image may still be on its way (its pixel is 1×1).
    const naturalWidth = await shot.evaluate(
      (img) =>
        new Promise<number>((resolve) => {
          const el = img as unknown as { complete: boolean; naturalWidth: number; addEventListener(t: string, f: () => void): void }
          if (el.complete) return resolve(el.naturalWidth)
          el.addEventListener('load', () => resolve(el.naturalWidth))
          el.addEventListener('error', () => resolve(el.naturalWidth))
        }),
    )
    expect(naturalWidth).toBe(1)
    await page.getByRole('heading', { name: 'History' }).waitFor()
    // The status history comes from the event log: received → … → awaiting a decision, in words.
    await page.locator('ol.history li', { hasText: '→ Awaiting your decision' }).waitFor()
    await checkPage('report')
    await page.goBack()
    await row.waitFor()
    expect(await page.locator('li.row.unread', { hasText: 'checkout button does nothing' }).count()).toBe(0)
  })

  test('keyboard: ? lists the shortcuts, j/k move, e archives the current report', async () => {
    const id = await submit('Archive me with the keyboard please')
    await eventually(async () => (await statusOf(id)) === 'awaiting_manual', 10_000)
    await page.reload()
    await page.getByRole('link', { name: /Archive me with the keyboard/ }).waitFor()
    await page.locator('body').press('?')
    const help = page.getByRole('dialog', { name: 'Keyboard shortcuts' })
    await help.waitFor()
    expect(await help.textContent()).toContain('archive')
    await screenshots(page, 'shortcuts')
    await page.keyboard.press('Escape')
    await help.waitFor({ state: 'detached' })
    // The newest report is first; j then k comes back to it.
    await page.keyboard.press('j')
    await page.keyboard.press('k')
    await page.keyboard.press('e')
    await page.locator('li.row', { hasText: 'Archive me with the keyboard' }).locator('.result.ok', { hasText: 'archived' }).waitFor()
    expect(await statusOf(id)).toBe('archived')
    // j moves to the next row, o opens it.
    await page.keyboard.press('j')
    const second = await page.locator('li.row.current a.row-text').textContent()
    await page.keyboard.press('o')
    await page.getByRole('heading', { name: 'Text' }).waitFor()
    expect(await page.locator('p.text').first().textContent()).toBe(second!.replace(/^Unread: /, ''))
    await page.goBack()
  })

  test('bulk queue shows each row’s own answer (an archived report cannot be queued)', async () => {
    const a = await submit('Bulk one: the search box is slow')
    await eventually(async () => (await statusOf(a)) === 'awaiting_manual', 10_000)
    await page.goto(`${server.url}/admin/o/${state.orgId}/inbox?folder=all`)
    const rowA = page.locator('li.row', { hasText: 'Bulk one' })
    const rowArchived = page.locator('li.row', { hasText: 'Archive me with the keyboard' })
    await rowA.waitFor()
    await rowA.getByRole('checkbox').check()
    await rowArchived.getByRole('checkbox').check()
    await page.getByRole('button', { name: 'Queue selected' }).click()
    await rowArchived.locator('.result.bad', { hasText: 'archived cannot be queued' }).waitFor()
    await rowA.locator('.result.ok').waitFor()
    expect(await page.getByRole('status').filter({ hasText: 'Queued 1 of 2' }).count()).toBe(1)
    expect(await screenshots(page, 'bulk-result')).toEqual([])
    expect(['queued', 'agent_running', 'failed']).toContain(await statusOf(a))
    state.reports.push(a)
  })

  test("an agent run's detail: status, timeline, error; the Apps page shows the 30-day cost", async () => {
    const a = state.reports[state.reports.length - 1]
    // A queued report waits for a repository; connecting (from the App page) one that cannot be cloned
    // gives a failed run.
    await page.goto(`${server.url}/admin/o/${state.orgId}/apps/${state.appId}`)
    await page.getByLabel('Git URL').fill(`${dir}/missing.git`)
    await page.getByLabel('Git host').selectOption('none')
    await page.getByLabel('Agent preset').selectOption('command')
    await page.getByLabel('Agent command').fill('true')
    await page.getByLabel('Host access token').fill('tok-never-shown-123')
    // The commands run on this server: the password is asked again (docs/security.md "Which actions ask").
    await page.getByRole('group', { name: 'Repository and agent' }).getByLabel('Password').fill(PASSWORD)
    await page.getByRole('button', { name: 'Connect repository' }).click()
    await page.getByText('Connected.', { exact: true }).waitFor()
    expect(await page.content()).not.toContain('tok-never-shown-123')
    await checkPage('app-repo')
    const runs = await eventually(async () => {
      const r = await call(server.url, 'GET', `/v1/feedback/${a}/agent-runs`, { auth: state.key })
      return r.body.data.length > 0 && r.body.data[0].status !== 'running' && r.body.data
    }, 15_000)
    await page.goto(`${server.url}/admin/o/${state.orgId}/r/${a}`)
    await page.getByRole('heading', { name: 'Agent runs' }).waitFor()
    const runWords: Record<string, string> = { running: 'Running', succeeded: 'Succeeded', failed: 'Failed', guardrailed: 'Stopped by a guardrail' }
    expect(await page.locator('article.run h3').first().textContent()).toContain(runWords[runs[0].status])
    expect(await page.getByRole('img', { name: /^Timeline: prepare/ }).count()).toBe(1)
    if (runs[0].error) expect(await page.locator('article.run').textContent()).toContain(runs[0].error)
    await checkPage('report-run')
    await page.getByRole('link', { name: 'Apps' }).click()
    await page.getByRole('columnheader', { name: 'Agent cost (30 days)' }).waitFor()
    // The costs arrive in their own request, after the table: wait for them rather than read a 0 too early.
    const runsCell = page.getByRole('row', { name: /Web shop/ }).getByRole('cell').nth(3)
    await eventually(async () => (await runsCell.textContent()) === String(runs.length), 10_000)
    await checkPage('apps')
  })

  test('merge into a similar report, then unmerge: lossless', async () => {
    const lead = await submit('Login page shows a blank screen after entering password on Firefox')
    const dup = await submit('Login page blank screen after entering my password in Firefox')
    await eventually(async () => {
      const [x, y] = await Promise.all([statusOf(lead), statusOf(dup)])
      return !['received', 'sanitizing'].includes(x) && !['received', 'sanitizing'].includes(y)
    }, 10_000)
    const before = (await call(server.url, 'GET', `/v1/feedback/${dup}`, { auth: state.key })).body
    // Clustering may already have attached it: undo that first so the merge is ours.
    if (before.duplicateOfId) await call(server.url, 'POST', `/v1/feedback/${dup}/unmerge`, { auth: state.key })
    await page.goto(`${server.url}/admin/o/${state.orgId}/r/${dup}`)
    const side = page.getByRole('complementary', { name: 'Similar reports' })
    const candidate = side.locator('li', { hasText: 'Login page shows a blank screen' })
    await candidate.waitFor()
    expect(await candidate.locator('.score').textContent()).toMatch(/^\d+%$/)
    await checkPage('report-similar')
    await candidate.getByRole('button', { name: /Merge into this/ }).click()
    await page.getByRole('link', { name: 'Go to lead' }).waitFor()
    const merged = (await call(server.url, 'GET', `/v1/feedback/${dup}`, { auth: state.key })).body
    expect(merged.duplicateOfId).toBe(lead)
    // A duplicate has no theme of its own (the lead holds the cluster's): its heading is its first line, not "Report".
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Login page blank screen after entering my password in Firefox')
    await screenshots(page, 'report-duplicate')
    // Make lead: the duplicate and its lead swap places.
    await page.getByRole('button', { name: 'Make lead' }).click()
    await page.getByRole('link', { name: 'Go to lead' }).waitFor({ state: 'detached' })
    expect((await call(server.url, 'GET', `/v1/feedback/${lead}`, { auth: state.key })).body.duplicateOfId).toBe(dup)
    const swapped = (await call(server.url, 'GET', `/v1/feedback/${dup}`, { auth: state.key })).body
    expect([swapped.duplicateOfId, swapped.duplicateCount]).toEqual([null, 1])
    // Unmerge from the old lead's page: both stand alone again, texts intact.
    await page.goto(`${server.url}/admin/o/${state.orgId}/r/${lead}`)
    await page.getByRole('button', { name: 'Unmerge' }).click()
    await page.getByRole('link', { name: 'Go to lead' }).waitFor({ state: 'detached' })
    const after = (await call(server.url, 'GET', `/v1/feedback/${dup}`, { auth: state.key })).body
    const leadAfter = (await call(server.url, 'GET', `/v1/feedback/${lead}`, { auth: state.key })).body
    expect([after.duplicateOfId, leadAfter.duplicateOfId]).toEqual([null, null])
    expect(after.text).toBe(before.text)
  })

  test('a report of one long unbroken word wraps, in its title and in Similar reports: nothing wider than the window', async () => {
    // A pasted identifier, URL or base64 blob: no space to break at (it made the page 2,122 px wide at 1280).
    const word = 'CheckoutPaymentButtonDoesNothing_' + 'x'.repeat(140)
    const long = await submit(`${word} when I press pay`)
    const other = await submit(`${word} again on the payment page`)
    await eventually(async () => {
      const [x, y] = await Promise.all([statusOf(long), statusOf(other)])
      return !['received', 'sanitizing'].includes(x) && !['received', 'sanitizing'].includes(y)
    }, 10_000)
    await page.goto(`${server.url}/admin/o/${state.orgId}/r/${other}`)
    await page.getByRole('complementary', { name: 'Similar reports' }).locator('li', { hasText: 'CheckoutPaymentButtonDoesNothing' }).first().waitFor()
    await checkPage('report-long-word-similar')
    await page.goto(`${server.url}/admin/o/${state.orgId}/r/${long}`)
    await page.getByRole('heading', { level: 1, name: /CheckoutPaymentButtonDoesNothing/ }).waitFor()
    await checkPage('report-long-word-title')
  })

  test('keyboard focus stays on the page after an action: a removed button leaves it on the heading, a disabled one gets it back', async () => {
    const id = await submit('Focus check: the coupon field rejects valid codes', { identity: { email: 'focus.reporter@example.com' } })
    await eventually(async () => (!['received', 'sanitizing'].includes(await statusOf(id)) ? true : undefined), 10_000)
    await page.goto(`${server.url}/admin/o/${state.orgId}/r/${id}`)
    // A public report that gave its email is not "anonymous".
    await page.getByText('focus.reporter@example.com (public visitor)').waitFor()
    const active = () => page.evaluate(() => ({ tag: document.activeElement?.tagName, text: document.activeElement?.textContent?.trim() }))
    await page.getByRole('button', { name: 'Archive' }).focus()
    await page.keyboard.press('Enter')
    await eventually(async () => ((await statusOf(id)) === 'archived' ? true : undefined), 10_000)
    // Archive is gone from an archived report: the heading has focus, not <body>.
    await eventually(async () => ((await active()).tag === 'H1' ? true : undefined), 5_000)
    expect((await active()).text).toContain('Focus check')
    // A button disabled while its action runs (Chrome drops its focus to <body>) has it back once enabled.
    await page.evaluate(() => {
      const b = document.createElement('button')
      b.textContent = 'Busy for a moment'
      document.querySelector('main')!.append(b)
      b.focus()
      b.disabled = true
      setTimeout(() => (b.disabled = false), 300)
    })
    await eventually(async () => ((await active()).text === 'Busy for a moment' ? true : undefined), 5_000)
  })

  test('account page: sessions listed', async () => {
    await page.getByRole('link', { name: 'Account' }).click()
    await page.getByRole('heading', { name: 'Sessions' }).waitFor()
    await page.getByText('this session').waitFor()
    await checkPage('account')
  })

  test('TOTP: turned on from the Account page; sign-in then asks for the one-time code', async () => {
    await page.getByRole('button', { name: 'Set up an authenticator app' }).click()
    const secret = await page.getByLabel('Secret', { exact: true }).inputValue()
    await page.getByLabel('Code').fill(totpCode(base32Decode(secret), Date.now()))
    await page.getByLabel('Password').fill(PASSWORD)
    await checkPage('account-totp')
    await page.getByRole('button', { name: 'Turn on' }).click()
    await page.getByText('On: sign-in asks for a code').waitFor()
    const other = await browser.newContext()
    try {
      const p2 = await other.newPage()
      await p2.goto(server.url + '/admin')
      await p2.getByLabel('Email').fill(EMAIL)
      await p2.getByLabel('Password').fill(PASSWORD)
      await p2.getByRole('button', { name: 'Sign in' }).click()
      await p2.getByLabel('One-time code').waitFor()
      // The code that turned TOTP on is used up (a code works once): the next step's code signs in.
      await p2.getByLabel('One-time code').fill(totpCode(base32Decode(secret), Date.now() + 30_000))
      await p2.getByRole('button', { name: 'Sign in' }).click()
      await p2.getByRole('heading', { name: /Inbox/ }).waitFor()
    } finally {
      await other.close()
    }
    await page.getByLabel('Password').fill(PASSWORD)
    await page.getByRole('button', { name: 'Turn off' }).click()
    await page.getByRole('button', { name: 'Set up an authenticator app' }).waitFor()
  })

  test('webhooks: add an endpoint (secret shown once), see its deliveries, redeliver', async () => {
    const received: string[] = []
    const receiver = Bun.serve({
      port: 0,
      hostname: '127.0.0.1',
      fetch: async (req) => {
        received.push(req.headers.get('webhook-id') ?? '')
        return new Response('ok')
      },
    })
    try {
      await page.goto(`${server.url}/admin/o/${state.orgId}/webhooks`)
      // Every event goes to the endpoint after this session too: the password is asked again, by keyboard
      // alone (docs/security.md "Which actions ask"). A wrong one creates nothing and says why.
      await page.getByLabel('Endpoint URL').fill(`http://127.0.0.1:${receiver.port}/hook`)
      await page.getByText('The endpoint receives every event, report content included, also after you sign out').waitFor()
      // The hint is there at once; the password field only once the page has read how this admin confirms
      // (a CI run under load pressed Tab before it, and focus went past where it would be).
      await page.getByLabel('Password', { exact: true }).waitFor()
      await page.getByLabel('Event types').press('Tab')
      expect(await page.evaluate(() => document.activeElement?.id)).toBe('hook-password')
      await page.keyboard.type('not the password')
      await page.keyboard.press('Enter')
      await page.getByRole('alert').filter({ hasText: /password/i }).waitFor()
      expect((await call(server.url, 'GET', '/v1/webhooks', { auth: state.key })).body.data).toEqual([])
      await page.getByLabel('Password', { exact: true }).fill('')
      await checkPage('webhooks-confirm')
      await page.getByLabel('Password', { exact: true }).focus()
      await page.keyboard.type(PASSWORD)
      await page.keyboard.press('Tab')
      expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Add endpoint')
      await page.keyboard.press('Enter')
      expect(await page.getByLabel('Webhook secret').inputValue()).toMatch(/^whsec_/)
      // The confirmation was used by this endpoint: the next one asks again.
      expect(await page.getByLabel('Password', { exact: true }).inputValue()).toBe('')
      await checkPage('webhooks-created')
      await submit('A report after the webhook exists')
      await eventually(() => received.length > 0, 15_000)
      await page.getByRole('button', { name: 'Deliveries' }).click()
      const row = page.getByRole('row', { name: /Report received/ }).first()
      await row.waitFor()
      expect(await row.textContent()).toContain('Delivered')
      await checkPage('webhooks')
      const before = received.length
      // By keyboard: the button is disabled while it works and there again after; focus comes back to it.
      await row.getByRole('button', { name: /Redeliver/ }).focus()
      await page.keyboard.press('Enter')
      await eventually(() => received.length > before, 15_000)
      await eventually(async () => ((await page.evaluate(() => document.activeElement?.textContent ?? '')).includes('Redeliver') ? true : undefined), 5_000)
      // A redelivery is the same message: the same webhook-id as an earlier delivery.
      expect(received.slice(0, before)).toContain(received[received.length - 1])
    } finally {
      receiver.stop(true)
    }
  })

  test('an error says what the server said of it: a mistyped event type is named, not only "body not valid"', async () => {
    await page.goto(`${server.url}/admin/o/${state.orgId}/webhooks`)
    await page.getByLabel('Endpoint URL').fill('https://hooks.example.com/fixloop')
    await page.getByLabel('Event types').fill('feedback.statuschanged')
    await page.getByLabel('Password', { exact: true }).fill(PASSWORD)
    await page.getByRole('button', { name: 'Add endpoint' }).click()
    const alert = page.getByRole('alert').filter({ hasText: 'feedback.statuschanged' })
    await alert.waitFor()
    expect(await alert.textContent()).toMatch(/unknown event type.*feedback\.statuschanged.*\(invalid_body\)/)
    expect((await call(server.url, 'GET', '/v1/webhooks', { auth: state.key })).body.data.map((h: { url: string }) => h.url)).not.toContain('https://hooks.example.com/fixloop')
  })

  test("another Org's admin sees 404, in the pages and at the API", async () => {
    const other = await runBinary(['org', 'create', '--name', 'Other', '--json', '--data-dir', dir])
    const otherOrg = JSON.parse(other.stdout).id
    const pw = writePasswordFile(dir, 'member.pw', 'member password 1')
    const created = await runBinary(['admin', 'create', '--email', 'member@example.com', '--password-file', pw, '--org', otherOrg, '--json', '--data-dir', dir])
    expect(created.code).toBe(0)
    expect(Object.keys(JSON.parse(created.stdout)).sort()).toEqual(['email', 'id'])
    const ctx2 = await browser.newContext()
    const p2 = await ctx2.newPage()
    await p2.goto(server.url + '/admin')
    await p2.getByLabel('Email').fill('member@example.com')
    await p2.getByLabel('Password').fill('member password 1')
    await p2.getByRole('button', { name: 'Sign in' }).click()
    await p2.getByRole('heading', { name: /Inbox/ }).waitFor()
    const nav = await p2.goto(`${server.url}/admin/o/${state.orgId}/apps`)
    expect(nav!.status()).toBe(404)
    await p2.getByRole('heading', { name: '404 Not found' }).waitFor()
    expect((await p2.goto(`${server.url}/admin/o/${otherOrg}/r/${state.reports[0]}`))!.status()).toBe(404)
    await p2.getByRole('heading', { name: /404 Report not found/ }).waitFor()
    expect((await p2.goto(`${server.url}/admin/o/${otherOrg}/inbox`))!.status()).toBe(200)
    const codes = await p2.evaluate(
      async ({ orgId, id }) => {
        const a = await fetch(`/admin/api/orgs/${orgId}/apps`)
        const b = await fetch(`/v1/feedback/${id}`, { headers: { 'x-fixloop-org': orgId } })
        const c = await fetch(`/admin/api/orgs/${orgId}/inbox`)
        return [a.status, ((await a.json()) as any).error.code, b.status, c.status]
      },
      { orgId: state.orgId!, id: state.reports[0] },
    )
    expect(codes).toEqual([404, 'not_found', 404, 404])
    await ctx2.close()
  })

  test('a cross-site form post is refused and changes nothing', async () => {
    const port = await freePort()
    const evil = Bun.serve({
      port,
      hostname: '127.0.0.1',
      fetch: () =>
        new Response(
          `<!doctype html><form id="f" method="POST" action="${server.url}/admin/api/orgs" enctype="text/plain"><input name='{"name":"Pwned","x":"' value='"}'></form><script>document.getElementById('f').submit()</script>`,
          { headers: { 'content-type': 'text/html' } },
        ),
    })
    try {
      const before = await page.evaluate(async () => ((await (await fetch('/admin/api/orgs')).json()) as any).data.length)
      // Another port on the same host is same-site: the Lax cookie goes along, so the CSRF check must refuse.
      // "localhost" is another site: the cookie stays home; the post is refused as cross-site all the same.
      for (const [host, expected] of [['127.0.0.1', [403, 'csrf_failed']], ['localhost', [403, 'csrf_failed']]] as const) {
        const p3 = await context.newPage()
        const answer = p3.waitForResponse((r) => r.url().endsWith('/admin/api/orgs') && r.request().method() === 'POST')
        await p3.goto(`http://${host}:${port}/`)
        const res = await answer
        expect([res.status(), (await res.json()).error.code]).toEqual([...expected])
        await p3.close()
      }
      const after = await page.evaluate(async () => ((await (await fetch('/admin/api/orgs')).json()) as any).data.length)
      expect(after).toBe(before)
    } finally {
      evil.stop(true)
    }
  })
})

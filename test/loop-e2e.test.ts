/**
 * The whole loop, end to end, against the compiled binary (issue 25's "Done when"): a private-mode App in
 * auto_pr mode, connected to a real local bare repository with the GitHub stub as its host, with SMTP
 * settings pointing at a real SMTP server. A signed-in user reports a problem through the widget in
 * Chromium and ticks "Email me when this is fixed"; the agent fixes it and opens a pull request; a signed
 * `pull_request_review` asking for changes makes fixloop iterate on the same branch (the new commit on top
 * of the first, still one pull request); a signed merge resolves the report (`feedback.resolved` in the pull
 * feed); the reporter gets exactly one mail, at the token's address, with a one-click unsubscribe; and the
 * widget's "Your reports", reached by keyboard only, shows the report as fixed.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { signUserToken } from '../packages/client/src/user-token'
import { BROWSER_SKIP } from './browser'
import { startGitHostStub, type GitHostStub } from './git-host-stub'
import { git, makeBareRepo } from './git-fixtures'
import { call, eventually, tempDir } from './harness'
import { cliJson } from './helpers-lifecycle'
import { startSmtpSink, type SmtpSink } from './smtp-sink'
import { focused, freshContext, openByKeyboard, reports, tabTo, widgetEnv } from './widget-fixture'

const AGENTS = join(import.meta.dir, 'fixtures', 'agents')
const HOST_TOKEN = 'ghp_' + 'E2eLoopT0kenZ9xW8vU7tS6rQ5pO4nM3lK2j'
const USER = { sub: 'ada-1', email: 'ada@acme.test' }
const TEXT = 'Cart total shows NaN when an item has no price'

// The test's SMTP server listens on loopback: a local relay, which the SMTP address guard allows only
// with FIXLOOP_SMTP_ALLOW_PRIVATE (on serve and on the CLI that stores the settings).
const SMTP_LOCAL = { FIXLOOP_SMTP_ALLOW_PRIVATE: '1' }
const env = widgetEnv(['--public-submission', 'false', '--processing-mode', 'auto_pr'], {
  FIXLOOP_AGENT_SANDBOX_PATHS: AGENTS,
  FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000',
  ...SMTP_LOCAL,
})
let stub: GitHostStub
let sink: SmtpSink
let bare: string

beforeAll(async () => {
  const e = env()
  sink = await startSmtpSink()
  bare = makeBareRepo(tempDir('fixloop-loop-e2e-'), { 'src/app.js': 'export const total = (items) => items.reduce((a, b) => a + b.price, 0)\n' }, 'main', 'shop')
  stub = await startGitHostStub({ kind: 'github', token: HOST_TOKEN, repos: [{ owner: 'acme', name: 'shop', barePath: bare }] })
  // What the operator does: connect the repository (the token from a file) and set the App's SMTP settings.
  const tokenFile = join(e.dataDir, 'host-token')
  await Bun.write(tokenFile, HOST_TOKEN + '\n')
  const connected = await cliJson(e.dataDir, [
    'app', 'connect-repo', e.tenant.appId, '--git-url', bare, '--host', 'github', '--host-api-url', stub.apiUrl, '--host-repo', 'acme/shop',
    '--host-token-file', tokenFile, '--agent', 'command', '--agent-command', `sh ${join(AGENTS, 'review.sh')}`, '--timeout-seconds', '30',
  ])
  // The host's webhook settings: fixloop's route for the App and the secret connect-repo printed once.
  stub.setWebhook(`${e.api}${connected.webhookPath}`, connected.webhookSecret)
  await cliJson(e.dataDir, ['app', 'smtp', e.tenant.appId, '--host', '127.0.0.1', '--port', String(sink.port), '--tls', 'none', '--from', 'Acme <noreply@acme.test>'], SMTP_LOCAL)
  // The customer's backend mints the signed-in user's token with the App's signing secret.
  e.routes.set('/app/token', async () => new Response(await signUserToken({ secret: e.tenant.secret, appId: e.tenant.appId, sub: USER.sub, ctx: { email: USER.email } })))
}, 60_000)

afterAll(async () => {
  await stub?.stop()
  await sink?.stop()
  if (bare) rmSync(dirname(bare), { recursive: true, force: true })
})

const MOUNT = (api: string, pub: string) => `
<script src="${api}/widget.js"></script>
<script>
  Fixloop.init({ publicKey: ${JSON.stringify(pub)}, endpoint: ${JSON.stringify(api)}, screenshot: false,
    getUserToken: function () { return fetch('/app/token').then(function (r) { return r.text() }) } })
</script>`

test.skipIf(!!BROWSER_SKIP)('widget report → agent fix → change request → iteration → merge → resolved, one mail, "Fixed" in Your reports', async () => {
  const e = env()
  const url = e.page('/app', { mount: MOUNT(e.api, e.tenant.pub) })
  const item = async (id: string) => (await call(e.api, 'GET', `/v1/feedback/${id}`, { auth: e.tenant.key })).body
  const runs = async (id: string) => (await call(e.api, 'GET', `/v1/feedback/${id}/agent-runs`, { auth: e.tenant.key })).body.data as any[]
  const headOf = (branch: string) => git([`--git-dir=${bare}`, 'rev-parse', `refs/heads/${branch}`]).trim()

  // 1. The report, through the widget, keyboard only, with "Email me when this is fixed" ticked.
  {
    const { context, page } = await freshContext(e)
    try {
      await page.goto(url)
      const w = await openByKeyboard(page)
      await page.keyboard.type(TEXT)
      await tabTo(page, /^input#fl-notify/)
      await page.keyboard.press('Space')
      expect(await w.host.getByLabel(/^Email me at .* when this is fixed$/).isChecked()).toBe(true)
      await page.keyboard.press('Control+Enter')
      await w.host.getByRole('status').filter({ hasText: 'Thanks' }).waitFor({ timeout: 15_000 })
    } finally {
      await context.close()
    }
  }
  const id = (await reports(e)).find((r: any) => r.text === TEXT)?.id as string
  expect(id).toBeString()

  // 2. The agent fixes it: a pull request is opened on the host, from fixloop's branch.
  const branch = `fixloop/${id}`
  await eventually(async () => (await item(id)).status === 'pr_opened' && (await runs(id))[0]?.status === 'succeeded', 45_000)
  expect(stub.created).toHaveLength(1)
  expect(stub.created[0]).toMatchObject({ repo: 'acme/shop', head: branch, base: 'main' })
  const number = stub.created[0]!.number
  const firstFix = headOf(branch)
  expect(sink.mails).toHaveLength(0) // nothing before the resolution

  // 3. A reviewer requests changes (a signed pull_request_review): fixloop iterates on the same branch.
  const review = await stub.deliver('changes_requested', number, { text: 'Please also handle an empty cart.' })
  expect(review).toMatchObject({ status: 200, body: { received: true, outcome: 'review_queued' } })
  const iterated = await eventually(async () => {
    const all = await runs(id)
    return all.length === 2 && all[0].status !== 'running' && (await item(id)).status === 'pr_opened' ? all : undefined
  }, 45_000)
  expect(iterated.map((r) => [r.trigger, r.status])).toEqual([['review', 'succeeded'], ['report', 'succeeded']])
  const iteration = headOf(branch)
  expect(iteration).not.toBe(firstFix)
  expect(git([`--git-dir=${bare}`, 'rev-parse', `${iteration}^`]).trim()).toBe(firstFix)
  expect(stub.created).toHaveLength(1) // still the one pull request

  // 4. The pull request is merged (a signed pull_request closed, merged=true): the report is resolved.
  expect((await stub.deliver('merged', number)).body.outcome).toBe('moved')
  const resolved = await item(id)
  expect(resolved.status).toBe('resolved')
  const feed = await call(e.api, 'GET', `/v1/events?after=0&limit=100&types=feedback.resolved&appId=${e.tenant.appId}`, { auth: e.tenant.key })
  expect(feed.status).toBe(200)
  const events = feed.body.data.filter((ev: any) => ev.data.feedbackId === id)
  expect(events).toHaveLength(1)
  expect(events[0].data).toMatchObject({ feedbackId: id, leadFeedbackId: id, prUrl: resolved.mergeRequestUrl, externalUserId: USER.sub })

  // 5. Exactly one mail, to the token's address, with a one-click unsubscribe; none follows it.
  const mail = await eventually(() => sink.mails[0], 20_000)
  await Bun.sleep(6_000) // longer than the mailer's 5 s sweep: a second mail would have come by now
  expect(sink.mails).toHaveLength(1)
  expect(mail.to).toEqual([USER.email])
  // A subject a person reads: the report's short title and the App, never the 24-hex id (issue 36.11).
  expect(mail.headers.get('subject')).toMatch(/^Fixed: .+ \(.+\)$/)
  expect(mail.headers.get('subject')).not.toContain(id)
  expect(mail.headers.get('list-unsubscribe')).toStartWith(`<${e.api}/`)
  expect(mail.headers.get('list-unsubscribe-post')).toBe('List-Unsubscribe=One-Click')
  for (const secret of [HOST_TOKEN, e.tenant.secret, e.tenant.key]) expect(mail.raw).not.toContain(secret)
  const notification = await call(e.api, 'GET', `/v1/feedback/${id}/notification`, { auth: e.tenant.key })
  expect(notification.body).toMatchObject({ address: 'a***@acme.test', state: 'sent', attempts: 1 })

  // 6. The same user, back on the page: "Your reports", by keyboard only, shows it fixed.
  const { context, page } = await freshContext(e)
  try {
    await page.goto(url)
    const w = await openByKeyboard(page)
    await tabTo(page, /^button:Your reports/)
    await page.keyboard.press('Enter')
    const list = w.host.getByRole('list', { name: 'Your reports' })
    await list.getByRole('listitem').first().waitFor({ timeout: 15_000 })
    expect(await focused(page)).toMatch(/^h3#fl-mine-title/)
    const items = await list.getByRole('listitem').allInnerTexts()
    expect(items).toHaveLength(1)
    expect(items[0]).toContain(TEXT)
    expect(items[0]).toContain('Fixed')
  } finally {
    await context.close()
  }
}, 120_000)

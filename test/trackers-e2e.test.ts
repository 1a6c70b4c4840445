/**
 * Issue-tracker sync end to end against the compiled binary (issue 26's "Done when", for GitHub through the
 * stub of test/tracker-stub.ts): the CLI connects the App's tracker with a rule (push a lead reaching 2
 * duplicates; the token from a file, never printed), three reports come in through the widget route and are
 * merged into one lead, the rule creates the issue on the stub; fixloop's own echo (a delivery whose sender
 * is the token's user) and a comment event change nothing; a maintainer closing the issue (signed webhook)
 * resolves the lead and both duplicates, with `feedback.status_changed` and `feedback.resolved` in the
 * pull feed.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { createHmac, randomUUID } from 'node:crypto'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { BINARY, call, eventually, spawnServer, tempDir, runBinary } from './harness'
import { cliJson, cliTenant } from './helpers-lifecycle'
import { BOT, issueHook, startTrackerStub, STUB_PROJECT, type TrackerStub } from './tracker-stub'

const LOCAL = { FIXLOOP_TRACKER_ALLOW_PRIVATE: '1' }
let dir: string
let stub: TrackerStub
let srv: Awaited<ReturnType<typeof spawnServer>>
let tenant: Awaited<ReturnType<typeof cliTenant>>
let secret: string

beforeAll(async () => {
  dir = tempDir('fixloop-trackers-e2e-')
  stub = startTrackerStub('github')
  tenant = await cliTenant(dir)
  const tokenFile = join(dir, 'tracker-token')
  await Bun.write(tokenFile, `${stub.token}\n`)
  const raw = await runBinary(['tracker', 'connect', '--app', tenant.appId, '--kind', 'github', '--api-url', stub.apiUrl, '--project', STUB_PROJECT, '--token-file', tokenFile, '--min-duplicates', '2', '--data-dir', dir, '--json'], LOCAL)
  expect(raw.code).toBe(0)
  expect(raw.stdout + raw.stderr).not.toContain(stub.token)
  const connected = JSON.parse(raw.stdout)
  expect(connected).toMatchObject({ appId: tenant.appId, kind: 'github', actor: BOT, rules: { minDuplicates: 2, onAwaitingManual: [] } })
  secret = connected.webhookSecret
  srv = await spawnServer(dir, { ...LOCAL, FIXLOOP_TRACKER_POLL_MINUTES: '0', FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000' })
}, 60_000)

afterAll(async () => {
  await srv?.stop()
  stub?.stop()
  if (dir) rmSync(dir, { recursive: true, force: true })
})

const item = async (id: string) => (await call(srv.url, 'GET', `/v1/feedback/${id}`, { auth: tenant.key })).body
async function submit(text: string): Promise<string> {
  const r = await call(srv.url, 'POST', '/v1/feedback', { auth: tenant.pub, body: { text, severity: 'medium' } })
  expect(r.status).toBe(201)
  await eventually(async () => (await item(r.body.id)).status === 'awaiting_manual', 20_000)
  return r.body.id
}
const hook = (d: { headers: Record<string, string>; body: string }) => call(srv.url, 'POST', `/v1/tracker-hooks/${tenant.appId}`, { rawBody: d.body, headers: d.headers })

test('rule push → issue on the tracker → closed there (signed webhook) → lead and duplicates resolved, events in the feed, no echo', async () => {
  const lead = await submit('The checkout total ignores the discount code when paying with a gift card')
  const dup1 = await submit('Password reset email never arrives for addresses with a plus sign')
  const dup2 = await submit('Map widget on the store locator renders grey tiles only')
  expect((await call(srv.url, 'POST', `/v1/feedback/${dup1}/merge`, { auth: tenant.key, body: { leadId: lead } })).status).toBe(200)
  // One duplicate: below the rule, no issue.
  await Bun.sleep(300)
  expect(stub.issues.size).toBe(0)
  expect((await call(srv.url, 'POST', `/v1/feedback/${dup2}/merge`, { auth: tenant.key, body: { leadId: lead } })).status).toBe(200)
  const issue = await eventually(() => stub.issues.get(1), 20_000)
  expect(issue.title).toStartWith('The checkout total ignores the discount code')
  expect(issue.body).toContain('**Reports:** 3')
  expect(issue.labels).toEqual(['fixloop', 'severity:medium'])
  const shown = await eventually(async () => ((await item(dup2)).trackerIssue?.syncState === 'synced' ? (await item(dup2)).trackerIssue : undefined), 20_000)
  expect(shown).toMatchObject({ kind: 'github', key: '#1', url: `${stub.url}/${STUB_PROJECT}/issues/1`, state: 'open' })

  // fixloop's own writes come back as deliveries: its comment (issue_comment) and any change by its user are ignored.
  const comment = JSON.stringify({ action: 'created', issue: { number: 1, state: 'open' }, comment: { body: 'fixloop: 1 more report', user: { login: BOT } }, repository: { full_name: STUB_PROJECT }, sender: { login: BOT } })
  const commentHook = { 'content-type': 'application/json', 'x-github-event': 'issue_comment', 'x-github-delivery': randomUUID(), 'x-hub-signature-256': `sha256=${createHmac('sha256', secret).update(comment).digest('hex')}` }
  expect((await hook({ headers: commentHook, body: comment })).body).toEqual({ received: true, outcome: 'ignored' })
  issue.state = 'closed'
  expect((await hook(issueHook(stub, 'closed', issue, secret, BOT))).body).toEqual({ received: true, outcome: 'echo' })
  expect((await item(lead)).status).toBe('awaiting_manual')

  // A maintainer closes it.
  expect((await hook(issueHook(stub, 'closed', issue, secret, 'maintainer'))).body).toEqual({ received: true, outcome: 'moved' })
  for (const id of [lead, dup1, dup2]) expect((await item(id)).status).toBe('resolved')
  const feed = (await call(srv.url, 'GET', '/v1/events?limit=500', { auth: tenant.key })).body.data as any[]
  expect(feed.filter((e) => e.type === 'feedback.resolved').map((e) => e.data.feedbackId).sort()).toEqual([lead, dup1, dup2].sort())
  expect(feed.filter((e) => e.type === 'feedback.status_changed' && e.data.to === 'resolved').map((e) => e.data.feedbackId).sort()).toEqual([lead, dup1, dup2].sort())
  // fixloop wrote one issue (no comment: the text was replaced before any growth), never a state change.
  expect(stub.requests.filter((r) => r.method !== 'GET').map((r) => `${r.method} ${r.path}`)).toEqual([`POST /repos/${STUB_PROJECT}/issues`])

  const show = await cliJson(dir, ['tracker', 'show', '--app', tenant.appId])
  expect(show.health).toMatchObject({ state: 'ok', pending: 0 })
  expect(JSON.stringify(show)).not.toContain(stub.token)
  const again = await cliJson(dir, ['tracker', 'push', '--feedback', lead])
  expect(again).toMatchObject({ created: false, key: '#1', state: 'closed' })

  // Rotating the webhook secret: the old one no longer verifies. Disconnecting: the link stays readable.
  const rotated = await cliJson(dir, ['tracker', 'rotate-webhook-secret', '--app', tenant.appId])
  expect(rotated.webhookSecret).not.toBe(secret)
  issue.state = 'open'
  expect((await hook(issueHook(stub, 'reopened', issue, secret))).status).toBe(401)
  expect((await hook(issueHook(stub, 'reopened', issue, rotated.webhookSecret))).body.outcome).toBe('moved')
  for (const id of [lead, dup1, dup2]) expect((await item(id)).status).toBe('awaiting_manual')
  // Reconnect with the token on standard input (and the env var): the connection, no new secret.
  const piped = Bun.spawn([BINARY, 'tracker', 'connect', '--app', tenant.appId, '--kind', 'github', '--api-url', stub.apiUrl, '--project', STUB_PROJECT, '--token-file', '-', '--data-dir', dir, '--json'], { env: { PATH: process.env.PATH ?? '', ...LOCAL }, stdin: new TextEncoder().encode(`${stub.token}\n`), stdout: 'pipe', stderr: 'pipe' })
  const pipedOut = await new Response(piped.stdout).text()
  const pipedCode = await piped.exited
  expect({ pipedCode, err: await new Response(piped.stderr).text() }).toEqual({ pipedCode: 0, err: "" })
  expect(JSON.parse(pipedOut)).toMatchObject({ actor: BOT, rules: { minDuplicates: 2 } })
  expect(pipedOut).not.toContain('webhookSecret')
  const viaEnv = await runBinary(['tracker', 'connect', '--app', tenant.appId, '--kind', 'github', '--api-url', stub.apiUrl, '--project', STUB_PROJECT, '--data-dir', dir, '--json'], { ...LOCAL, FIXLOOP_TRACKER_TOKEN: 'revoked-token' })
  expect(viaEnv.code).toBe(2)
  expect(viaEnv.stderr).toContain('401')
  expect(viaEnv.stderr).not.toContain('revoked-token')
  expect(await cliJson(dir, ['tracker', 'disconnect', '--app', tenant.appId])).toEqual({ appId: tenant.appId, disconnected: true })
  const gone = await runBinary(['tracker', 'show', '--app', tenant.appId, '--data-dir', dir])
  expect(gone.code).toBe(2)
  expect(gone.stderr).toContain('no tracker connected')
  expect((await item(lead)).trackerIssue).toMatchObject({ key: '#1', syncState: 'synced' })
}, 90_000)

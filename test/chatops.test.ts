import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createHmac } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { call, eventually, runBinary, seedTenant, startTestServer, tempDir, type Tenant, type TestServer } from './harness'
import { ensureBinary } from './helpers-lifecycle'
import { appendEventBatchIn } from './events-helpers'
import { SlackStub } from './slack-stub'
import { newId } from '../src/core/ids'
import { dbRow } from './sqlite-of'

const TOKEN = 'xoxb-1234567890-abcdefghijkl'
const SIGNING = 'a1b2c3d4e5f60718293a4b5c6d7e8f90'
let server: TestServer
let slack: SlackStub
let a: Tenant
let b: Tenant
let connectionId: string

beforeAll(async () => {
  slack = new SlackStub(TOKEN, ['C0TRIAGE', 'C0OTHER'])
  server = await startTestServer({ FIXLOOP_SLACK_API_URL: slack.apiUrl, FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000' })
  a = await seedTenant(server.admin, {}, 'Acme')
  b = await seedTenant(server.admin, {}, 'Other')
})
afterAll(async () => {
  await server.close()
  slack.stop()
})

describe('connecting Slack', () => {
  test.each([
    ['a user token of the wrong kind', { botToken: 'hello', signingSecret: SIGNING, channel: 'C0TRIAGE' }],
    ['a signing secret that is not hex', { botToken: TOKEN, signingSecret: 'zz', channel: 'C0TRIAGE' }],
    ['a bad channel', { botToken: TOKEN, signingSecret: SIGNING, channel: 'triage room' }],
    ['an unknown event type', { botToken: TOKEN, signingSecret: SIGNING, channel: 'C0TRIAGE', events: ['x.y'] }],
    ['an unknown field', { botToken: TOKEN, signingSecret: SIGNING, channel: 'C0TRIAGE', webhook: 'x' }],
    ['deep nesting', { botToken: TOKEN, signingSecret: SIGNING, channel: 'C0TRIAGE', events: [[[[[[['x']]]]]]] }],
    ['a huge token', { botToken: 'xoxb-' + 'a'.repeat(100_000), signingSecret: SIGNING, channel: 'C0TRIAGE' }],
    ['a number for a channel', { botToken: TOKEN, signingSecret: SIGNING, channel: 12 }],
    ['an array body', [1, 2]],
  ])('refuses %s with 400 invalid_body', async (_n, body) => {
    const r = await call(server.url, 'POST', '/v1/chatops/slack', { auth: a.key, body })
    expect([r.status, r.body.error.code]).toEqual([400, 'invalid_body'])
  })

  test('connect stores the token and secret sealed and never shows them', async () => {
    const r = await call(server.url, 'POST', '/v1/chatops/slack', { auth: a.key, body: { botToken: TOKEN, signingSecret: SIGNING, channel: 'C0TRIAGE' } })
    expect(r.status).toBe(201)
    connectionId = r.body.id
    expect(r.body.commandPath).toBe(`/v1/chatops/slack/${connectionId}/commands`)
    expect(r.text).not.toContain(TOKEN)
    expect(r.text).not.toContain(SIGNING)
    const row = JSON.stringify(await dbRow(server.ctx, 'SELECT * FROM slack_connections WHERE id = ?', [connectionId]))
    expect(row).not.toContain(TOKEN)
    expect(row).not.toContain(SIGNING)
    const list = await call(server.url, 'GET', '/v1/chatops/slack', { auth: a.key })
    expect(list.body.data.map((c: { id: string }) => c.id)).toEqual([connectionId])
    expect((await call(server.url, 'GET', '/v1/chatops/slack', { auth: b.key })).body.data).toEqual([])
    expect((await call(server.url, 'DELETE', `/v1/chatops/slack/${connectionId}`, { auth: b.key })).status).toBe(404)
  })
})

describe('posting to Slack', () => {
  test('one parent per lead, edited in place as it moves; duplicates, the run and the PR link in its thread; ≤ 1 write/s per channel', async () => {
    const lead = newId()
    const dup = newId()
    const run = newId()
    const other = newId()
    const batch: { orgId: string; appId: string | null; type: string; data: Record<string, unknown> }[] = []
    const ev = (type: string, data: Record<string, unknown>) => batch.push({ orgId: a.orgId, appId: a.appId, type, data })
    ev('feedback.status_changed', { feedbackId: lead, from: 'received', to: 'sanitizing' }) // too early for a parent
    ev('feedback.status_changed', { feedbackId: lead, from: 'sanitized', to: 'awaiting_manual' })
    ev('feedback.duplicate_attached', { feedbackId: dup, leadFeedbackId: lead, duplicateCount: 1, manual: false })
    ev('feedback.status_changed', { feedbackId: lead, from: 'awaiting_manual', to: 'queued' })
    ev('agent_run.succeeded', { runId: run, feedbackId: lead, prUrl: 'https://git.example/acme/web/pull/7', branch: 'fixloop/x', costUsd: 0.1 })
    ev('feedback.status_changed', { feedbackId: lead, from: 'agent_running', to: 'pr_opened' })
    ev('feedback.status_changed', { feedbackId: other, from: 'sanitized', to: 'queued' })
    batch.push({ orgId: b.orgId, appId: b.appId, type: 'feedback.status_changed', data: { feedbackId: newId(), from: 'sanitized', to: 'queued' } })
    await appendEventBatchIn(server.ctx, batch)
    await server.hub.check()
    await eventually(() => slack.parents('C0TRIAGE').length === 2 && slack.parents('C0TRIAGE')[0].text.includes('pr_opened'), 20_000)
    await server.slack.idle()
    const [parent, second] = slack.parents('C0TRIAGE')
    expect(parent.text).toContain(lead)
    expect(parent.text).toContain('pr_opened')
    expect(parent.text).toContain('1 duplicate')
    expect(second.text).toContain(other)
    // Caught up in one page: the edit to "queued" was skipped, since "pr_opened" came right after.
    expect(parent.edits.some((t) => t.includes('*queued*'))).toBe(false)
    const thread = slack.replies(parent.ts).map((m) => m.text)
    expect(thread.some((t) => t.includes(dup))).toBe(true)
    expect(thread.some((t) => t.includes('https://git.example/acme/web/pull/7'))).toBe(true)
    expect(slack.violations).toEqual([])
    const writes = slack.calls.filter((c) => c.ok).map((c) => c.at)
    for (let i = 1; i < writes.length; i++) expect(writes[i] - writes[i - 1]).toBeGreaterThanOrEqual(950)
    // Org B has no connection: nothing of it reached Slack.
    expect(slack.messages.length).toBe(2 + thread.length)
    // A lead merged by hand into another: its own parent now points at the new lead.
    batch.length = 0
    ev('feedback.duplicate_attached', { feedbackId: other, leadFeedbackId: lead, duplicateCount: 2, manual: true })
    await appendEventBatchIn(server.ctx, batch)
    await server.hub.check()
    await eventually(() => second.text.includes('merged into') && parent.text.includes('2 duplicates'), 10_000)
    expect(second.text).toContain(lead)
    expect(slack.violations).toEqual([])
  }, 30_000)
})

describe('/fixloop slash command', () => {
  let reportId: string
  const sign = (body: string, ts = Math.floor(Date.now() / 1000), secret = SIGNING) => ({
    'x-slack-request-timestamp': String(ts),
    'x-slack-signature': 'v0=' + createHmac('sha256', secret).update(`v0:${ts}:${body}`).digest('hex'),
    'content-type': 'application/x-www-form-urlencoded',
  })
  const form = (text: string, user = 'U0ALICE', n = Math.random().toString(36).slice(2)) =>
    new URLSearchParams({ command: '/fixloop', text, team_id: 'T0ACME', user_id: user, response_url: `${slack.url}/response/${n}`, channel_id: 'C0TRIAGE' }).toString()
  const slash = (body: string, headers = sign(body)) => call(server.url, 'POST', `/v1/chatops/slack/${connectionId}/commands`, { rawBody: body, headers })
  const answerTo = async (body: string) => {
    const n = new URLSearchParams(body).get('response_url')!.split('/').pop()
    return (await eventually(() => slack.responses.find((r) => r.path === `/response/${n}`), 5000)).body.text as string
  }

  beforeAll(async () => {
    const r = await call(server.url, 'POST', '/v1/feedback', { auth: a.pub, body: { text: 'The checkout button does nothing', url: 'https://shop.example/p' } })
    reportId = r.body.id
    await eventually(async () => (await call(server.url, 'GET', `/v1/feedback/${reportId}`, { auth: a.key })).body.status === 'awaiting_manual', 10_000)
  })

  test('unsigned, wrongly signed and stale requests are 403 invalid_signature', async () => {
    const body = form(`status ${reportId}`)
    expect((await slash(body, { 'content-type': 'application/x-www-form-urlencoded' } as never)).status).toBe(403)
    expect((await slash(body, sign(body, undefined, 'ffffffffffffffffffffffffffffffff'))).body.error.code).toBe('invalid_signature')
    expect((await slash(body, sign(body, Math.floor(Date.now() / 1000) - 301))).status).toBe(403)
    expect((await slash(body + '&x=1', sign(body))).status).toBe(403)
    expect((await call(server.url, 'POST', `/v1/chatops/slack/${newId()}/commands`, { rawBody: body, headers: sign(body) })).status).toBe(404)
  })

  test('a signed request is taken once: the same request again within the window is 403, a new signature is taken', async () => {
    const body = form(`status ${reportId}`)
    const headers = sign(body)
    expect((await slash(body, headers)).status).toBe(200)
    expect(await answerTo(body)).toContain('awaiting_manual')
    const replay = await slash(body, headers)
    expect([replay.status, replay.body.error.code]).toEqual([403, 'invalid_signature'])
    expect(replay.body.error.message).toContain('received already')
    // Slack signs every delivery anew: the same text at another second is another request.
    const later = sign(body, Math.floor(Date.now() / 1000) - 2)
    expect((await slash(body, later)).status).toBe(200)
  })

  test('status: acknowledged at once, answered through response_url; another Org\'s report is not found', async () => {
    const body = form(`status ${reportId}`)
    const t0 = performance.now()
    const ack = await slash(body)
    expect(performance.now() - t0).toBeLessThan(3000)
    expect(ack.status).toBe(200)
    expect(ack.body).toEqual({ response_type: 'ephemeral', text: 'Working on it…' })
    expect(await answerTo(body)).toContain('awaiting_manual')
    const foreign = (await call(server.url, 'POST', '/v1/feedback', { auth: b.pub, body: { text: 'Other org report', url: 'https://x.example' } })).body.id
    const q = form(`status ${foreign}`)
    await slash(q)
    expect(await answerTo(q)).toContain('No report')
    const h = form('frobnicate')
    await slash(h)
    expect(await answerTo(h)).toContain('Usage')
  })

  test('only Slack users allowed for the Org may archive or queue', async () => {
    const denied = form(`archive ${reportId}`, 'U0MALLORY')
    await slash(denied)
    expect(await answerTo(denied)).toContain('not allowed')
    expect((await call(server.url, 'GET', `/v1/feedback/${reportId}`, { auth: a.key })).body.status).toBe('awaiting_manual')
    const badUser = await call(server.url, 'POST', '/v1/chatops/slack/users', { auth: a.key, body: { teamId: 't0acme<script>', userId: 'U0ALICE' } })
    expect([badUser.status, badUser.body.error.code]).toEqual([400, 'invalid_body'])
    const allow = await call(server.url, 'POST', '/v1/chatops/slack/users', { auth: a.key, body: { teamId: 'T0ACME', userId: 'U0ALICE' } })
    expect(allow.status).toBe(200)
    expect((await call(server.url, 'GET', '/v1/chatops/slack/users', { auth: b.key })).body.data).toEqual([])
    const ok = form(`archive ${reportId}`, 'U0ALICE')
    await slash(ok)
    expect(await answerTo(ok)).toContain('archived')
    expect((await call(server.url, 'GET', `/v1/feedback/${reportId}`, { auth: a.key })).body.status).toBe('archived')
    const again = form(`queue ${reportId}`, 'U0ALICE')
    await slash(again)
    expect(await answerTo(again)).toContain('cannot be queued')
    expect((await call(server.url, 'DELETE', '/v1/chatops/slack/users/T0ACME/U0ALICE', { auth: a.key })).status).toBe(200)
  })
})

describe('fixloop chatops CLI', () => {
  test('connect reads the secrets from files and never prints them; bad input exits non-zero', async () => {
    ensureBinary()
    const dir = tempDir()
    const env = { FIXLOOP_DATA_DIR: dir }
    const org = JSON.parse((await runBinary(['org', 'create', '--name', 'Acme', '--json'], env)).stdout).id
    writeFileSync(join(dir, 'token'), TOKEN + '\n')
    writeFileSync(join(dir, 'signing'), SIGNING)
    const r = await runBinary(['chatops', 'slack', 'connect', '--org', org, '--bot-token-file', join(dir, 'token'), '--signing-secret-file', join(dir, 'signing'), '--channel', 'C0TRIAGE', '--json'], env)
    expect(r.code).toBe(0)
    const c = JSON.parse(r.stdout)
    expect(c.id).toMatch(/^[0-9a-f]{24}$/)
    expect(c.channel).toBe('C0TRIAGE')
    expect(r.stdout + r.stderr).not.toContain(TOKEN)
    const allow = await runBinary(['chatops', 'slack', 'allow-user', '--org', org, '--team', 'T0ACME', '--user', 'U0BOB', '--json'], env)
    expect(JSON.parse(allow.stdout)).toEqual({ teamId: 'T0ACME', userId: 'U0BOB', allowed: true })
    const users = JSON.parse((await runBinary(['chatops', 'slack', 'users', '--org', org, '--json'], env)).stdout)
    expect(users.data.map((u: { userId: string }) => u.userId)).toEqual(['U0BOB'])
    expect((await runBinary(['chatops', 'slack', 'connect', '--org', org, '--bot-token-file', join(dir, 'nope'), '--signing-secret-file', join(dir, 'signing'), '--channel', 'C0X', '--json'], env)).code).toBe(2)
    expect((await runBinary(['chatops', 'slack', 'disconnect', c.id, '--json'], env)).code).toBe(0)
    expect(JSON.parse((await runBinary(['chatops', 'slack', 'list', '--org', org, '--json'], env)).stdout).data).toEqual([])
  })
})

describe('configuration', () => {
  test('FIXLOOP_SLACK_API_URL must be an http(s) URL', async () => {
    const { loadConfig, ConfigError } = await import('../src/config')
    expect(() => loadConfig({}, { FIXLOOP_SLACK_API_URL: 'not a url' })).toThrow(ConfigError)
    expect(() => loadConfig({}, { FIXLOOP_SLACK_API_URL: 'ftp://x.example/api' })).toThrow(ConfigError)
    expect(loadConfig({}, { FIXLOOP_SLACK_API_URL: 'http://127.0.0.1:9/api/' }).slackApiUrl).toBe('http://127.0.0.1:9/api')
    expect(loadConfig({}, {}).slackApiUrl).toBe('https://slack.com/api')
    expect(() => loadConfig({}, { FIXLOOP_WEBHOOK_ALLOW_PRIVATE: 'maybe' })).toThrow(ConfigError)
    // Above the maximum is refused, not clamped (issue 36 item 10).
    expect(() => loadConfig({}, { FIXLOOP_WEBHOOK_TIMEOUT_SECONDS: '60' })).toThrow(ConfigError)
    expect(() => loadConfig({}, { FIXLOOP_SSE_HEARTBEAT_SECONDS: '60' })).toThrow(ConfigError)
    expect(loadConfig({}, { FIXLOOP_WEBHOOK_TIMEOUT_SECONDS: '15' }).webhookTimeoutMs).toBe(15_000)
    expect(loadConfig({}, { FIXLOOP_SSE_HEARTBEAT_SECONDS: '0.3' }).sseHeartbeatMs).toBe(300)
    expect(loadConfig({}, { FIXLOOP_EVENT_RETENTION_DAYS: '7' }).eventRetentionDays).toBe(7)
    expect(() => loadConfig({}, { FIXLOOP_EVENT_RETENTION_DAYS: '-1' })).toThrow(ConfigError)
  })
})

describe('two nodes at a dispatch handover', () => {
  test('the lead message is posted once: the new holder waits while the old holder\'s post is in flight, then only edits it', async () => {
    // The server's own notifier catches up, then steps aside (a stop leaves what is behind for the next
    // drain): two notifiers stand for two nodes on the same database.
    await server.slack.idle()
    await server.slack.stop()
    const { SlackNotifier } = await import('../src/modules/chatops/notifier')
    const { SlackApi } = await import('../src/modules/chatops/slack-api')
    const { Logger } = await import('../src/core/logger')
    let oldHolds = true
    const oldNode = new SlackNotifier(server.ctx, new SlackApi(slack.apiUrl), new Logger('silent'), undefined, () => oldHolds)
    const newNode = new SlackNotifier(server.ctx, new SlackApi(slack.apiUrl), new Logger('silent'), undefined, () => !oldHolds)
    const lead = newId()
    const before = slack.parents('C0TRIAGE').length
    await appendEventBatchIn(server.ctx, [{ orgId: a.orgId, appId: a.appId, type: 'feedback.status_changed', data: { feedbackId: lead, from: 'sanitized', to: 'awaiting_manual' } }])
    // The old holder posts the lead message; Slack is slow to answer; its 5 s role lease runs out meanwhile.
    await Bun.sleep(1100) // the channel's one write a second, after the tests before
    slack.delayNext(1500)
    const seen = slack.received
    await oldNode.runAll()
    await eventually(() => slack.received > seen, 5_000)
    oldHolds = false
    // The new holder drains the same connection while that post is in flight: it must not post it again.
    await newNode.runAll()
    await newNode.idle()
    await oldNode.idle()
    await newNode.runAll()
    await newNode.idle()
    const mine = () => slack.parents('C0TRIAGE').filter((m) => m.text.includes(lead))
    expect(mine()).toHaveLength(1)
    // What comes next is the new holder's: an edit of that one message, no second parent.
    await Bun.sleep(1100) // the channel's one write a second (the new node's own pacing starts fresh)
    await appendEventBatchIn(server.ctx, [{ orgId: a.orgId, appId: a.appId, type: 'feedback.status_changed', data: { feedbackId: lead, from: 'awaiting_manual', to: 'queued' } }])
    await newNode.runAll()
    await newNode.idle()
    expect(mine()).toHaveLength(1)
    expect(mine()[0].text).toContain('*queued*')
    expect(slack.parents('C0TRIAGE').length).toBe(before + 1)
    expect(slack.violations).toEqual([])
    await oldNode.stop()
    await newNode.stop()
  }, 30_000)
})

describe('stopping (a shutdown, the dispatch role lost)', () => {
  test('a stop waits for the message in hand, not for the backlog at one write a second; the next drain posts the rest, once each', async () => {
    // The server's own notifier was stopped by the handover case above.
    const { SlackNotifier } = await import('../src/modules/chatops/notifier')
    const { SlackApi } = await import('../src/modules/chatops/slack-api')
    const { Logger } = await import('../src/core/logger')
    const leads = Array.from({ length: 6 }, () => newId())
    const posted = () => slack.parents('C0TRIAGE').filter((m) => leads.some((id) => m.text.includes(id)))
    await appendEventBatchIn(
      server.ctx,
      leads.map((feedbackId) => ({ orgId: a.orgId, appId: a.appId, type: 'feedback.status_changed', data: { feedbackId, from: 'sanitized', to: 'awaiting_manual' } })),
    )
    await Bun.sleep(1100) // the channel's one write a second, after the cases before
    const first = new SlackNotifier(server.ctx, new SlackApi(slack.apiUrl), new Logger('silent'))
    await first.runAll()
    await eventually(() => posted().length >= 1, 5_000)
    const t0 = Date.now()
    await first.stop()
    const stopMs = Date.now() - t0
    const sentByFirst = posted().length
    expect(sentByFirst).toBeLessThanOrEqual(2) // the one in hand (and at most one more that was already starting)
    expect(stopMs).toBeLessThan(3_000) // draining all six takes 5 s at the channel's pace
    // Nothing lost, nothing twice: the next drain goes on from the cursor.
    await Bun.sleep(1100)
    const next = new SlackNotifier(server.ctx, new SlackApi(slack.apiUrl), new Logger('silent'))
    await next.runAll()
    await next.idle()
    expect(posted()).toHaveLength(6)
    expect(new Set(posted().map((m) => leads.find((id) => m.text.includes(id)))).size).toBe(6)
    expect(slack.violations).toEqual([])
    await next.stop()
  }, 30_000)
})

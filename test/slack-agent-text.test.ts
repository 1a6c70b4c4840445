/**
 * Agent-made text in Slack (attack-agent session): a run's failure reason quotes the agent's last output
 * lines and a guardrail reason names the agent's file paths, both posted into the Org's channel. Slack reads
 * `<!channel>`, `<@U…>` and `<https://…|label>` in a message's text as a ping or a disguised link, so these
 * three characters are escaped as Slack asks (&amp; &lt; &gt;).
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { call, eventually, seedTenant, startTestServer, type Tenant, type TestServer } from './harness'
import { appendEventBatchIn } from './events-helpers'
import { SlackStub } from './slack-stub'
import { newId } from '../src/core/ids'

const TOKEN = 'xoxb-1234567890-abcdefghijkl'
const SIGNING = 'a1b2c3d4e5f60718293a4b5c6d7e8f90'
let server: TestServer
let slack: SlackStub
let a: Tenant

beforeAll(async () => {
  slack = new SlackStub(TOKEN, ['C0TRIAGE'])
  server = await startTestServer({ FIXLOOP_SLACK_API_URL: slack.apiUrl, FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000' })
  a = await seedTenant(server.admin, {}, 'Acme')
  const r = await call(server.url, 'POST', '/v1/chatops/slack', { auth: a.key, body: { botToken: TOKEN, signingSecret: SIGNING, channel: 'C0TRIAGE' } })
  expect(r.status).toBe(201)
})
afterAll(async () => {
  await server.close()
  slack.stop()
})

test("an agent's output and paths reach Slack as text: no @channel, no mention, no disguised link", async () => {
  const lead = newId()
  const other = newId()
  const ev = (feedbackId: string, type: string, data: Record<string, unknown>) => ({ orgId: a.orgId, appId: a.appId, type, data: { feedbackId, ...data } })
  await appendEventBatchIn(server.ctx, [
    ev(lead, 'feedback.status_changed', { from: 'sanitized', to: 'queued' }),
    ev(lead, 'agent_run.failed', { runId: newId(), error: 'agent exited with code 1: <!channel> urgent: <https://evil.example/login|Open the fix> & <@U0ADMIN>' }),
    ev(other, 'feedback.status_changed', { from: 'sanitized', to: 'queued' }),
    ev(other, 'agent_run.guardrailed', { runId: newId(), guardrailReason: 'denied path: <!here>/.github/workflows/x.yml (matches .github/workflows/**)' }),
  ])
  await server.hub.check()
  await eventually(() => slack.messages.filter((m) => /Agent run/.test(m.text)).length === 2, 20_000)
  await server.slack.idle()
  const texts = slack.messages.map((m) => m.text).filter((t) => /Agent run/.test(t))
  const all = texts.join('\n')
  for (const raw of ['<!channel>', '<!here>', '<https://evil.example', '<@U0ADMIN>']) expect(all).not.toContain(raw)
  expect(all).toContain('&lt;!channel&gt; urgent: &lt;https://evil.example/login|Open the fix&gt; &amp; &lt;@U0ADMIN&gt;')
  expect(all).toContain('denied path: &lt;!here&gt;/.github/workflows/x.yml')
}, 30_000)

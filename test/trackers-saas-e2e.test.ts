/**
 * Jira Cloud and Linear end to end against the compiled binary, through the strict stubs
 * (test/jira-stub.ts, test/linear-stub.ts): connect with an sk_ key, push a lead by hand, the issue is
 * created with the lead's text; the tracker closes it and sends its signed webhook → the lead is resolved;
 * a forged delivery is refused; fixloop's own change (its account as the actor) is an echo and changes
 * nothing; a person reopening it takes the lead back to awaiting_manual. One scenario per tracker.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { call, eventually, spawnServer, tempDir } from './harness'
import { cliTenant, ensureBinary } from './helpers-lifecycle'
import { submitReport } from './dashboard-helpers'
import { startJiraStub, type JiraStub } from './jira-stub'
import { startLinearStub, type LinearStub } from './linear-stub'

let dir: string
let server: Awaited<ReturnType<typeof spawnServer>>
let jira: JiraStub
let linear: LinearStub

beforeAll(async () => {
  ensureBinary()
  dir = tempDir('fixloop-trackers-saas-')
  jira = await startJiraStub()
  linear = await startLinearStub()
  // The stubs listen on loopback: the operator knob for private tracker addresses lets them through.
  server = await spawnServer(dir, { FIXLOOP_TRACKER_ALLOW_PRIVATE: '1', FIXLOOP_RATE_LIMIT_MULTIPLIER: '100' })
}, 60_000)

afterAll(async () => {
  await server?.stop()
  await jira?.stop()
  await linear?.stop()
  if (dir) rmSync(dir, { recursive: true, force: true })
})

interface Scenario {
  kind: 'jira' | 'linear'
  connect: () => Record<string, unknown>
  /** The stub's issue (by the key fixloop shows), or undefined. */
  issue: (key: string) => { title: string; body: string } | undefined
  close: (key: string, opts?: { secret?: string; actor?: string }) => Promise<{ status: number; text: string } | null>
  reopen: (key: string, opts?: { actor?: string }) => Promise<{ status: number; text: string } | null>
  setWebhook: (url: string, secret: string) => void
  ownActor: () => string
}

const linearIdOf = (key: string) => [...linear.issues.values()].find((i) => i.identifier === key)?.id ?? key
const SCENARIOS: Scenario[] = [
  {
    kind: 'jira',
    connect: () => ({ kind: 'jira', apiUrl: jira.url, project: 'PROJ', account: jira.email, token: jira.token }),
    issue: (key) => {
      const i = jira.issues.get(key)
      return i && { title: i.summary, body: JSON.stringify(i.description) }
    },
    close: (key, o) => jira.setStatus(key, 'Done', 'done', o),
    reopen: (key, o) => jira.setStatus(key, 'To Do', 'new', o),
    setWebhook: (url, secret) => jira.setWebhook(url, secret),
    ownActor: () => jira.accountId,
  },
  {
    kind: 'linear',
    connect: () => ({ kind: 'linear', apiUrl: linear.url, project: linear.teamId, token: linear.apiKey }),
    issue: (key) => {
      const i = linear.issues.get(linearIdOf(key))
      return i && { title: i.title, body: i.description }
    },
    close: (key, o) => linear.setState(linearIdOf(key), 'Done', o),
    reopen: (key, o) => linear.setState(linearIdOf(key), 'Todo', o),
    setWebhook: (url, secret) => linear.setWebhook(url, secret),
    ownActor: () => linear.viewerId,
  },
]

for (const s of SCENARIOS) {
  describe(`${s.kind} through the binary`, () => {
    test('connect, push, close on the tracker → resolved; forged refused; echo ignored; reopened → awaiting_manual', async () => {
      const t = await cliTenant(dir)
      const auth = t.key
      const connected = await call(server.url, 'PUT', `/v1/apps/${t.appId}/tracker`, { auth, body: s.connect() })
      expect(connected.status).toBe(200)
      expect(connected.body.tracker.kind).toBe(s.kind)
      expect(connected.body.tracker.actor).toBe(s.ownActor())
      const secret = connected.body.webhookSecret as string
      expect(secret.length).toBeGreaterThan(16)
      expect(JSON.stringify(connected.body)).not.toContain(s.kind === 'jira' ? jira.token : linear.apiKey)
      s.setWebhook(connected.body.tracker.webhookUrl.replace(/^https?:\/\/[^/]+/, server.url), secret)

      const id = await submitReport(server.url, t.pub, `The ${s.kind} export button does nothing`)
      await eventually(async () => (await call(server.url, 'GET', `/v1/feedback/${id}`, { auth })).body.status === 'awaiting_manual' || undefined, 15_000)
      const pushed = await call(server.url, 'POST', `/v1/feedback/${id}/tracker-issue`, { auth })
      expect([200, 202]).toContain(pushed.status)
      const issue = await eventually(async () => {
        const v = (await call(server.url, 'GET', `/v1/feedback/${id}`, { auth })).body.trackerIssue
        return v && v.syncState === 'synced' ? v : undefined
      }, 20_000)
      const onTracker = s.issue(issue.key)!
      expect(onTracker.body).toContain('export button does nothing')

      const forged = await s.close(issue.key, { secret: 'not-the-secret' })
      expect(forged!.status).toBe(401)
      const closed = await s.close(issue.key)
      expect(closed!.status).toBe(200)
      expect(JSON.parse(closed!.text).outcome).toBe('moved')
      await eventually(async () => (await call(server.url, 'GET', `/v1/feedback/${id}`, { auth })).body.status === 'resolved' || undefined, 10_000)

      const echo = await s.reopen(issue.key, { actor: s.ownActor() })
      expect(JSON.parse(echo!.text).outcome).toBe('echo')
      expect((await call(server.url, 'GET', `/v1/feedback/${id}`, { auth })).body.status).toBe('resolved')

      const reopened = await s.reopen(issue.key)
      expect(JSON.parse(reopened!.text).outcome).toBe('moved')
      await eventually(async () => (await call(server.url, 'GET', `/v1/feedback/${id}`, { auth })).body.status === 'awaiting_manual' || undefined, 10_000)
    }, 90_000)
  })
}

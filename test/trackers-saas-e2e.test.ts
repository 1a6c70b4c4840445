/**
 * Jira Cloud and Linear end to end against the compiled binary, through the strict stubs
 * (test/jira-stub.ts, test/linear-stub.ts): connect with an sk_ key, push a lead by hand, the issue is
 * created with the lead's text; the tracker closes it and sends its signed webhook → the lead is resolved;
 * a forged delivery is refused; fixloop's own change (its account as the actor) is an echo and changes
 * nothing; a person reopening it takes the lead back to awaiting_manual. One scenario per tracker.
 *
 * Then each tracker's own workflow through a connection's state mapping (docs/trackers.md "Custom
 * workflows"): statuses whose category says otherwise — Jira's `Deployed` (In Progress category) = resolved,
 * `Parked` (Done category) = ignore, `QA` = reopen; Linear's started-type `Shipped` = resolved, `In Review` =
 * ignore, `Triage` = reopen — move the lead and its duplicate (with their events) as the map says, where the
 * category alone would do the opposite at each step.
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
  // Polling off: a poll between a stub's state change and its delivery would take the move the delivery is checked for.
  server = await spawnServer(dir, { FIXLOOP_TRACKER_ALLOW_PRIVATE: '1', FIXLOOP_RATE_LIMIT_MULTIPLIER: '100', FIXLOOP_TRACKER_POLL_MINUTES: '0' })
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
  close: (key: string, opts?: { secret?: string; actor?: string }) => Promise<{ status: number; text: string; body: string; headers: Record<string, string> } | null>
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
      // The captured close replayed under a fresh delivery id (an unsigned header): its signed body is the same, so a replay.
      const headers = Object.fromEntries(Object.entries(closed!.headers).map(([k, v]) => [k, k === 'x-atlassian-webhook-identifier' || k === 'linear-delivery' ? crypto.randomUUID() : v]))
      const replay = await fetch(`${server.url}/v1/tracker-hooks/${t.appId}`, { method: 'POST', headers, body: closed!.body })
      expect(((await replay.json()) as { outcome: string }).outcome).toBe('replayed')
      expect((await call(server.url, 'GET', `/v1/feedback/${id}`, { auth })).body.status).toBe('awaiting_manual')
    }, 90_000)
  })
}

interface MappingStep {
  /** The tracker's state the person moves the issue to, as the delivery and the report show it. */
  state: string
  move: (key: string) => Promise<{ status: number; text: string } | null>
  outcome: 'moved' | 'unchanged'
  /** The lead's and its duplicate's status afterwards. */
  status: 'awaiting_manual' | 'resolved'
}
interface MappingScenario {
  kind: 'jira' | 'linear'
  connect: () => Record<string, unknown>
  stateMap: Record<string, string>
  setWebhook: (url: string, secret: string) => void
  steps: MappingStep[]
}

const jiraTo = (name: string, category: 'new' | 'indeterminate' | 'done') => (key: string) => jira.setStatus(key, name, category)
const linearTo = (name: Parameters<LinearStub['setState']>[1]) => (key: string) => linear.setState(linearIdOf(key), name)
const MAPPINGS: MappingScenario[] = [
  {
    kind: 'jira',
    connect: () => SCENARIOS[0]!.connect(),
    stateMap: { Deployed: 'resolved', Parked: 'ignore', QA: 'reopen' },
    setWebhook: (url, secret) => jira.setWebhook(url, secret),
    steps: [
      // In the In Progress category (by category: reopen, which moves nothing here): mapped, resolved.
      { state: 'Deployed', move: jiraTo('Deployed', 'indeterminate'), outcome: 'moved', status: 'resolved' },
      // In the Done category (by category: resolved, a no-op on a resolved lead): mapped, ignored.
      { state: 'Parked', move: jiraTo('Parked', 'done'), outcome: 'unchanged', status: 'resolved' },
      // In the In Progress category and mapped alike: reopen, the lead back with a person.
      { state: 'QA', move: jiraTo('QA', 'indeterminate'), outcome: 'moved', status: 'awaiting_manual' },
      // Parked (Done category) while the lead is with a person: ignored, where the category would resolve it.
      { state: 'Parked', move: jiraTo('Parked', 'done'), outcome: 'unchanged', status: 'awaiting_manual' },
      { state: 'Deployed', move: jiraTo('Deployed', 'indeterminate'), outcome: 'moved', status: 'resolved' },
    ],
  },
  {
    kind: 'linear',
    connect: () => SCENARIOS[1]!.connect(),
    stateMap: { Shipped: 'resolved', 'In Review': 'ignore', Triage: 'reopen' },
    setWebhook: (url, secret) => linear.setWebhook(url, secret),
    steps: [
      // A started-type state (by type: open, reopen): mapped, resolved.
      { state: 'Shipped', move: linearTo('Shipped'), outcome: 'moved', status: 'resolved' },
      // Another started-type state (by type: reopen, which would take the lead back): mapped, ignored.
      { state: 'In Review', move: linearTo('In Review'), outcome: 'unchanged', status: 'resolved' },
      { state: 'Triage', move: linearTo('Triage'), outcome: 'moved', status: 'awaiting_manual' },
      { state: 'Shipped', move: linearTo('Shipped'), outcome: 'moved', status: 'resolved' },
    ],
  },
]

for (const m of MAPPINGS) {
  describe(`${m.kind} state mapping through the binary`, () => {
    test(`a custom workflow: ${m.steps.map((st) => `${st.state} → ${st.status}`).join(', ')} for the lead and its duplicate`, async () => {
      const t = await cliTenant(dir)
      const auth = t.key
      const connected = await call(server.url, 'PUT', `/v1/apps/${t.appId}/tracker`, { auth, body: { ...m.connect(), stateMap: m.stateMap } })
      expect(connected.status).toBe(200)
      // Stored as the API shows it: names in lower case (matched case-insensitively).
      expect(connected.body.tracker.stateMap).toEqual(Object.fromEntries(Object.entries(m.stateMap).map(([k, v]) => [k.toLowerCase(), v])))
      m.setWebhook(connected.body.tracker.webhookUrl.replace(/^https?:\/\/[^/]+/, server.url), connected.body.webhookSecret)

      const item = async (id: string) => (await call(server.url, 'GET', `/v1/feedback/${id}`, { auth })).body
      const lead = await submitReport(server.url, t.pub, `The ${m.kind} invoice download returns an empty PDF`)
      const dup = await submitReport(server.url, t.pub, `Password reset mail never arrives (${m.kind} tenant)`)
      for (const id of [lead, dup]) await eventually(async () => (await item(id)).status === 'awaiting_manual' || undefined, 15_000)
      expect((await call(server.url, 'POST', `/v1/feedback/${dup}/merge`, { auth, body: { leadId: lead } })).status).toBe(200)
      expect([200, 202]).toContain((await call(server.url, 'POST', `/v1/feedback/${lead}/tracker-issue`, { auth })).status)
      const key = await eventually(async () => {
        const v = (await item(lead)).trackerIssue
        return v && v.syncState === 'synced' ? (v.key as string) : undefined
      }, 20_000)

      for (const step of m.steps) {
        const seq = (await call(server.url, 'GET', '/v1/events?limit=500', { auth })).body.data.length
        const sent = await step.move(key)
        expect(sent!.status).toBe(200)
        expect({ state: step.state, outcome: JSON.parse(sent!.text).outcome }).toEqual({ state: step.state, outcome: step.outcome })
        const [l, d] = [await item(lead), await item(dup)]
        expect({ state: step.state, lead: l.status, dup: d.status }).toEqual({ state: step.state, lead: step.status, dup: step.status })
        // The state is recorded as the tracker names it, on the lead and on its duplicate.
        expect([l.trackerIssue.state, d.trackerIssue.state]).toEqual([step.state, step.state])
        const feed = (await call(server.url, 'GET', '/v1/events?limit=500', { auth })).body.data.slice(seq)
        const moves = feed.filter((e: any) => e.type === 'feedback.status_changed').map((e: any) => [e.data.feedbackId, e.data.to]).sort()
        const resolved = feed.filter((e: any) => e.type === 'feedback.resolved').map((e: any) => [e.data.feedbackId, e.data.leadFeedbackId]).sort()
        if (step.outcome === 'unchanged') {
          expect(moves).toEqual([])
          expect(resolved).toEqual([])
        } else {
          expect(moves).toEqual([[dup, step.status], [lead, step.status]].sort())
          expect(resolved).toEqual(step.status === 'resolved' ? [[dup, lead], [lead, lead]].sort() : [])
        }
      }
    }, 90_000)
  })
}

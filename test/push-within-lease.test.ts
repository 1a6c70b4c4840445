/**
 * A tracker push job ends inside its lease (src/core/job-budget.ts, docs/trackers.md "Push"). A job that
 * outlives its lease is the worker "stuck" on /readyz, and another worker (another node of a cluster) may
 * claim it and run the same push again meanwhile: a second issue at the tracker for one report. Jira's
 * create can be three calls (the Bug refused by a project without that type, the retry as a Task, the
 * read-back of its status) and a push goes round again when the cluster grew meanwhile, each call up to
 * its deadline: past the 60 s lease at the default deadline.
 *
 * Here at scale: FIXLOOP_OUTBOUND_TIMEOUT=3 (Jira's calls 4 s), a Jira that answers each issue call 3.5 s
 * late, and a job lease of 10 s (three such calls are 10.5 s; the step has 9 s of it, core/job-budget.ts).
 * Beside the server's worker runs a second one over the same job table, with a push step of its own, as
 * another node's would: it claims a push whose lease ran out. Both workers' health is read throughout.
 * Before the job budget, each test made two issues for its report, and the server's worker was stuck.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, eventually, seedTenant, startTestServer, type Tenant, type TestServer } from './harness'
import { startJiraStub, type JiraStub } from './jira-stub'
import { sql } from './repos/store-fixtures'
import type { FreshStore } from './dialects'
import { OUTBOUND_TIMEOUT_SECONDS_MAX, saasTrackerDeadlineMs } from '../src/core/outbound-deadline'
import { jobBudget, jobTimeMs } from '../src/core/job-budget'
import { Logger } from '../src/core/logger'
import { DEFAULT_WORKER_OPTIONS, Worker } from '../src/worker/loop'
import { createPushTrackerIssueStep } from '../src/worker/steps/tracker-sync'
import { createTrackerSync } from '../src/modules/trackers/sync'

const DEADLINE_MS = 3_000
/** Each Jira call's deadline (4 s), and how late the stub answers one: just under it. */
const JIRA_CALL_MS = saasTrackerDeadlineMs(DEADLINE_MS)
const SLOW_MS = JIRA_CALL_MS - 500
const LEASE_MS = 10_000
const PUBLIC = 'https://fixloop.example'

let server: TestServer
let jira: JiraStub
let other: Worker
/** What either worker's health said whenever it found a job in hand past its lease ("the job worker is stuck"). */
const unhealthy: string[] = []
let watch: ReturnType<typeof setInterval>

beforeAll(async () => {
  jira = await startJiraStub()
  server = await startTestServer(
    { FIXLOOP_TRACKER_ALLOW_PRIVATE: '1', FIXLOOP_TRACKER_POLL_MINUTES: '0', FIXLOOP_PUBLIC_URL: PUBLIC, FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000', FIXLOOP_OUTBOUND_TIMEOUT: String(DEADLINE_MS / 1000) },
    // The default call shares (10 s of calls a minute per App, core/time-share.ts): after a create at 3.5 s a
    // call (7 s) the App may still start its update, so no push here waits for its share (not what is tested).
    { worker: { leaseMs: LEASE_MS } },
  )
  const log = new Logger('silent')
  // Another node's push worker: its own sync (its own memory of unsaved issues and call shares), the same jobs.
  const sync = createTrackerSync({ trackers: server.services.trackers, clock: server.ctx.clock, log, publicUrl: PUBLIC })
  other = new Worker(server.ctx.store.jobs(['tracker_push']), { tracker_push: createPushTrackerIssueStep(sync) }, server.ctx.clock, log, { leaseMs: LEASE_MS, pollMs: 100, clusterLeaseOwner: 'other-node' })
  await other.start()
  watch = setInterval(() => {
    for (const [name, w] of [['server', server.services.worker], ['other node', other]] as const) {
      const h = w.health()
      if (!h.ok && h.reason?.includes('stuck')) unhealthy.push(`${name}: ${h.reason}`)
    }
  }, 100)
}, 60_000)
afterAll(async () => {
  clearInterval(watch)
  await other?.stop()
  await server?.close()
  await jira?.stop()
})

const item = async (t: Tenant, id: string) => (await call(server.url, 'GET', `/v1/feedback/${id}`, { auth: t.key })).body
async function submit(t: Tenant, text: string): Promise<string> {
  const r = await call(server.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text, severity: 'high' } })
  expect(r.status).toBe(201)
  await eventually(async () => (await item(t, r.body.id)).status === 'awaiting_manual', 15_000)
  return r.body.id
}
/** A tenant whose App pushes to the stub's BIZ project (no Bug type: every create is refused once, then made a Task). */
async function jiraTenant(name: string): Promise<Tenant> {
  const t = await seedTenant(server.admin, {}, name)
  const r = await call(server.url, 'PUT', `/v1/apps/${t.appId}/tracker`, { auth: t.key, body: { kind: 'jira', apiUrl: jira.url, project: 'BIZ', account: jira.email, token: jira.token } })
  expect(r.status).toBe(200)
  return t
}
/** The text of an Atlassian Document, its text nodes in order. */
const adfText = (n: any): string => (n?.type === 'text' ? n.text : Array.isArray(n?.content) ? n.content.map(adfText).join('') : '')
/** The calls on issues the stub received since `t0`, as they arrived: method, path, ms after t0. */
const issueCalls = (t0: number) => jira.arrived.filter((a) => a.at >= t0 && a.path.startsWith('/rest/api/3/issue')).map((a) => ({ call: `${a.method} ${a.path}`, at: a.at - t0 }))
const pushJobs = async (lead: string) => (await sql<any>({ storage: server.ctx.storage } as FreshStore, "SELECT id FROM jobs WHERE kind = 'tracker_push' AND feedback_id = ?", [lead])).length
/**
 * Waits until the push is over everywhere: its job done (deleted) and the link synced; then past the first
 * run's lease (when another worker could have claimed the job), and the other worker stopped (a job in its
 * hand is run to its end first) and started again for the next test.
 */
async function settled(t: Tenant, lead: string, t0: number) {
  await eventually(async () => (await pushJobs(lead)) === 0 && (await item(t, lead)).trackerIssue?.syncState === 'synced', 60_000)
  const pastLease = t0 + LEASE_MS + 2_000 - performance.now()
  if (pastLease > 0) await Bun.sleep(pastLease)
  await other.stop()
  await other.start()
  expect(await pushJobs(lead)).toBe(0)
  return (await item(t, lead)).trackerIssue
}

test('a fresh run holds a push\'s longest round: two Jira or Linear calls at FIXLOOP_OUTBOUND_TIMEOUT=20 in the default lease, two Jira calls here', () => {
  // Else a push whose round never fits would stop and run again for ever.
  expect(jobTimeMs(DEFAULT_WORKER_OPTIONS.leaseMs)).toBeGreaterThanOrEqual(2 * saasTrackerDeadlineMs(OUTBOUND_TIMEOUT_SECONDS_MAX * 1000))
  expect(jobTimeMs(LEASE_MS)).toBeGreaterThanOrEqual(2 * JIRA_CALL_MS)
})

describe('a tracker push whose calls are slow', () => {
  test('Jira creating the issue (Bug refused, then a Task) with every call answered just under its deadline: the job ends inside its lease, one issue, the report linked to it', async () => {
    const t = await jiraTenant('Slow Jira create')
    const lead = await submit(t, 'The checkout total ignores the discount code when paying with a gift card')
    const before = { issues: jira.issues.size, unhealthy: unhealthy.length }
    jira.answerIssueCallsAfter(SLOW_MS)
    const t0 = performance.now()
    expect((await call(server.url, 'POST', `/v1/feedback/${lead}/tracker-issue`, { auth: t.key })).status).toBe(202)
    const link = await settled(t, lead, t0)
    jira.answerIssueCallsAfter(0)

    // One issue: the Bug refused, the Task made; no create after it. The read-back of its status was not
    // started (it would have ended past the job's time): the link has no status name until a poll or webhook.
    const calls = issueCalls(t0)
    expect(calls.map((c) => c.call)).toEqual(['POST /rest/api/3/issue', 'POST /rest/api/3/issue'])
    expect(jira.requests.slice(-2).map((r) => r.status)).toEqual([400, 201])
    expect(jira.issues.size).toBe(before.issues + 1)
    const made = [...jira.issues.values()].at(-1)!
    expect(made.issueType).toBe('Task')
    expect(link).toMatchObject({ kind: 'jira', key: made.key, url: `${jira.url}/browse/${made.key}`, state: '', syncState: 'synced', lastError: null })
    // The job ended inside its lease: the worker never found it in hand past it, its last call answered within it.
    expect(unhealthy.slice(before.unhealthy)).toEqual([])
    expect(calls.at(-1)!.at + SLOW_MS).toBeLessThan(LEASE_MS)
  }, 90_000)

  test('the cluster grows while the issue is being created: the update and its comment run in the next run of the job, not past the lease; still one issue', async () => {
    const t = await jiraTenant('Slow Jira growth')
    const lead = await submit(t, 'Password reset email never arrives for addresses with a plus sign')
    const dup = await submit(t, 'Map widget on the store locator renders grey tiles only')
    const before = { issues: jira.issues.size, unhealthy: unhealthy.length }
    jira.answerIssueCallsAfter(SLOW_MS)
    const t0 = performance.now()
    expect((await call(server.url, 'POST', `/v1/feedback/${lead}/tracker-issue`, { auth: t.key })).status).toBe(202)
    // Merged once the create is on its way: the push reads the grown cluster after it (a second round, 8 s
    // at two calls' deadlines, which the 2 s left of the job do not hold).
    await eventually(() => issueCalls(t0).length > 0, 30_000)
    expect((await call(server.url, 'POST', `/v1/feedback/${dup}/merge`, { auth: t.key, body: { leadId: lead } })).status).toBe(200)
    const link = await settled(t, lead, t0)
    jira.answerIssueCallsAfter(0)

    expect(jira.issues.size).toBe(before.issues + 1)
    const made = [...jira.issues.values()].at(-1)!
    expect(issueCalls(t0).map((c) => c.call)).toEqual(['POST /rest/api/3/issue', 'POST /rest/api/3/issue', `PUT /rest/api/3/issue/${made.key}`, `POST /rest/api/3/issue/${made.key}/comment`])
    expect(adfText(made.description)).toContain('Reports: 2')
    expect(made.comments).toHaveLength(1)
    expect(link).toMatchObject({ key: made.key, syncState: 'synced', lastError: null })
    expect((await item(t, dup)).trackerIssue.key).toBe(made.key)
    expect(unhealthy.slice(before.unhealthy)).toEqual([])
  }, 120_000)
})

describe('a tracker poll pass', () => {
  test('stops before a read that could outlast its job\'s lease; the next pass goes on from there, each issue read once', async () => {
    const t = await jiraTenant('Poll within lease')
    const keys: string[] = []
    for (const text of ['Exporting the invoice list to CSV drops the last row every time', 'Dark mode toggle forgets its setting after a reload on Safari', 'Search results flicker and jump while typing in the product filter']) {
      const lead = await submit(t, text)
      expect((await call(server.url, 'POST', `/v1/feedback/${lead}/tracker-issue`, { auth: t.key })).status).toBe(202)
      const link = await eventually(async () => {
        const l = (await item(t, lead)).trackerIssue
        return l?.syncState === 'synced' ? l : undefined
      }, 15_000)
      keys.push(link.key)
    }
    const t0 = performance.now()
    const reads = () => issueCalls(t0).filter((c) => c.call.startsWith('GET ')).map((c) => c.call.slice('GET /rest/api/3/issue/'.length).replace(/\?.*$/, ''))
    // The job's time as a tracker holding every read would spend it: each read its whole deadline (4 s). A
    // 10 s lease leaves the step 9 s: two reads; the third would end past it and is not started.
    const time = jobBudget(0, LEASE_MS, () => reads().length * JIRA_CALL_MS)
    const first = await server.services.trackerSync.pollPass('', time)
    expect(first).toMatchObject({ read: 2, throttled: 0 })
    expect(first.cursor).not.toBe('')
    let cursor = first.cursor
    while (cursor !== '') cursor = (await server.services.trackerSync.pollPass(cursor)).cursor
    // Read once each across the passes (the pass walks every App's issues: those of the tests above too,
    // but for an App past its share of call time, core/time-share.ts), none twice.
    expect(reads().filter((k) => keys.includes(k)).sort()).toEqual([...keys].sort())
    expect(new Set(reads()).size).toBe(reads().length)
  }, 90_000)
})

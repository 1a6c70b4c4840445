/**
 * The polling fallback (worker/steps/poll-pull-requests.ts) on both dialects against the git-host stubs
 * (real-shaped GET pull/merge request answers): a merged request resolves its report and the lead's
 * duplicates, a closed one sends it back to awaiting_manual, a closed one reopened (within 30 days) comes
 * back to pr_opened, an open one changes nothing, a host's
 * Retry-After holds back its own App's requests only (the other Apps' are read in the same pass), a pass
 * stops before a read that could outlast its job's lease, and only requests fixloop opened are read.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { describeEachDialect, type FreshStore } from './dialects'
import { tempDir } from './harness'
import { git, makeBareRepo, pushCommit } from './git-fixtures'
import { startGitHostStub, type GitHostKind, type GitHostStub } from './git-host-stub'
import { openPullRequest } from '../src/agent/hosts'
import { OUTBOUND_TIMEOUT_MS_DEFAULT } from '../src/core/outbound-deadline'
import { callShareFor } from './short-deadline'
import { CLOSED_PR_POLL_MS } from '../src/modules/git-hooks/repo'
import { createPollPullRequestsStep } from '../src/worker/steps/poll-pull-requests'
import type { RepoConnection } from '../src/modules/connections/service'
import { Logger } from '../src/core/logger'
import { jobBudget } from '../src/core/job-budget'
import { seedOrgApp, sql } from './repos/store-fixtures'

const TOKEN = 'stub-token-poll'
/** The read's deadline where a host holds every read (FIXLOOP_OUTBOUND_TIMEOUT, 15 s by default): each is waited out. */
const DEADLINE_MS = 5_000
let dir: string
let barePath: string
const stubs = {} as Record<GitHostKind, GitHostStub>
const HOSTS = ['github', 'gitea', 'gitlab'] as const

beforeAll(async () => {
  dir = tempDir('fixloop-poll-')
  barePath = makeBareRepo(dir, { 'src/app.js': 'let total = null\n' })
  pushCommit(barePath, 'fixloop/b0', { 'src/f.js': '// fix\n' })
  for (let i = 1; i < 80; i++) git([`--git-dir=${barePath}`, 'branch', `fixloop/b${i}`, 'fixloop/b0'])
  for (const kind of HOSTS) stubs[kind] = await startGitHostStub({ kind, token: TOKEN, repos: [{ owner: 'acme', name: 'app', barePath }] })
})
afterAll(async () => {
  for (const stub of Object.values(stubs)) await stub.stop()
  rmSync(dir, { recursive: true, force: true })
})

const connection = (kind: GitHostKind, appId: string): RepoConnection => ({
  appId, gitUrl: barePath, baseBranch: 'main', hostKind: kind, hostApiUrl: stubs[kind].apiUrl, hostRepo: 'acme/app', hostToken: TOKEN, agentProvider: 'command', agentCommand: 'true',
  model: null, timeoutSeconds: 60, prMode: 'ready', verifyCommand: null, maxFiles: 20, maxLines: 1000, denyPaths: [], runsPerDay: 20, maxCostUsdPerMonth: 50, webhookSecret: null,
})

let branch = 0
/** A lead in pr_opened whose run opened a real request on the stub; returns its id and the request's number. */
async function openedReport(s: FreshStore, kind: GitHostKind, id: string, appId = 'a1'): Promise<{ id: string; number: number }> {
  const head = `fixloop/b${branch++}`
  const url = await openPullRequest(kind, stubs[kind].apiUrl, TOKEN, 'acme/app', { title: 'fix', body: 'b', head, base: 'main', draft: false }, { allowPrivate: true })
  await sql(s, "INSERT INTO feedback (id, org_id, app_id, status, text, submitted_mode, created_at, updated_at, merge_request_url) VALUES (?, 'o1', ?, 'pr_opened', 't', 'public', 1, 1, ?)", [id, appId, url])
  await sql(s, "INSERT INTO agent_runs (id, org_id, app_id, feedback_id, provider, status, branch, timings, pr_url, created_at) VALUES (?, 'o1', ?, ?, 'command', 'succeeded', ?, '{}', ?, 1)", [`run-${id}`, appId, id, head, url])
  return { id, number: Number(/(\d+)$/.exec(url)![1]) }
}
const statusOf = async (s: FreshStore, id: string) => (await sql<{ status: string }>(s, 'SELECT status FROM feedback WHERE id = ?', [id]))[0].status

describeEachDialect('pull request polling', (fresh) => {
  for (const kind of HOSTS) {
    test(`${kind}: merged → resolved (duplicates follow), closed → awaiting_manual, open → unchanged`, async () => {
      const s = await fresh()
      await seedOrgApp(s)
      const lifecycle = s.store.lifecycle
      const hooks = s.store.gitHooks
      const step = createPollPullRequestsStep({ hooks, connections: { load: async (appId) => connection(kind, appId) }, lifecycle, clock: s.clock, log: new Logger('silent'), everyMs: 600_000, gitHostAllowPrivate: true, outboundTimeoutMs: OUTBOUND_TIMEOUT_MS_DEFAULT })
      const merged = await openedReport(s, kind, `${kind}-m`)
      const closed = await openedReport(s, kind, `${kind}-c`)
      const open = await openedReport(s, kind, `${kind}-o`)
      await sql(s, "INSERT INTO feedback (id, org_id, app_id, status, text, submitted_mode, created_at, updated_at, duplicate_of_id) VALUES (?, 'o1', 'a1', 'sanitized', 't', 'public', 1, 1, ?)", [`${kind}-dup`, merged.id])
      expect(await step.pass()).toMatchObject({ read: 3, moved: 0, failed: 0, full: false })
      stubs[kind].setPullState(merged.number, 'merged')
      stubs[kind].setPullState(closed.number, 'closed')
      expect(await step.pass()).toMatchObject({ read: 3, moved: 2, failed: 0 })
      expect([await statusOf(s, merged.id), await statusOf(s, `${kind}-dup`), await statusOf(s, closed.id), await statusOf(s, open.id)]).toEqual(['resolved', 'resolved', 'awaiting_manual', 'pr_opened'])
      expect((await sql<{ type: string }>(s, "SELECT type FROM events WHERE type = 'feedback.resolved'")).length).toBe(2)
      // Now the open one, and the closed one (for a reopen).
      expect(await step.pass()).toMatchObject({ read: 2, moved: 0 })
      // The reads carried the token in the host's header only, never in the URL.
      for (const r of stubs[kind].requests.filter((q) => q.method === 'GET')) expect(r.path).not.toContain(TOKEN)
    })
  }

  test('a host that throttles (429 Retry-After) holds back its own App\'s requests until the wait is over; the other Apps\' are read in the same pass', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    await seedOrgApp(s, 'o1', 'a2')
    const lifecycle = s.store.lifecycle
    const hooks = s.store.gitHooks
    // a1's host is GitHub (it throttles), a2's is Gitea: every App's host is its Org's choice.
    const step = createPollPullRequestsStep({ hooks, connections: { load: async (appId) => connection(appId === 'a1' ? 'github' : 'gitea', appId) }, lifecycle, clock: s.clock, log: new Logger('silent'), everyMs: 600_000, gitHostAllowPrivate: true, outboundTimeoutMs: OUTBOUND_TIMEOUT_MS_DEFAULT })
    const a = await openedReport(s, 'github', 'thr-a', 'a1')
    const a2 = await openedReport(s, 'github', 'thr-a2', 'a1')
    const b = await openedReport(s, 'gitea', 'thr-b', 'a2')
    for (const n of [a.number, a2.number]) stubs.github.setPullState(n, 'merged')
    stubs.gitea.setPullState(b.number, 'merged')
    const asked = () => stubs.github.requests.filter((r) => r.method === 'GET').length
    const before = asked()
    stubs.github.throttleNextRead(429, 42)
    // a1's host is asked once and refuses; its other request waits too; a2's request is read and applied.
    expect(await step.pass()).toMatchObject({ read: 1, moved: 1, throttled: 1 })
    expect(asked() - before).toBe(1)
    expect([await statusOf(s, a.id), await statusOf(s, a2.id), await statusOf(s, b.id)]).toEqual(['pr_opened', 'pr_opened', 'resolved'])
    // While the wait lasts, a1's host is not asked.
    expect(await step.pass()).toMatchObject({ read: 0, throttled: 0 })
    expect(asked() - before).toBe(1)
    s.clock.advance(42_000)
    expect(await step.pass()).toMatchObject({ read: 2, moved: 2 })
    expect([await statusOf(s, a.id), await statusOf(s, a2.id)]).toEqual(['resolved', 'resolved'])
    // run() queues the next pass at the usual interval, whatever one host asked.
    stubs.github.throttleNextRead(429, 30)
    await openedReport(s, 'github', 'thr-c', 'a1')
    await step.run({} as never)
    const [job] = await sql<{ run_after: number }>(s, "SELECT run_after FROM jobs WHERE kind = 'pr_poll'")
    expect(Number(job.run_after)).toBe(s.clock.now() + 600_000)
  })

  test('a host that holds every read to its deadline costs one read per pass, and the other Apps\' requests are read in the same pass', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    await seedOrgApp(s, 'o1', 'a2')
    // a1's host takes the connection and never answers (the read's deadline, DEADLINE_MS, ends each call).
    const hanging = Bun.serve({ hostname: '127.0.0.1', port: 0, idleTimeout: 0, fetch: () => new Promise<Response>(() => {}) })
    try {
      const load = async (appId: string) => (appId === 'a1' ? { ...connection('github', appId), hostApiUrl: `http://127.0.0.1:${hanging.port}` } : connection('gitea', appId))
      // The shares scaled with the deadline (test/short-deadline.ts): one held read spends a1's, as at 15 s.
      const step = createPollPullRequestsStep({ hooks: s.store.gitHooks, connections: { load }, lifecycle: s.store.lifecycle, clock: s.clock, log: new Logger('silent'), everyMs: 600_000, gitHostAllowPrivate: true, outboundTimeoutMs: DEADLINE_MS, share: callShareFor(DEADLINE_MS) })
      for (const id of ['hang-1', 'hang-2', 'hang-3']) await openedReport(s, 'github', id, 'a1')
      const b = await openedReport(s, 'gitea', 'hang-victim', 'a2')
      stubs.gitea.setPullState(b.number, 'merged')
      const t0 = Date.now()
      expect(await step.pass()).toMatchObject({ read: 1, moved: 1, failed: 1 })
      // One deadline, not three, before the other App's request: a second held read would make it two.
      expect(Date.now() - t0).toBeLessThan(2 * DEADLINE_MS - 1_000)
      expect(await statusOf(s, b.id)).toBe('resolved')
      // Past its share of the worker's time, a1's host is not asked again within the minute: a read of it
      // would take a whole deadline.
      const t1 = Date.now()
      expect(await step.pass()).toMatchObject({ read: 0, failed: 0 })
      expect(Date.now() - t1).toBeLessThan(DEADLINE_MS - 1_000)
    } finally {
      hanging.stop(true)
    }
  }, 60_000)

  test('a pass stops before a read that could outlast its job\'s lease (core/job-budget.ts); the next pass goes on from there', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    const step = createPollPullRequestsStep({ hooks: s.store.gitHooks, connections: { load: async (appId) => connection('github', appId) }, lifecycle: s.store.lifecycle, clock: s.clock, log: new Logger('silent'), everyMs: 600_000, gitHostAllowPrivate: true, outboundTimeoutMs: OUTBOUND_TIMEOUT_MS_DEFAULT })
    const reports = []
    for (const id of ['lease-1', 'lease-2', 'lease-3']) reports.push(await openedReport(s, 'github', id))
    for (const r of reports) stubs.github.setPullState(r.number, 'merged')
    const reads = () => stubs.github.requests.filter((r) => r.method === 'GET').length
    const before = reads()
    // The job's time as a host holding every read would spend it: each read its whole deadline (15 s). A
    // 40 s lease leaves the step 36 s: two reads; the third would end past it and is not started.
    const time = jobBudget(0, 40_000, () => (reads() - before) * OUTBOUND_TIMEOUT_MS_DEFAULT)
    expect(await step.pass(time)).toMatchObject({ read: 2, moved: 2, failed: 0, full: true })
    expect(reads() - before).toBe(2)
    expect(await Promise.all(reports.map((r) => statusOf(s, r.id)))).toEqual(['resolved', 'resolved', 'pr_opened'])
    // The next pass starts after the last request read, not over.
    expect(await step.pass()).toMatchObject({ read: 1, moved: 1, full: false })
    expect(await Promise.all(reports.map((r) => statusOf(s, r.id)))).toEqual(['resolved', 'resolved', 'resolved'])
  })

  test('reports fixloop did not open a request for, duplicates and other statuses are never read', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    const lifecycle = s.store.lifecycle
    const hooks = s.store.gitHooks
    await openedReport(s, 'github', 'seen')
    await openedReport(s, 'github', 'manual')
    await sql(s, "UPDATE feedback SET status = 'awaiting_manual' WHERE id = 'manual'")
    await sql(s, "INSERT INTO feedback (id, org_id, app_id, status, text, submitted_mode, created_at, updated_at, merge_request_url) VALUES ('norun', 'o1', 'a1', 'pr_opened', 't', 'public', 1, 1, 'https://github.example/acme/app/pull/999')")
    expect((await hooks.openPullRequests('', 50)).map((p) => p.report.id)).toEqual(['seen'])
    expect((await hooks.openPullRequests('run-seen', 50)).map((p) => p.report.id)).toEqual([])
  })

  for (const kind of HOSTS) {
    test(`${kind}: a closed request reopened on the host brings its report back to pr_opened (event); reopened and merged since: resolved`, async () => {
      const s = await fresh()
      await seedOrgApp(s)
      const lifecycle = s.store.lifecycle
      const hooks = s.store.gitHooks
      const step = createPollPullRequestsStep({ hooks, connections: { load: async (appId) => connection(kind, appId) }, lifecycle, clock: s.clock, log: new Logger('silent'), everyMs: 600_000, gitHostAllowPrivate: true, outboundTimeoutMs: OUTBOUND_TIMEOUT_MS_DEFAULT })
      const a = await openedReport(s, kind, `${kind}-ra`)
      const b = await openedReport(s, kind, `${kind}-rb`)
      stubs[kind].setPullState(a.number, 'closed')
      stubs[kind].setPullState(b.number, 'closed')
      expect(await step.pass()).toMatchObject({ read: 2, moved: 2 })
      expect([await statusOf(s, a.id), await statusOf(s, b.id)]).toEqual(['awaiting_manual', 'awaiting_manual'])
      // Still closed: read, nothing moves.
      s.clock.advance(60_000)
      expect(await step.pass()).toMatchObject({ read: 2, moved: 0 })
      // Reopened on the host (no webhook): back to pr_opened, with the status event a webhook would make.
      stubs[kind].setPullState(a.number, 'open')
      // Reopened and merged between two passes: reopened, then resolved.
      stubs[kind].setPullState(b.number, 'merged')
      expect(await step.pass()).toMatchObject({ read: 2, moved: 3, failed: 0 })
      expect([await statusOf(s, a.id), await statusOf(s, b.id)]).toEqual(['pr_opened', 'resolved'])
      const moves = (await sql<{ data: string }>(s, "SELECT data FROM events WHERE type = 'feedback.status_changed' ORDER BY seq")).map((e) => JSON.parse(e.data))
      expect(moves.filter((m) => m.feedbackId === a.id).map((m) => `${m.from}>${m.to}`)).toEqual(['pr_opened>awaiting_manual', 'awaiting_manual>pr_opened'])
      expect(moves.filter((m) => m.feedbackId === b.id).map((m) => `${m.from}>${m.to}`)).toEqual(['pr_opened>awaiting_manual', 'awaiting_manual>pr_opened', 'pr_opened>resolved'])
      // Both forgotten as closed requests: a is polled as open again, b not at all.
      expect(await hooks.closedPullRequests('', 0, 50)).toEqual([])
      expect(await step.pass()).toMatchObject({ read: 1, moved: 0 })
    })
  }

  test('closed requests are read for 30 days after the close, then forgotten; a report a person moved to awaiting_manual (no close) is never read', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    const lifecycle = s.store.lifecycle
    const hooks = s.store.gitHooks
    const step = createPollPullRequestsStep({ hooks, connections: { load: async (appId) => connection('github', appId) }, lifecycle, clock: s.clock, log: new Logger('silent'), everyMs: 600_000, gitHostAllowPrivate: true, outboundTimeoutMs: OUTBOUND_TIMEOUT_MS_DEFAULT })
    const closed = await openedReport(s, 'github', 'old-close')
    const manual = await openedReport(s, 'github', 'by-hand')
    stubs.github.setPullState(closed.number, 'closed')
    expect(await step.pass()).toMatchObject({ read: 2, moved: 1 })
    // However a person got it there, no close was seen: its request is not polled.
    await sql(s, "UPDATE feedback SET status = 'awaiting_manual' WHERE id = ?", [manual.id])
    expect((await hooks.closedPullRequests('', 0, 50)).map((r) => r.id)).toEqual([closed.id])
    s.clock.advance(CLOSED_PR_POLL_MS - 1)
    expect(await step.pass()).toMatchObject({ read: 1, moved: 0 })
    s.clock.advance(2)
    // Past the window: not read; even reopened, the report stays with the person (a webhook still moves it).
    stubs.github.setPullState(closed.number, 'open')
    expect(await step.pass()).toMatchObject({ read: 0, moved: 0 })
    expect(await statusOf(s, closed.id)).toBe('awaiting_manual')
    // Forgotten by the next change a delivery applies.
    const other = await openedReport(s, 'github', 'other')
    await hooks.receive('a1', 'd-other', { report: (await hooks.reportOfPr('a1', (await sql<{ merge_request_url: string }>(s, "SELECT merge_request_url FROM feedback WHERE id = 'other'"))[0]!.merge_request_url))!, change: 'closed' })
    expect((await sql<{ feedback_id: string }>(s, 'SELECT feedback_id FROM closed_pull_requests ORDER BY feedback_id')).map((r) => r.feedback_id)).toEqual([other.id])
  })
})

/**
 * A merge or close that comes while a review iteration runs (docs/agents.md "News during a review
 * iteration"), on a real server with the GitHub stub, a real bare repository and polling off
 * (FIXLOOP_PR_POLL_MINUTES=0, so only the held news can move the report): the delivery answers `deferred`,
 * the report stays `agent_running`; when the run ends the merge resolves the report and its duplicates,
 * one `feedback.resolved` each. Held news also survives a crash: the interrupted iteration's report goes
 * back to its pull request and the news is applied then (a merge kept over a later close; a close).
 */
import { randomBytes } from 'node:crypto'
import { chmodSync, writeFileSync, rmSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { call, eventually, seedTenant, startTestServer, tempDir, type Tenant, type TestServer } from './harness'
import { startGitHostStub, type GitHostStub } from './git-host-stub'
import { makeBareRepo } from './git-fixtures'
import { delivery, send } from './git-host-webhooks'
import { sql } from './repos/store-fixtures'
import type { FreshStore } from './dialects'

const AGENTS = join(import.meta.dir, 'fixtures', 'agents')
const TOKEN = 'ghp_' + 'N4mZ2xW9kL4vB8nR1tY6uI3oP5aS0dF2gH4d'
const release = tempDir('fixloop-release-')
// Readable by the agent: under a root test run each run gets a uid of its own (never 0), which the 0700 of a
// fresh temp dir shuts out; it then never saw "go" and ran out its 30 s wait instead of ending when told.
chmodSync(release, 0o755)
let srv: TestServer
let stub: GitHostStub
let bare: string
let t: Tenant
let secret: string

beforeAll(async () => {
  bare = makeBareRepo(tempDir('fixloop-deferred-'), { 'src/app.js': 'export const total = (items) => items.reduce((a, b) => a + b.price, 0)\n' }, 'main', 'shop')
  stub = await startGitHostStub({ kind: 'github', token: TOKEN, repos: [{ owner: 'acme', name: 'shop', barePath: bare }] })
  srv = await startTestServer({
    FIXLOOP_MASTER_KEY: 'd4'.repeat(32),
    FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000',
    FIXLOOP_PR_POLL_MINUTES: '0',
    // The agent reads the release folder (read-only) to know when the test lets its iteration end.
    FIXLOOP_AGENT_SANDBOX_PATHS: `${AGENTS}:${release}`,
  })
  t = await seedTenant(srv.admin, { processingMode: 'auto_pr' })
  const connected = await srv.services.connections.connect(t.orgId, t.appId, {
    gitUrl: bare, host: 'github', hostApiUrl: stub.apiUrl, hostRepo: 'acme/shop', hostToken: TOKEN, agent: 'command',
    agentCommand: `sh ${JSON.stringify(join(AGENTS, 'wait-release.sh'))} ${JSON.stringify(release)}`, timeoutSeconds: 60,
  })
  secret = (connected as { webhookSecret: string }).webhookSecret
  stub.setWebhook(`${srv.url}/v1/git-hooks/${t.appId}`, secret)
})
afterAll(async () => {
  await srv?.close()
  await stub?.stop()
  if (bare) rmSync(dirname(bare), { recursive: true, force: true })
  rmSync(release, { recursive: true, force: true })
})

const q = (text: string, params: unknown[] = []) => sql<any>({ storage: srv.ctx.storage } as FreshStore, text, params)
const status = async (id: string) => (await q('SELECT status FROM feedback WHERE id = ?', [id]))[0].status as string
const resolvedEvents = async () =>
  (await call(srv.url, 'GET', `/v1/events?after=0&limit=100&types=feedback.resolved&appId=${t.appId}`, { auth: t.key })).body.data.map((e: any) => e.data.feedbackId as string)

/** A report fixed by its first run (pr_opened), with two duplicates of it that opted for nothing special. */
async function fixedReport(text: string) {
  const r = await call(srv.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text, url: 'https://shop.example/cart' } })
  expect(r.status).toBe(201)
  const id = r.body.id as string
  await eventually(async () => (await status(id)) === 'pr_opened', 30_000)
  await srv.runner.idle()
  const branch = `fixloop/${id}`
  const pull = stub.created.find((p) => p.head === branch)!
  const dups = [randomBytes(12).toString('hex'), randomBytes(12).toString('hex')]
  for (const [i, dup] of dups.entries()) {
    await q(
      "INSERT INTO feedback (id, org_id, app_id, status, text, submitted_mode, created_at, updated_at, duplicate_of_id) VALUES (?, ?, ?, ?, 'the cart total is wrong', 'public', 1, 1, ?)",
      [dup, t.orgId, t.appId, i === 0 ? 'sanitized' : 'awaiting_manual', id],
    )
  }
  const url = (await q('SELECT merge_request_url FROM feedback WHERE id = ?', [id]))[0].merge_request_url as string
  return { id, dups, pr: { url, number: pull.number, head: branch } }
}

test('a merge during a running iteration is held (deferred) and resolves the report and its duplicates when the run ends, with polling off', async () => {
  const { id, dups, pr } = await fixedReport('Cart total is NaN when an item has no price')
  const review = await stub.deliver('changes_requested', pr.number, { text: 'Please also handle an empty cart.' })
  expect(review.body.outcome).toBe('review_queued')
  await eventually(async () => (await status(id)) === 'agent_running', 20_000)

  // The merge comes while the iteration runs: held, nothing moves yet.
  const merged = await stub.deliver('merged', pr.number)
  expect(merged).toMatchObject({ status: 200, body: { received: true, outcome: 'deferred' } })
  expect((await send(srv.url, t.appId, { ...delivery('github', 'merged', pr, secret, { id: merged.id }) })).body.outcome).toBe('replayed')
  expect(await status(id)).toBe('agent_running')
  expect(await q('SELECT change FROM deferred_pr_changes WHERE feedback_id = ?', [id])).toEqual([{ change: 'merged' }])

  // The run ends: the report comes back to its pull request, and the held merge resolves it and its duplicates.
  writeFileSync(join(release, 'go'), '')
  await eventually(async () => (await status(id)) !== 'agent_running', 40_000)
  await srv.runner.idle()
  expect([await status(id), ...(await Promise.all(dups.map(status)))]).toEqual(['resolved', 'resolved', 'resolved'])
  const events = await resolvedEvents()
  for (const r of [id, ...dups]) expect(events.filter((e: string) => e === r)).toHaveLength(1)
  const runs = (await call(srv.url, 'GET', `/v1/feedback/${id}/agent-runs`, { auth: t.key })).body.data
  expect(runs.map((r: any) => [r.trigger, r.status])).toEqual([['review', 'succeeded'], ['report', 'succeeded']])
  // The report's moves, in order: back to the pull request, then resolved.
  const moves = (await q("SELECT data FROM events WHERE type = 'feedback.status_changed' ORDER BY seq")).map((e: any) => JSON.parse(e.data)).filter((d: any) => d.feedbackId === id)
  expect(moves.slice(-3).map((m: any) => `${m.from}>${m.to}`)).toEqual(['pr_opened>agent_running', 'agent_running>pr_opened', 'pr_opened>resolved'])
  expect(await q('SELECT * FROM deferred_pr_changes WHERE feedback_id = ?', [id])).toEqual([])
  rmSync(join(release, 'go'))
}, 90_000)

/** As the runner writes an iteration's start: the report pr_opened → agent_running, a run left `running` (a crash follows). */
async function iterationInterrupted(id: string) {
  const runs = srv.ctx.store.agentRuns
  const runId = randomBytes(12).toString('hex')
  const now = Date.now()
  const started = await runs.startReviewRun(
    { id: runId, orgId: t.orgId, appId: t.appId, feedbackId: id, provider: 'command', model: null, status: 'running', branch: `fixloop/${id}`, timings: '{"prepareMs":0,"cloneMs":0,"agentMs":0,"pushMs":0,"prMs":0}', startedAt: now, createdAt: now, nodeId: null, reviewText: 'x' },
    { type: 'agent_run.started', data: { runId, feedbackId: id, provider: 'command' } },
  )
  expect(started).toBe(true)
}

test('held news survives a crash: the interrupted iteration ends at the next start and the news applies then (a merge is kept over a later close; a close alone)', async () => {
  const a = await fixedReport('The coupon field rejects valid codes')
  const b = await fixedReport('The wishlist loses items after sign-in')
  await iterationInterrupted(a.id)
  expect((await stub.deliver('merged', a.pr.number)).body.outcome).toBe('deferred')
  // A close after the merge (some hosts send both) does not replace it.
  expect((await send(srv.url, t.appId, delivery('github', 'closed', a.pr, secret))).body.outcome).toBe('deferred')
  expect(await q('SELECT change FROM deferred_pr_changes WHERE feedback_id = ?', [a.id])).toEqual([{ change: 'merged' }])
  expect(await srv.runner.recover()).toBe(1)
  expect([await status(a.id), ...(await Promise.all(a.dups.map(status)))]).toEqual(['resolved', 'resolved', 'resolved'])
  const events = await resolvedEvents()
  for (const r of [a.id, ...a.dups]) expect(events.filter((e: string) => e === r)).toHaveLength(1)

  await iterationInterrupted(b.id)
  expect((await stub.deliver('closed', b.pr.number)).body.outcome).toBe('deferred')
  expect(await srv.runner.recover()).toBe(1)
  expect(await q('SELECT status, merge_request_url FROM feedback WHERE id = ?', [b.id])).toEqual([{ status: 'awaiting_manual', merge_request_url: b.pr.url }])
  expect(await Promise.all(b.dups.map(status))).toEqual(['sanitized', 'awaiting_manual'])
  expect(await q('SELECT * FROM deferred_pr_changes')).toEqual([])
}, 90_000)

/**
 * A review that comes while its iteration cannot run is queued, not refused (docs/agents.md "Review
 * iteration"): on a real server with the GitHub stub and a real bare repository, another run of the App
 * holds its slot; two signed change requests on a report's pull request are answered `review_queued`
 * (positions 1 and 2, the reason: waiting), shown on the report's runs as pending reviews, and nothing runs
 * while the slot is taken. The server then restarts (the run that held the slot is failed as interrupted,
 * freeing it), and the queued reviews still run: one iteration with both texts, on the same branch.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { loadConfig } from '../src/config'
import { startServer, type RunningServer } from '../src/runtime/server'
import { createTenantsService } from '../src/modules/tenants/service'
import { Logger } from '../src/core/logger'
import { createReviewStep } from '../src/worker/steps/start-agent'
import type { JobRow } from '../src/lifecycle/jobs-repo'
import { combineReviews, COMBINED_REVIEWS_MAX, REVIEW_TEXT_MAX } from '../src/agent/runner'
import { call, eventually, seedTenant, tempDir, type Tenant } from './harness'
import { startGitHostStub, type GitHostStub } from './git-host-stub'
import { clusterEnv, TEST_DIALECT } from './cluster-env'
import { git, makeBareRepo, readFileAtBranch } from './git-fixtures'
import { dbRows } from './sqlite-of'

const AGENTS = join(import.meta.dir, 'fixtures', 'agents')
const TOKEN = 'ghp_' + 'Q7nZ2xW9kL4vB8nR1tY6uI3oP5aS0dF2gH4q'
const dataDir = tempDir('fixloop-review-queue-')
const ENV = { FIXLOOP_LOG_LEVEL: 'silent', FIXLOOP_MASTER_KEY: 'c3'.repeat(32), FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000', FIXLOOP_AGENT_SANDBOX_PATHS: AGENTS }
let config: ReturnType<typeof loadConfig>
let srv: RunningServer
let stub: GitHostStub
let bare: string
let t: Tenant
let secret: string

beforeAll(async () => {
  bare = makeBareRepo(tempDir('fixloop-review-queue-git-'), { 'src/app.js': 'export const total = (items) => items.reduce((a, b) => a + b.price, 0)\n' }, 'main', 'shop')
  stub = await startGitHostStub({ kind: 'github', token: TOKEN, repos: [{ owner: 'acme', name: 'shop', barePath: bare }] })
  // PostgreSQL mode under scripts/test-pg.sh: the restart keeps the same database, as it keeps the data dir.
  config = loadConfig({ host: '127.0.0.1', port: '0', dataDir }, TEST_DIALECT === 'pg' ? { ...(await clusterEnv()), ...ENV } : ENV)
  srv = await startServer(config, { log: new Logger('silent') })
  t = await seedTenant(createTenantsService(srv.ctx), { processingMode: 'auto_pr' })
  const connected = await srv.services.connections.connect(t.orgId, t.appId, {
    gitUrl: bare, host: 'github', hostApiUrl: stub.apiUrl, hostRepo: 'acme/shop', hostToken: TOKEN, agent: 'command', agentCommand: `sh ${JSON.stringify(join(AGENTS, 'review.sh'))}`, timeoutSeconds: 30,
  })
  secret = (connected as { webhookSecret: string }).webhookSecret
  stub.setWebhook(`${srv.url}/v1/git-hooks/${t.appId}`, secret)
})
afterAll(async () => {
  await srv?.stop()
  await stub?.stop()
  rmSync(dataDir, { recursive: true, force: true })
  if (bare) rmSync(dirname(bare), { recursive: true, force: true })
})

const item = async (id: string) => (await call(srv.url, 'GET', `/v1/feedback/${id}`, { auth: t.key })).body
const runsOf = async (id: string) => (await call(srv.url, 'GET', `/v1/feedback/${id}/agent-runs`, { auth: t.key })).body
/**
 * Makes a review job that waits for the App's slot (deferred AGENT_RETRY_MS, 5 s, at a time) due now and
 * wakes the worker: called once the slot is free, so the test does not sleep out the rest of a deferral.
 * What the job does when it runs is unchanged (a job that still finds the slot taken only waits again).
 */
async function reviewJobsDue(): Promise<void> {
  const due = await dbRows(srv.ctx, "UPDATE jobs SET run_after = 0 WHERE kind = 'review' AND lease_until IS NULL AND run_after > ? RETURNING id", [Date.now()])
  if (due.length > 0) srv.services.worker.wake()
}
const submit = async (text: string) => (await call(srv.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text, url: 'https://shop.example/cart' } })).body.id as string

test('reviews that come while the App is busy are queued, shown, survive a restart, and run as one iteration when the slot frees', async () => {
  // Two reports, each fixed with a pull request of its own.
  const a = await submit('Cart total is NaN when an item has no price')
  await eventually(async () => (await item(a)).status === 'pr_opened', 30_000)
  const b = await submit('The coupon field rejects valid codes')
  await eventually(async () => (await item(b)).status === 'pr_opened', 30_000)
  await srv.runner.idle()
  expect(stub.created).toHaveLength(2)
  const prA = stub.created.find((p) => p.head === `fixloop/${a}`)!
  const firstHead = git([`--git-dir=${bare}`, 'rev-parse', `refs/heads/fixloop/${a}`]).trim()

  // Another run of the App holds its slot (an iteration on b, as the runner writes its start).
  const runs = srv.ctx.store.agentRuns
  const holder = 'd'.repeat(23) + '1'
  const now = Date.now()
  expect(await runs.startReviewRun({ id: holder, orgId: t.orgId, appId: t.appId, feedbackId: b, provider: 'command', model: null, status: 'running', branch: `fixloop/${b}`, timings: '{"prepareMs":0,"cloneMs":0,"agentMs":0,"pushMs":0,"prMs":0}', startedAt: now, createdAt: now, nodeId: null, reviewText: 'x' }, { type: 'agent_run.started', data: { runId: holder, feedbackId: b, provider: 'command' } })).toBe(true)

  // Two change requests on a's pull request: queued, in order, with the reason.
  const first = await stub.deliver('changes_requested', prA.number, { text: 'Please also handle an empty cart.' })
  expect(first).toMatchObject({ status: 200, body: { received: true, outcome: 'review_queued', position: 1 } })
  expect(first.body.reason).toContain('another run of this App is in progress')
  const second = await stub.deliver('comment', prA.number, { text: '/fixloop and show 0.00 for a missing price' })
  expect(second.body).toMatchObject({ outcome: 'review_queued', position: 2 })
  const waiting = await runsOf(a)
  expect(waiting.pendingReviews).toHaveLength(2)
  expect(waiting.pendingReviews[0]).toEqual({ author: 'reviewer', receivedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) })
  // Never the text on the API.
  expect(JSON.stringify(waiting)).not.toContain('empty cart')
  // Nothing runs while the slot is taken (the review job waits).
  await Bun.sleep(700)
  expect((await runsOf(a)).data).toHaveLength(1)
  expect((await item(a)).status).toBe('pr_opened')

  // A restart: the run holding the slot is failed as interrupted (b back on its pull request); the queued
  // reviews were kept, and their job starts the iteration once the slot is free.
  await srv.stop()
  srv = await startServer(config, { log: new Logger('silent') })
  stub.setWebhook(`${srv.url}/v1/git-hooks/${t.appId}`, secret)
  expect((await item(b)).status).toBe('pr_opened')
  const done = await eventually(async () => {
    const r = await runsOf(a)
    if (r.data.length === 2 && r.data[0].status !== 'running') return r
    await reviewJobsDue()
    return undefined
  }, 30_000)
  await srv.runner.idle()
  expect(done.data.map((r: any) => [r.trigger, r.status])).toEqual([['review', 'succeeded'], ['report', 'succeeded']])
  expect(done.pendingReviews).toEqual([])
  expect((await item(a)).status).toBe('pr_opened')
  // One iteration for both reviews, in arrival order, on top of the first fix; still one pull request each.
  const head = git([`--git-dir=${bare}`, 'rev-parse', `refs/heads/fixloop/${a}`]).trim()
  expect(git([`--git-dir=${bare}`, 'rev-parse', `${head}^`]).trim()).toBe(firstHead)
  const task = readFileAtBranch(bare, `fixloop/${a}`, 'task-copy.md')!
  const one = task.indexOf('Please also handle an empty cart.')
  const two = task.indexOf('and show 0.00 for a missing price')
  expect(one).toBeGreaterThan(0)
  expect(two).toBeGreaterThan(one)
  expect(task).toContain('Review 2 of 2 (by reviewer)')
  expect(stub.created).toHaveLength(2)
  ids = { a, b }
}, 90_000)

let ids: { a: string; b: string }

test('a queued review whose request is merged meanwhile is dropped when its turn comes; a review job that gives up drops its reviews', async () => {
  const { a, b } = ids
  const runs = srv.ctx.store.agentRuns
  const hold = async (feedbackId: string, n: number) => {
    const id = 'e'.repeat(23) + n
    expect(await runs.startReviewRun({ id, orgId: t.orgId, appId: t.appId, feedbackId, provider: 'command', model: null, status: 'running', branch: `fixloop/${feedbackId}`, timings: '{"prepareMs":0,"cloneMs":0,"agentMs":0,"pushMs":0,"prMs":0}', startedAt: Date.now(), createdAt: Date.now(), nodeId: null, reviewText: 'x' }, { type: 'agent_run.started', data: { runId: id, feedbackId, provider: 'command' } })).toBe(true)
  }
  const prA = stub.created.find((p) => p.head === `fixloop/${a}`)!
  const prB = stub.created.find((p) => p.head === `fixloop/${b}`)!
  const before = (await runsOf(a)).data.length

  // b's own iteration holds the slot: a review of b waits for it (not refused), and so does one of a.
  await hold(b, 1)
  expect((await stub.deliver('comment', prB.number, { text: '/fixloop one more thing' })).body).toMatchObject({ outcome: 'review_queued', position: 1 })
  expect((await stub.deliver('changes_requested', prA.number, { text: 'Rename the helper.' })).body).toMatchObject({ outcome: 'review_queued', position: 1 })
  // A job that gave up (it kept failing) drops its reviews: none waits forever.
  await createReviewStep(srv.runner).onGiveUp!({ feedback_id: b } as JobRow, 'boom')
  expect((await runsOf(b)).pendingReviews).toEqual([])

  // a's request is merged before its turn: when the slot frees, its review is dropped, no run starts.
  expect((await stub.deliver('merged', prA.number)).body.outcome).toBe('moved')
  expect(await srv.runner.recover()).toBe(1)
  await eventually(async () => (await runsOf(a)).pendingReviews.length === 0 || void (await reviewJobsDue()), 15_000)
  expect((await runsOf(a)).data).toHaveLength(before)
  expect((await item(a)).status).toBe('resolved')
}, 60_000)

test('combineReviews: one review as it is; several in order with their authors, bounded, the cut said', () => {
  expect(combineReviews([{ text: 'only', author: 'a' }])).toEqual({ text: 'only', author: 'a' })
  const two = combineReviews([{ text: 'first', author: 'a' }, { text: 'second', author: null }, { text: 'third', author: 'a' }])
  expect(two.text).toBe('Review 1 of 3 (by a):\nfirst\n\n---\n\nReview 2 of 3:\nsecond\n\n---\n\nReview 3 of 3 (by a):\nthird')
  expect(two.author).toBe('a')
  const long = combineReviews(Array.from({ length: 10 }, (_, i) => ({ text: 'x'.repeat(REVIEW_TEXT_MAX), author: `r${i}` })))
  expect(long.text.length).toBeLessThan(COMBINED_REVIEWS_MAX + 100)
  expect(long.text).toMatch(/\[… \d+ more characters of the reviews left out\]$/)
  expect(long.author!.length).toBeLessThanOrEqual(100)
})

/**
 * The event outbox, end to end: the exact event sequence of reports that end in pr_opened, failed,
 * guardrailed (failed) and archived, and of a merge and an unmerge. Real server and worker, real git (a
 * bare repository), fixture agents and the strict git-host stub; events are read from the database the
 * server writes. Payloads carry ids, states and URLs, never the report's text.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { call, eventually, seedTenant, startTestServer, tempDir, type Tenant, type TestServer } from './harness'
import { startGitHostStub, type GitHostStub } from './git-host-stub'
import { makeBareRepo } from './git-fixtures'
import { dbRow, dbRows } from './sqlite-of'

const AGENTS = join(import.meta.dir, 'fixtures', 'agents')
const agent = (name: string) => `sh ${JSON.stringify(join(AGENTS, name))}`
const TOKEN = 'ghp_' + 'Z3kQ8wE1rT5yU7iO9pA2sD4fG6hJ8kL0zX1c'

let srv: TestServer
let t: Tenant
let stub: GitHostStub
let bare: string

beforeAll(async () => {
  bare = makeBareRepo(tempDir('fixloop-events-repo-'), { 'src/app.js': 'export const total = (xs) => xs.reduce((a, b) => a + b.price, 0)\n' }, 'main', 'shop')
  stub = await startGitHostStub({ kind: 'github', token: TOKEN, repos: [{ owner: 'acme', name: 'shop', barePath: bare }] })
  srv = await startTestServer({ FIXLOOP_MASTER_KEY: 'b2'.repeat(32), FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000' })
  t = await seedTenant(srv.admin, { processingMode: 'auto_pr' })
})
afterAll(async () => {
  await srv.close()
  await stub.stop()
})

async function connect(script: string): Promise<void> {
  await srv.services.connections.connect(t.orgId, t.appId, {
    gitUrl: bare,
    host: 'github',
    hostApiUrl: stub.apiUrl,
    hostRepo: 'acme/shop',
    hostToken: TOKEN,
    agent: 'command',
    agentCommand: agent(script),
    timeoutSeconds: 30,
  })
}

interface Event {
  seq: number
  type: string
  appId: string | null
  data: Record<string, unknown>
}

/** Every event of the Org, in seq order. */
async function orgEvents(): Promise<Event[]> {
  return ((await dbRows(srv.ctx, 'SELECT seq, type, app_id, data FROM events WHERE org_id = ? ORDER BY seq', [t.orgId])) as { seq: number; type: string; app_id: string | null; data: string }[]).map(
    (e) => ({ seq: e.seq, type: e.type, appId: e.app_id, data: JSON.parse(e.data) }),
  )
}

/** The events about one report, as `type data` pairs, with run ids normalised to "RUN". */
async function eventsOf(feedbackId: string): Promise<[string, Record<string, unknown>][]> {
  return (await orgEvents())
    .filter((e) => e.data.feedbackId === feedbackId)
    .map((e) => [e.type, e.data.runId ? { ...e.data, runId: 'RUN' } : e.data])
}

async function submit(text: string): Promise<string> {
  const r = await call(srv.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text } })
  expect(r.status).toBe(201)
  return r.body.id
}

async function settle(id: string, statuses: string[]): Promise<Record<string, any>> {
  const item = await eventually(async () => {
    const g = await call(srv.url, 'GET', `/v1/feedback/${id}`, { auth: t.key })
    return statuses.includes(g.body.status) ? g.body : undefined
  }, 30_000)
  await srv.runner.idle()
  return item
}

const moved = (feedbackId: string, from: string, to: string): [string, Record<string, unknown>] => ['feedback.status_changed', { feedbackId, from, to }]
/** The agent_run.phase events of a run that went through `names`, in that order. */
const phases = (feedbackId: string, ...names: string[]): [string, Record<string, unknown>][] =>
  names.map((phase) => ['agent_run.phase', { runId: 'RUN', feedbackId, phase, durationMs: expect.any(Number) }])
const ALL_PHASES = ['prepare', 'clone', 'agent', 'guardrails', 'push', 'pr']
const intake = (id: string, routeTo: string): [string, Record<string, unknown>][] => [
  ['feedback.received', { feedbackId: id, status: 'received' }],
  moved(id, 'received', 'sanitizing'),
  moved(id, 'sanitizing', 'sanitized'),
  moved(id, 'sanitized', routeTo),
]

const texts: string[] = []
const report = (text: string) => (texts.push(text), submit(text))

describe('the exact event sequence of a report', () => {
  test('submission → pr_opened', async () => {
    await connect('fix.sh')
    const id = await report('Cart total shows NaN whenever a product lacks a price tag')
    const item = await settle(id, ['pr_opened', 'failed'])
    expect(item.status).toBe('pr_opened')
    const run = (await call(srv.url, 'GET', `/v1/agent-runs/${id}`, { auth: t.key })).body
    expect((await eventsOf(id))).toEqual([
      ...intake(id, 'queued'),
      moved(id, 'queued', 'agent_running'),
      ['agent_run.started', { runId: 'RUN', feedbackId: id, provider: 'command' }],
      ...phases(id, ...ALL_PHASES),
      moved(id, 'agent_running', 'pr_opened'),
      ['agent_run.succeeded', { runId: 'RUN', feedbackId: id, prUrl: item.mergeRequestUrl, branch: `fixloop/${id}`, costUsd: run.costUsd }],
    ])
    expect(item.mergeRequestUrl).toStartWith('http')
    // The run id in the events is the run's: its start, its six phases, its end.
    expect((await orgEvents()).filter((e) => e.data.feedbackId === id && e.data.runId).map((e) => e.data.runId)).toEqual(Array(8).fill(run.id))
  }, 60_000)

  // A run that fails ends with agent_run.failed; one that breaks a guardrail with agent_run.guardrailed.
  // The phases that ended before it: the agent's failure ends its own phase; a guardrail ends the guardrails one.
  const endings: [string, string, string, string, string[]][] = [
    ['failed (the agent exits non-zero)', 'crash.sh', 'Newsletter signup form rejects every valid postcode from Norway', 'failed', ['prepare', 'clone']],
    ['guardrailed (failed, with the guardrail reason)', 'workflow.sh', 'Dark mode toggle forgets the choice after reloading the settings page', 'guardrailed', ['prepare', 'clone', 'agent']],
  ]
  for (const [name, script, text, runStatus, ended] of endings) {
    test(`submission → ${name}`, async () => {
      await connect(script)
      const id = await report(text)
      expect((await settle(id, ['pr_opened', 'failed'])).status).toBe('failed')
      const run = (await call(srv.url, 'GET', `/v1/agent-runs/${id}`, { auth: t.key })).body
      expect(run.status).toBe(runStatus)
      const last: [string, Record<string, unknown>] =
        runStatus === 'failed'
          ? ['agent_run.failed', { runId: 'RUN', feedbackId: id, error: run.error }]
          : ['agent_run.guardrailed', { runId: 'RUN', feedbackId: id, guardrailReason: run.guardrailReason }]
      expect((await eventsOf(id))).toEqual([
        ...intake(id, 'queued'),
        moved(id, 'queued', 'agent_running'),
        ['agent_run.started', { runId: 'RUN', feedbackId: id, provider: 'command' }],
        ...phases(id, ...ended),
        moved(id, 'agent_running', 'failed'),
        last,
      ])
    }, 60_000)
  }

  test('failed, then retried by the customer (PATCH queued) → pr_opened: the chain goes on from failed', async () => {
    await connect('crash.sh')
    const id = await report('Shipping estimate widget divides by zero for weekend pickups')
    expect((await settle(id, ['pr_opened', 'failed'])).status).toBe('failed')
    const before = (await eventsOf(id)).length
    await connect('fix.sh')
    expect((await call(srv.url, 'PATCH', `/v1/feedback/${id}`, { auth: t.key, body: { status: 'queued' } })).status).toBe(200)
    const item = await settle(id, ['pr_opened'])
    expect(item.failureReason).toBeNull()
    const run = (await call(srv.url, 'GET', `/v1/agent-runs/${id}`, { auth: t.key })).body
    expect((await eventsOf(id)).slice(before)).toEqual([
      moved(id, 'failed', 'queued'),
      moved(id, 'queued', 'agent_running'),
      ['agent_run.started', { runId: 'RUN', feedbackId: id, provider: 'command' }],
      ...phases(id, ...ALL_PHASES),
      moved(id, 'agent_running', 'pr_opened'),
      ['agent_run.succeeded', { runId: 'RUN', feedbackId: id, prUrl: item.mergeRequestUrl, branch: `fixloop/${id}`, costUsd: run.costUsd }],
    ])
  }, 60_000)

  test('submission → awaiting_manual → archived (a customer move)', async () => {
    await srv.admin.updateApp(t.orgId, t.appId, { processingMode: 'manual' })
    const id = await report('Invoice PDF download button stays greyed out on Safari')
    await settle(id, ['awaiting_manual'])
    expect((await call(srv.url, 'PATCH', `/v1/feedback/${id}`, { auth: t.key, body: { status: 'archived' } })).status).toBe(200)
    // A refused move (archived → queued) records nothing.
    expect((await call(srv.url, 'PATCH', `/v1/feedback/${id}`, { auth: t.key, body: { status: 'queued' } })).status).toBe(409)
    expect((await eventsOf(id))).toEqual([...intake(id, 'awaiting_manual'), moved(id, 'awaiting_manual', 'archived')])
  })

  test('merge and unmerge', async () => {
    const lead = await report('Password reset email never arrives for addresses with a plus sign')
    const other = await report('Map widget on the store locator renders grey tiles only')
    await settle(lead, ['awaiting_manual'])
    await settle(other, ['awaiting_manual'])
    const merged = await call(srv.url, 'POST', `/v1/feedback/${other}/merge`, { auth: t.key, body: { leadId: lead } })
    expect(merged.status).toBe(200)
    const unmerged = await call(srv.url, 'POST', `/v1/feedback/${other}/unmerge`, { auth: t.key })
    expect(unmerged.status).toBe(200)
    await eventually(async () => (await dbRow(srv.ctx, 'SELECT 1 FROM jobs WHERE feedback_id = ?', [other])) === undefined)
    expect((await eventsOf(other))).toEqual([
      ...intake(other, 'awaiting_manual'),
      ['feedback.duplicate_attached', { feedbackId: other, leadFeedbackId: lead, duplicateCount: 1, manual: true, automatic: false, score: null }],
      ['feedback.unmerged', { feedbackId: other, leadFeedbackId: lead, duplicateCount: 0 }],
    ])
    // The lead's own history has no trace of the merge: the events are about the report that moved.
    expect((await eventsOf(lead))).toEqual(intake(lead, 'awaiting_manual'))
  })

  test('an automatic duplicate: attached by clustering, no moves of its own after sanitizing', async () => {
    const text = 'Checkout coupon field accepts expired codes and then charges the full price anyway'
    const lead = await report(text)
    await settle(lead, ['awaiting_manual'])
    const dup = await report(text)
    await eventually(async () => ((await dbRow(srv.ctx, 'SELECT duplicate_of_id AS d FROM feedback WHERE id = ?', [dup])) as { d: string | null }).d === lead)
    await eventually(async () => (await dbRow(srv.ctx, 'SELECT 1 FROM jobs WHERE feedback_id = ?', [dup])) === undefined)
    expect((await eventsOf(dup))).toEqual([
      ['feedback.received', { feedbackId: dup, status: 'received' }],
      moved(dup, 'received', 'sanitizing'),
      moved(dup, 'sanitizing', 'sanitized'),
      ['feedback.duplicate_attached', { feedbackId: dup, leadFeedbackId: lead, duplicateCount: 1, manual: false, automatic: true, score: 1 }],
    ])
  })

  test('every event is scoped to the App, seq rises by one per Org, and no payload carries report text', async () => {
    const all = await orgEvents()
    expect(all.map((e) => e.seq)).toEqual(all.map((_, i) => i + 1))
    expect(all.every((e) => e.appId === t.appId)).toBe(true)
    const dump = JSON.stringify(all.map((e) => e.data))
    for (const text of texts) for (const word of text.split(' ').filter((w) => w.length > 6)) expect(dump).not.toContain(word)
  })
})

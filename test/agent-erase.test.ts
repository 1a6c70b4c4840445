/**
 * A reporter erased (or a report expired) while an agent works on their report: the agent is stopped and
 * nothing of the report leaves the machine afterwards — no branch pushed with its text in the commit, no
 * pull request, no `agent_run.*` event naming the removed report. Found by the governance attack of
 * session 39: the erase answered `{"erased":1}` and, 13 s later, the run pushed `fixloop: <report text>`.
 * Real git (a local bare repository), the strict GitHub stub, fixture agents.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { call, eventually, seedTenant, startTestServer, tempDir, type Tenant, type TestServer } from './harness'
import { startGitHostStub, type GitHostStub } from './git-host-stub'
import { branchExists, makeBareRepo } from './git-fixtures'
import { Logger } from '../src/core/logger'
import { REMOVAL_WATCH_MS } from '../src/agent/runner'
import { dbRows } from './sqlite-of'

const AGENTS = join(import.meta.dir, 'fixtures', 'agents')
const fix = `sh ${JSON.stringify(join(AGENTS, 'fix.sh'))}`
const TOKEN = 'ghp_' + 'E3rAs9eW7kL4vB8nR1tY6uI3oP5aS0dF2gH4j'

let srv: TestServer
let t: Tenant
let stub: GitHostStub
let bare: string
const logs: string[] = []

beforeAll(async () => {
  bare = makeBareRepo(tempDir('fixloop-erase-repo-'), { 'src/app.js': 'export const total = () => 0\n' }, 'main', 'shop')
  stub = await startGitHostStub({ kind: 'github', token: TOKEN, repos: [{ owner: 'acme', name: 'shop', barePath: bare }] })
  srv = await startTestServer({ FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000', FIXLOOP_AGENT_SANDBOX_PATHS: AGENTS }, { log: new Logger('info', (line) => logs.push(line)) })
  t = await seedTenant(srv.admin, { processingMode: 'auto_pr' })
})

afterAll(async () => {
  await srv?.close()
  await stub?.stop()
  if (bare) rmSync(dirname(bare), { recursive: true, force: true })
})

const connect = (agentCommand: string) =>
  srv.services.connections.connect(t.orgId, t.appId, { gitUrl: bare, host: 'github', hostApiUrl: stub.apiUrl, hostRepo: 'acme/shop', hostToken: TOKEN, agent: 'command', agentCommand, timeoutSeconds: 120, prMode: 'ready' })

/** Submits a report of `who`, waits until its agent runs, erases `who`; the report's id and when the erase answered. */
async function eraseWhileRunning(who: string, text: string): Promise<{ id: string; erasedAt: number }> {
  const r = await call(srv.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text, identity: { externalUserId: who } } })
  expect(r.status).toBe(201)
  const id = r.body.id as string
  await eventually(async () => ((await call(srv.url, 'GET', `/v1/feedback/${id}`, { auth: t.key })).body.status === 'agent_running' ? true : undefined), 30_000)
  const erased = await call(srv.url, 'POST', '/v1/reporters/erase', { auth: t.key, body: { externalUserId: who } })
  expect(erased.status).toBe(200)
  expect(erased.body.erased).toBe(1)
  return { id, erasedAt: Date.now() }
}

/** Nothing of the removed report went out or was recorded after the erase. */
async function expectNothingLeft(id: string, phrase: string): Promise<void> {
  expect(branchExists(bare, `fixloop/${id}`)).toBe(false)
  expect(stub.created).toEqual([])
  const events = await dbRows(srv.ctx, "SELECT type, data FROM events WHERE type IN ('agent_run.succeeded', 'agent_run.failed', 'agent_run.guardrailed')")
  expect(events.filter((e) => String(e.data).includes(id))).toEqual([])
  expect(await dbRows(srv.ctx, 'SELECT id FROM agent_runs WHERE feedback_id = ?', [id])).toEqual([])
  expect((await call(srv.url, 'GET', `/v1/feedback/${id}`, { auth: t.key })).status).toBe(404)
  expect(logs.join('\n')).not.toContain(phrase)
  expect(logs.some((l) => l.includes('agent run ended after its report was removed: nothing recorded') && l.includes(id))).toBe(true)
}

describe('erasing a reporter while an agent works on their report', () => {
  test('a long agent is stopped within the watch interval, and nothing is pushed or recorded', async () => {
    // Would push after a minute: the watch must stop it long before.
    await connect(`sleep 60 && ${fix}`)
    const phrase = 'erasedperson tapirquokka'
    const { id, erasedAt } = await eraseWhileRunning('long-agent-victim', `Dark mode toggle crashes the settings page for ${phrase}`)
    await eventually(async () => (srv.runner.activeCount === 0 ? true : undefined), REMOVAL_WATCH_MS * 4)
    await srv.runner.idle()
    // Stopped by the watch (every REMOVAL_WATCH_MS), not by the agent's own end 60 s later.
    expect(Date.now() - erasedAt).toBeLessThan(30_000)
    await expectNothingLeft(id, phrase)
  }, 60_000)

  test('an agent that finishes before the next watch: the push is refused all the same', async () => {
    // Done about a second after the erase, before the watch first looks (REMOVAL_WATCH_MS after the start):
    // the check before the push finds the run gone.
    await connect(`sleep 1 && ${fix}`)
    const phrase = 'erasedperson narwhalokapi'
    const { id } = await eraseWhileRunning('short-agent-victim', `Coupon field rejects valid codes for ${phrase}`)
    await eventually(async () => (srv.runner.activeCount === 0 ? true : undefined), 30_000)
    await srv.runner.idle()
    await expectNothingLeft(id, phrase)
  }, 60_000)
})

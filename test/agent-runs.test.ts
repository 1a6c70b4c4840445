/**
 * Agent runs end to end with real git (a local bare repository as the remote), fixture agents, and a
 * strict local stub of the GitHub/Gitea/GitLab create-PR endpoints. Each guardrail and each failure
 * checks the run record (status, reason or error, timings) and the report's status.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, readdirSync, readFileSync, writeFileSync, chmodSync, rmSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { call, eventually, seedTenant, startTestServer, tempDir, type Tenant, type TestServer } from './harness'
import { runEnd } from './agent-run-end'
import { startGitHostStub, type GitHostKind, type GitHostStub } from './git-host-stub'
import { branchExists, changedFiles, makeBareRepo, readFileAtBranch } from './git-fixtures'
import type { ConnectionInput } from '../src/modules/connections/service'
import { Logger } from '../src/core/logger'
import { credibleUsage, MAX_RUN_COST_USD, parseAgentOutput, runUsage } from '../src/agent/presets'
import { execCommand } from '../src/agent/exec'
import { survivors } from './process-helpers'
import { dbRow, dbRows, dbRun } from './sqlite-of'
import { clusterEnv } from './cluster-env'

const AGENTS = join(import.meta.dir, 'fixtures', 'agents')
const agent = (name: string) => `sh ${JSON.stringify(join(AGENTS, name))}`
const TOKEN = 'ghp_' + 'Q7mZ2xW9kL4vB8nR1tY6uI3oP5aS0dF2gH4j'
const MASTER_KEY = 'a1'.repeat(32)
const REPO_FILES = { 'src/app.js': 'export function total(items) {\n  return items.reduce((a, b) => a + b.price, 0)\n}\n', 'README.md': '# shop\n' }

interface Setup {
  srv: TestServer
  t: Tenant
  stub: GitHostStub
  bare: string
  logs: string[]
}

async function setup(kind: GitHostKind = 'github', env: Record<string, string> = {}): Promise<Setup> {
  const dir = tempDir('fixloop-repo-')
  const bare = makeBareRepo(dir, REPO_FILES, 'main', 'shop')
  const stub = await startGitHostStub({ kind, token: TOKEN, repos: [{ owner: 'acme', name: 'shop', barePath: bare }] })
  const logs: string[] = []
  // Tests poll with the sk_ key far faster than a client would: lift the per-key rate limit.
  // The fixture agents live in this repository: the sandbox shows their folder read-only.
  const srv = await startTestServer({ FIXLOOP_MASTER_KEY: MASTER_KEY, FIXLOOP_PUBLIC_URL: 'https://feedback.example.com', FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000', FIXLOOP_AGENT_SANDBOX_PATHS: AGENTS, ...env }, { log: new Logger('info', (line) => logs.push(line)) })
  const t = await seedTenant(srv.admin, { processingMode: 'auto_pr' })
  return { srv, t, stub, bare, logs }
}

function connect(s: Setup, overrides: Partial<ConnectionInput> = {}) {
  return s.srv.services.connections.connect(s.t.orgId, s.t.appId, {
    gitUrl: s.bare,
    host: s.stub.apiUrl.includes('/api/v4') ? 'gitlab' : s.stub.apiUrl.includes('/api/v1') ? 'gitea' : 'github',
    hostApiUrl: s.stub.apiUrl,
    hostRepo: 'acme/shop',
    hostToken: TOKEN,
    agent: 'command',
    agentCommand: agent('fix.sh'),
    timeoutSeconds: 30,
    ...overrides,
  })
}

/** The stub parses the repo path from the git URL: point the remote at owner/name via a matching path. */
async function submitAndFinish(s: Setup, text = 'Cart total is NaN when an item has no price') {
  const r = await call(s.srv.url, 'POST', '/v1/feedback', { auth: s.t.pub, body: { text, url: 'https://shop.example/cart', identity: { email: 'shopper@example.com', name: 'Sam Shopper' } } })
  expect(r.status).toBe(201)
  return finish(s, r.body.id)
}

function finish(s: Setup, id: string) {
  return runEnd(s.srv, s.t.key, id)
}

async function teardown(s: Setup) {
  await s.srv.close()
  await s.stub.stop()
  rmSync(dirname(s.bare), { recursive: true, force: true })
}

function expectTimings(run: { timings: Record<string, number> }) {
  expect(Object.keys(run.timings).sort()).toEqual(['agentMs', 'cloneMs', 'prMs', 'prepareMs', 'pushMs'])
  for (const v of Object.values(run.timings)) expect(Number.isInteger(v) && v >= 0).toBe(true)
}

/** Every place the token or master key could leak to. */
async function expectNoSecrets(s: Setup, ...texts: string[]): Promise<void> {
  const all = [...s.logs, ...texts, JSON.stringify((await dbRows(s.srv.ctx, 'SELECT * FROM agent_runs'))), JSON.stringify((await dbRows(s.srv.ctx, 'SELECT * FROM repo_connections')))].join('\n')
  expect(all).not.toContain(TOKEN)
  expect(all).not.toContain(MASTER_KEY)
}

describe('a run that opens a pull request (GitHub)', () => {
  let s: Setup
  beforeAll(async () => {
    // The stub maps owner/name from the URL path: the bare repo lives at <tmp>/shop.git, so name it acme/shop.
    s = await setup('github')
  })
  afterAll(() => teardown(s))

  test('queued report → branch pushed, PR opened, report pr_opened, run succeeded with usage and timings', async () => {
    await connect(s, { gitUrl: s.bare, prMode: 'ready' })
    // The stub finds the repository by owner/name; the remote URL's path must end with acme/shop.
    const { item, run, id } = await submitAndFinish(s)
    expect(run.status).toBe('succeeded')
    expect(item.status).toBe('pr_opened')
    expect(run.prUrl).toBe(s.stub.created[0].url)
    expect(item.mergeRequestUrl).toBe(run.prUrl)
    expect(run.branch).toBe(`fixloop/${id}`)
    expect(run.provider).toBe('command')
    expect(run.model).toBe('fixture-1')
    expect(run.tokensIn).toBe(1200)
    expect(run.tokensOut).toBe(340)
    expect(run.costUsd).toBeCloseTo(0.0123)
    expect(run.summary).toContain('Fix a reported bug') // the task's first line reached the agent
    expectTimings(run)
    expect(run.timings.cloneMs + run.timings.pushMs + run.timings.prMs).toBeGreaterThan(0)
    expect(branchExists(s.bare, run.branch)).toBe(true)
    expect(changedFiles(s.bare, 'main', run.branch)).toEqual(['src/app.js'])
    expect(readFileAtBranch(s.bare, run.branch, 'src/app.js')).toContain('guard the null total')

    const pr = s.stub.created[0]
    expect(pr.head).toBe(run.branch)
    expect(pr.base).toBe('main')
    expect(pr.draft).toBe(false)
    expect(pr.body).toContain(`https://feedback.example.com/v1/feedback/${id}`)
    // No end-user PII in the pull request.
    expect(pr.body + pr.title).not.toContain('shopper@example.com')
    expect(pr.body + pr.title).not.toContain('Sam Shopper')
    const post = s.stub.requests.find((r) => r.method === 'POST')!
    expect(post.headers.authorization).toBe(`Bearer ${TOKEN}`)
    // The workspace is removed afterwards, and none ever lived in the data dir.
    expect(readdirSync(s.srv.runner.workspaceDir)).toEqual([])
    expect(existsSync(join(s.srv.dataDir, 'workspaces'))).toBe(false)
    await expectNoSecrets(s, JSON.stringify(run), JSON.stringify(item))
  })

  test('the token never appears in any git command line (a git wrapper records every argv)', async () => {
    const dir = tempDir('fixloop-gitwrap-')
    const log = join(dir, 'argv.log')
    const realGit = Bun.which('git')!
    const envLog = join(dir, 'env.log')
    // Every git process records its argv and its whole environment: the token must be in neither.
    writeFileSync(join(dir, 'git'), `#!/bin/sh\nprintf '%s\\n' "$*" >> ${JSON.stringify(log)}\nenv >> ${JSON.stringify(envLog)}\nexec ${JSON.stringify(realGit)} "$@"\n`)
    chmodSync(join(dir, 'git'), 0o755)
    const path = process.env.PATH
    process.env.PATH = `${dir}:${path}`
    try {
      await connect(s, { agentCommand: agent('fix.sh') })
      const { run } = await submitAndFinish(s, 'Argv case: the order total ignores discounts')
      expect(run.status).toBe('succeeded')
    } finally {
      process.env.PATH = path
    }
    const argv = readFileSync(log, 'utf8')
    expect(argv).toMatch(/clone .*--depth 1/)
    expect(argv).toMatch(/push /)
    expect(argv).not.toContain(TOKEN)
    const envs = readFileSync(envLog, 'utf8')
    expect(envs).toContain('GIT_CONFIG_NOSYSTEM=1')
    expect(envs).toMatch(/GIT_CONFIG_VALUE_1=!'.*\/cred\/helper-[0-9a-f]+'/)
    expect(envs).not.toContain(TOKEN)
  })

  test('the agent gets a minimal environment: no fixloop secret, no token', async () => {
    const marker = 'FIXLOOP_SHOULD_NOT_LEAK'
    process.env.FIXLOOP_TEST_SECRET = marker
    try {
      await connect(s, { agentCommand: agent('env-dump.sh') })
      const { run } = await submitAndFinish(s, 'Search box loses focus after typing two letters')
      expect(run.status).toBe('succeeded')
      const dump = readFileAtBranch(s.bare, run.branch, 'env-dump.txt')!
      expect(dump).toContain('FIXLOOP_TASK_FILE=')
      expect(dump).not.toContain(TOKEN)
      expect(dump).not.toContain(MASTER_KEY)
      expect(dump).not.toContain(marker)
      expect(dump).not.toMatch(/^FIXLOOP_MASTER_KEY=/m)
    } finally {
      delete process.env.FIXLOOP_TEST_SECRET
    }
  })

  test("fixloop's own git reads nothing the agent planted in its HOME: a global ignore file hides no file of the change", async () => {
    const plant = `mkdir -p "$HOME/.config/git" && printf 'hidden-*\\n' > "$HOME/.config/git/ignore" && printf 'hidden-* -text\\n' > "$HOME/.config/git/attributes" && echo kept > hidden-new.txt && ${agent('fix.sh')}`
    await connect(s, { agentCommand: plant })
    const { run } = await submitAndFinish(s, 'The order history page shows orders twice')
    expect(run.status).toBe('succeeded')
    expect(readFileAtBranch(s.bare, run.branch, 'hidden-new.txt')).toBe('kept\n')
  })

  test('duplicates of the lead show the same mergeRequestUrl', async () => {
    await connect(s, { agentCommand: agent('fix.sh') })
    await s.srv.admin.updateApp(s.t.orgId, s.t.appId, { processingMode: 'manual' })
    const lead = (await call(s.srv.url, 'POST', '/v1/feedback', { auth: s.t.pub, body: { text: 'The coupon field rejects valid codes at checkout every time.' } })).body.id
    await eventually(async () => (await call(s.srv.url, 'GET', `/v1/feedback/${lead}`, { auth: s.t.key })).body.status === 'awaiting_manual')
    const dup = (await call(s.srv.url, 'POST', '/v1/feedback', { auth: s.t.pub, body: { text: 'Hi, the coupon field rejects valid codes at checkout every time. Thanks' } })).body.id
    await eventually(async () => (await call(s.srv.url, 'GET', `/v1/feedback/${dup}`, { auth: s.t.key })).body.duplicateOfId === lead)
    expect((await call(s.srv.url, 'PATCH', `/v1/feedback/${lead}`, { auth: s.t.key, body: { status: 'queued' } })).status).toBe(200)
    const { item } = await finish(s, lead)
    expect(item.status).toBe('pr_opened')
    const d = (await call(s.srv.url, 'GET', `/v1/feedback/${dup}`, { auth: s.t.key })).body
    expect(d.mergeRequestUrl).toBe(item.mergeRequestUrl)
    await s.srv.admin.updateApp(s.t.orgId, s.t.appId, { processingMode: 'auto_pr' })
  })

  test('GET /v1/agent-runs/:id takes a run id or a feedback id; the list shows every run; other Orgs get 404', async () => {
    const { id, run } = await submitAndFinish(s, 'Wishlist count badge shows a negative number')
    const byRun = await call(s.srv.url, 'GET', `/v1/agent-runs/${run.id}`, { auth: s.t.key })
    expect(byRun.status).toBe(200)
    expect(byRun.body).toEqual(run)
    const list = await call(s.srv.url, 'GET', `/v1/feedback/${id}/agent-runs`, { auth: s.t.key })
    expect(list.body.data.map((r: { id: string }) => r.id)).toEqual([run.id])
    const stranger = await seedTenant(s.srv.admin, {}, 'Stranger')
    for (const path of [`/v1/agent-runs/${run.id}`, `/v1/agent-runs/${id}`, `/v1/feedback/${id}/agent-runs`]) {
      const r = await call(s.srv.url, 'GET', path, { auth: stranger.key })
      expect(r.status).toBe(404)
      expect(r.body.error.code).toBe('not_found')
    }
    expect((await call(s.srv.url, 'GET', '/v1/agent-runs/nothex', { auth: s.t.key })).body.error.code).toBe('invalid_id')
    expect((await call(s.srv.url, 'GET', `/v1/agent-runs/${'0'.repeat(24)}`, { auth: s.t.key })).status).toBe(404)
  })

  test('a failed report can be queued again for a new run', async () => {
    await connect(s, { agentCommand: agent('crash.sh'), model: 'local-7b' })
    const first = await submitAndFinish(s, 'Order confirmation email has an empty subject line')
    expect(first.item.status).toBe('failed')
    // The agent reported no model: the run keeps the one its connection names.
    expect(first.run.model).toBe('local-7b')
    await connect(s, { agentCommand: agent('fix.sh') })
    expect((await call(s.srv.url, 'PATCH', `/v1/feedback/${first.id}`, { auth: s.t.key, body: { status: 'queued' } })).status).toBe(200)
    const second = await finish(s, first.id)
    expect(second.item.status).toBe('pr_opened')
    expect(second.item.failureReason).toBeNull()
    const runs = (await call(s.srv.url, 'GET', `/v1/feedback/${first.id}/agent-runs`, { auth: s.t.key })).body.data
    expect(runs.map((r: { status: string }) => r.status)).toEqual(['succeeded', 'failed'])
  })
})

describe('guardrails', () => {
  let s: Setup
  beforeAll(async () => {
    s = await setup('github')
  })
  afterAll(() => teardown(s))

  const cases: [string, string, Partial<ConnectionInput>, RegExp][] = [
    ['no change at all', 'noop.sh', {}, /no change/],
    ['a CI workflow file', 'workflow.sh', {}, /denied path: \.github\/workflows\/evil\.yml/],
    ['a huge diff', 'huge.sh', {}, /too many lines changed: 5000 \(limit 1000\)/],
    ['an added AWS key', 'aws-key.sh', {}, /secrets \(.*aws.*\)/],
    ['a binary file', 'binary.sh', {}, /binary file: assets\/blob\.bin/],
    ['a symlink', 'symlink.sh', {}, /symlink: link/],
    ['a change to git config or hooks', 'githook.sh', {}, /git (config|hook)/],
    ['a configured deny-list path', 'fix.sh', { denyPaths: ['src/**'] }, /denied path: src\/app\.js \(matches src\/\*\*\)/],
    ['more files than the App allows', 'fix.sh', { maxFiles: 1, agentCommand: `${agent('fix.sh')} && echo x > other.txt` }, /too many files changed: 2 \(limit 1\)/],
    // An added line that itself starts with "++" is "+++…" in the patch, like a file header.
    ['a key on an added line starting with "++"', 'noop.sh', { agentCommand: `printf '++ aws_access_key_id = AKIA%s\\n' "$(LC_ALL=C tr -dc 'A-Z2-7' < /dev/urandom | head -c 16)" > notes.txt` }, /secrets \(.*aws.*\)/],
    // Nothing fixloop's own git would follow or block on: checked before it reads the clone.
    ['a ref that is a symlink (to /dev/zero)', 'noop.sh', { agentCommand: `echo x > a.txt && ln -s /dev/zero .git/refs/heads/zz` }, /a symlink in git metadata \(\.git\/refs\/heads\/zz\)/],
    ['a nested repository', 'noop.sh', { agentCommand: `mkdir -p sub && git -C sub init -q && echo x > sub/a.txt` }, /a nested git repository \(sub\/\.git\)/],
    ['a FIFO', 'noop.sh', { agentCommand: `echo x > a.txt && mkfifo pipe` }, /a special file \(FIFO, socket or device\): pipe/],
    // numstat's path is everything after the second TAB.
    ['a file too large, with a TAB in its name', 'noop.sh', { agentCommand: `head -c 3000000 /dev/zero | tr '\\0' a > "$(printf 'big\\tfile.txt')"` }, /file too large: big\tfile\.txt \(3000000 bytes/],
  ]
  for (const [name, script, overrides, reason] of cases) {
    test(name, async () => {
      await connect(s, { agentCommand: agent(script), ...overrides })
      const before = s.stub.created.length
      const { run, item } = await submitAndFinish(s, `Guardrail case: ${name}`)
      expect(run.status).toBe('guardrailed')
      expect(run.guardrailReason).toMatch(reason)
      expect(run.error).toBeNull()
      expect(run.prUrl).toBeNull()
      expectTimings(run)
      expect(item.status).toBe('failed')
      expect(item.failureReason).toContain('guardrailed')
      // Nothing was pushed or opened.
      expect(branchExists(s.bare, run.branch)).toBe(false)
      expect(s.stub.created.length).toBe(before)
    })
  }
})

describe('failures', () => {
  let s: Setup
  beforeAll(async () => {
    s = await setup('github')
  })
  afterAll(() => teardown(s))

  test('the agent exits non-zero', async () => {
    await connect(s, { agentCommand: agent('crash.sh') })
    const { run, item } = await submitAndFinish(s, 'Crash case: footer links overlap')
    expect(run.status).toBe('failed')
    expect(run.error).toMatch(/agent exited with code 3/)
    // Spec 2.4 types model a string: empty when the agent reported none and the connection names none.
    expect(run.model).toBe('')
    expect(run.outputTail).toContain('crash.sh')
    expect(item.status).toBe('failed')
    expect(item.failureReason).toContain('exited with code 3')
    expectTimings(run)
  })

  test('the agent hangs past the timeout: the whole process group is killed', async () => {
    await connect(s, { agentCommand: agent('hang.sh'), timeoutSeconds: 2 })
    const { run, id } = await submitAndFinish(s, 'Timeout case: the map never loads')
    expect(run.status).toBe('failed')
    expect(run.error).toBe('agent timed out after 2 s')
    expect(run.timings.agentMs).toBeGreaterThanOrEqual(1900)
    expect(run.outputTail).toContain(`report ${id}`)
    // No process of the run is left, not even the setsid one (the sandbox's PID namespace ended).
    await eventually(() => !survivors(`hang-`).some((l) => l.includes(id)), 5000)
  })

  test('the verify command fails', async () => {
    await connect(s, { agentCommand: agent('fix.sh'), verifyCommand: 'echo "1 test failed: total()" >&2; exit 1' })
    const { run } = await submitAndFinish(s, 'Verify case: discount rounding is off by a cent')
    expect(run.status).toBe('failed')
    expect(run.error).toMatch(/verify command failed \(exit 1\): .*1 test failed/)
    expect(branchExists(s.bare, run.branch)).toBe(false)
  })

  test('the clone fails', async () => {
    await connect(s, { gitUrl: join(tempDir(), 'missing.git') })
    const { run, item } = await submitAndFinish(s, 'Clone case: language switcher is missing')
    expect(run.status).toBe('failed')
    expect(run.error).toMatch(/^clone failed/)
    expect(item.status).toBe('failed')
  })

  test('the push is rejected', async () => {
    const hook = join(s.bare, 'hooks', 'pre-receive')
    writeFileSync(hook, '#!/bin/sh\necho "pushes are frozen" >&2\nexit 1\n')
    chmodSync(hook, 0o755)
    try {
      await connect(s, { agentCommand: agent('fix.sh') })
      const { run } = await submitAndFinish(s, 'Push case: the size chart is blurry')
      expect(run.status).toBe('failed')
      expect(run.error).toMatch(/^push failed: .*pushes are frozen/)
    } finally {
      writeFileSync(hook, '#!/bin/sh\nexit 0\n')
    }
  })

  test('the host API answers with an error', async () => {
    await connect(s, { agentCommand: agent('fix.sh') })
    s.stub.failNext(500, { message: 'Server Error' })
    const { run, item } = await submitAndFinish(s, 'Host case: the login page flickers')
    expect(run.status).toBe('failed')
    expect(run.error).toMatch(/github API answered 500 .*Server Error/)
    expect(item.status).toBe('failed')
    expect(branchExists(s.bare, run.branch)).toBe(true) // pushed, but no PR
  })

  test('a wrong token: 401 from the host, and the token appears nowhere', async () => {
    await s.srv.services.connections.connect(s.t.orgId, s.t.appId, { gitUrl: s.bare, host: 'github', hostApiUrl: s.stub.apiUrl, hostRepo: 'acme/shop', hostToken: 'ghp_wrongwrongwrongwrongwrongwrong1234', agent: 'command', agentCommand: agent('fix.sh') })
    const { run } = await submitAndFinish(s, 'Token case: newsletter checkbox is pre-ticked')
    expect(run.status).toBe('failed')
    expect(run.error).toMatch(/401 .*Bad credentials/)
    expect(run.error).not.toContain('ghp_wrong')
    await expectNoSecrets(s, JSON.stringify(run))
  })

  test('the runs-per-day cap', async () => {
    await connect(s, { agentCommand: agent('fix.sh'), runsPerDay: 1 })
    // Earlier tests of this App already ran today: the cap is reached at once.
    const { run, item } = await submitAndFinish(s, 'Cap case: product video does not autoplay')
    expect(run.status).toBe('failed')
    expect(run.error).toMatch(/^cap reached: \d+ runs in the last 24 hours \(limit 1 per day\)/)
    expect(item.status).toBe('failed')
  })

  test('the monthly cost cap', async () => {
    await connect(s, { agentCommand: agent('fix.sh'), runsPerDay: 1000, maxCostUsdPerMonth: 0.01 })
    const { run } = await submitAndFinish(s, 'Cost case: breadcrumb shows the wrong category')
    expect(run.status).toBe('failed')
    expect(run.error).toMatch(/^cap reached: \$[\d.]+ spent this month \(limit \$0.01\)/)
  })

  test("control characters and bidi overrides of the agent's summary, model and output are not stored (a terminal escape), its lines are", async () => {
    await connect(s, { agentCommand: `${agent('fix.sh')} > /dev/null && printf '{"summary":"line one\\\\u001b]0;pwned\\\\u0007\\\\nline two\\\\u009b31m\\\\u202eevil","model":"m\\\\u001b[2Jx"}' > "$FIXLOOP_RESULT_FILE" && printf 'plain \\033[31mred\\033[0m\\n'` })
    const { run } = await submitAndFinish(s, 'Control characters: the footer link is dead')
    expect(run.status).toBe('succeeded')
    expect(run.model).toBe('m[2Jx')
    expect(run.summary).toBe('line one]0;pwned\nline two31mevil')
    expect(run.outputTail).toContain('plain [31mred[0m')
    expect(run.outputTail).not.toContain('\u001b')
  })

  test("a cost no run can have (the agent's own result file) is dropped: it spends no App's cap", async () => {
    await connect(s, { agentCommand: `printf '{"costUsd":1e308,"tokensIn":1e300,"tokensOut":-5}' > "$FIXLOOP_RESULT_FILE"; exit 3`, runsPerDay: 1000, maxCostUsdPerMonth: 50 })
    const first = await submitAndFinish(s, 'Forged cost: the cart badge shows 0 items')
    expect(first.run.status).toBe('failed')
    expect([first.run.costUsd, first.run.tokensIn, first.run.tokensOut]).toEqual([0, 0, 0])
    await connect(s, { agentCommand: agent('fix.sh'), runsPerDay: 1000, maxCostUsdPerMonth: 50 })
    const next = await submitAndFinish(s, 'After the forged cost: the wishlist heart does not fill')
    expect(next.run.error ?? '').not.toMatch(/cap reached/)
    expect(next.run.status).toBe('succeeded')
  })

  test('the token never appears in any log line, run record or error text', async () => {
    await expectNoSecrets(s)
    expect(s.logs.some((l) => l.includes('agent run ended'))).toBe(true)
  })
})

describe('hosts: Gitea and GitLab, drafts', () => {
  for (const kind of ['gitea', 'gitlab'] as const) {
    test(`${kind}: a draft pull/merge request is opened with the host's auth header`, async () => {
      const s = await setup(kind)
      try {
        await connect(s, { prMode: 'draft' })
        const { run, item } = await submitAndFinish(s, `Draft case on ${kind}: price filter ignores the maximum`)
        expect(run.status).toBe('succeeded')
        expect(item.mergeRequestUrl).toBe(s.stub.created[0].url)
        expect(s.stub.created[0].draft).toBe(true)
        const post = s.stub.requests.find((r) => r.method === 'POST')!
        if (kind === 'gitea') expect(post.headers.authorization).toBe(`token ${TOKEN}`)
        else expect(post.headers['private-token']).toBe(TOKEN)
        await expectNoSecrets(s, JSON.stringify(run))
      } finally {
        await teardown(s)
      }
    })
  }

  test('github draft mode sends draft: true', async () => {
    const s = await setup('github')
    try {
      await connect(s, { prMode: 'draft' })
      const { run } = await submitAndFinish(s, 'Draft case on github: search suggestions overlap the header')
      expect(run.status).toBe('succeeded')
      expect(s.stub.created[0].draft).toBe(true)
    } finally {
      await teardown(s)
    }
  })

  test('branch mode (host none): the branch is pushed, no request is opened', async () => {
    const s = await setup('github')
    try {
      await s.srv.services.connections.connect(s.t.orgId, s.t.appId, { gitUrl: s.bare, host: 'none', agent: 'command', agentCommand: agent('fix.sh') })
      const { run, item } = await submitAndFinish(s, 'Branch case: the cookie banner covers the pay button')
      expect(run.status).toBe('succeeded')
      expect(run.prUrl).toBeNull()
      expect(item.status).toBe('pr_opened')
      expect(item.mergeRequestUrl).toBeNull()
      expect(branchExists(s.bare, run.branch)).toBe(true)
      expect(s.stub.requests).toEqual([])
    } finally {
      await teardown(s)
    }
  })
})

describe('runs of one App are serialized; interrupted runs are failed at start', () => {
  test('two queued reports of one App never run at the same time', async () => {
    const s = await setup('github', { FIXLOOP_AGENT_CONCURRENCY: '4' })
    try {
      await connect(s, { agentCommand: `sleep 1 && ${agent('fix.sh')}` })
      const ids = await Promise.all(
        ['Serial one: the cart icon flickers', 'Serial two: returns form rejects dates'].map(
          async (text) => (await call(s.srv.url, 'POST', '/v1/feedback', { auth: s.t.pub, body: { text } })).body.id as string,
        ),
      )
      // The run that finds the App's slot taken waits: its job is deferred AGENT_RETRY_MS (5 s) at a time. Once
      // the first run has ended that wait is made due now (the order checked below is the runner's; a start
      // that still found the slot taken would only wait again).
      let done = false
      const kicking = (async () => {
        while (!done) {
          if (await dbRow(s.srv.ctx, "SELECT id FROM agent_runs WHERE app_id = ? AND status <> 'running'", [s.t.appId])) {
            const due = await dbRows(s.srv.ctx, "UPDATE jobs SET run_after = 0 WHERE kind = 'agent' AND lease_until IS NULL AND run_after > ? RETURNING id", [Date.now()])
            if (due.length > 0) s.srv.services.worker.wake()
          }
          await Bun.sleep(50)
        }
      })()
      const runs = await Promise.all(ids.map((id) => finish(s, id).then((r) => r.run))).finally(() => (done = true))
      await kicking
      expect(runs.map((r) => r.status)).toEqual(['succeeded', 'succeeded'])
      const [a, b] = runs.sort((x, y) => Date.parse(x.startedAt) - Date.parse(y.startedAt))
      expect(Date.parse(b.startedAt)).toBeGreaterThanOrEqual(Date.parse(a.endedAt))
    } finally {
      await teardown(s)
    }
  }, 60_000)

  test('a stop while a run is being started waits for that start: the run ends failed, none is left running (the App\'s slot free)', async () => {
    const s = await setup('github')
    try {
      // No repository yet: the report waits in `queued`. The worker is stopped before the repository is
      // connected, so only the start below can start its run.
      const id = (await call(s.srv.url, 'POST', '/v1/feedback', { auth: s.t.pub, body: { text: 'Stop case: the coupon field eats the last digit' } })).body.id as string
      await eventually(async () => (await dbRow(s.srv.ctx, 'SELECT status FROM feedback WHERE id = ?', [id]))?.status === 'queued', 15_000)
      await s.srv.services.worker.stop()
      await connect(s, { agentCommand: 'sleep 30' })
      // The stop comes while the start is in hand, past its own check and before its run is among the
      // running ones: as the start reads the App's repository connection.
      const connections = s.srv.services.connections
      const load = connections.load.bind(connections)
      let stopped: Promise<void> | undefined
      connections.load = async (appId: string) => {
        stopped ??= s.srv.runner.stop()
        return load(appId)
      }
      expect(await s.srv.runner.start(id)).toBe(true)
      expect(stopped).toBeDefined()
      await stopped
      connections.load = load
      const runs = await dbRows<{ status: string; error: string }>(s.srv.ctx, 'SELECT status, error FROM agent_runs WHERE feedback_id = ?', [id])
      expect(runs.map((r) => r.status)).toEqual(['failed'])
      expect((await dbRow(s.srv.ctx, 'SELECT status FROM feedback WHERE id = ?', [id]))?.status).toBe('failed')
      // Once stopping, a start is refused (its job waits for the next start of fixloop).
      await expect(s.srv.runner.start(id)).rejects.toThrow('fixloop is stopping')
    } finally {
      await teardown(s)
    }
  }, 60_000)

  test('the sweep fails a run whose node is gone from cluster_nodes (it left with the row still running); a listed node\'s run is left alone', async () => {
    const s = await setup('github')
    try {
      const now = Date.now()
      const ids: Record<string, string> = {}
      for (const [name, text] of [['gone', 'Orphan case: the sort order resets'], ['live', 'Live case: the filter chips overlap']]) {
        ids[name] = (await call(s.srv.url, 'POST', '/v1/feedback', { auth: s.t.pub, body: { text } })).body.id
      }
      await eventually(async () => (await dbRows(s.srv.ctx, "SELECT id FROM feedback WHERE id IN (?, ?) AND status = 'queued'", [ids.gone, ids.live])).length === 2, 15_000)
      await s.srv.services.worker.stop()
      await dbRun(s.srv.ctx, "INSERT INTO cluster_nodes (id, host, pid, version, started_at, heartbeat_at, roles) VALUES ('node_live', 'h', 1, 'v', ?, ?, '')", [now, now])
      // Two Apps' worth of runs cannot both run in one App: the live node's run is in a second App.
      const other = await seedTenant(s.srv.admin, { processingMode: 'auto_pr' }, 'Other')
      await dbRun(s.srv.ctx, 'UPDATE feedback SET app_id = ?, org_id = ? WHERE id = ?', [other.appId, other.orgId, ids.live])
      for (const [name, node, appId, orgId] of [['gone', 'node_gone', s.t.appId, s.t.orgId], ['live', 'node_live', other.appId, other.orgId]]) {
        await dbRun(s.srv.ctx, "UPDATE feedback SET status = 'agent_running' WHERE id = ?", [ids[name]])
        await dbRun(
          s.srv.ctx,
          "INSERT INTO agent_runs (id, org_id, app_id, feedback_id, provider, status, branch, timings, started_at, created_at, node_id) VALUES (?, ?, ?, ?, 'command', 'running', ?, ?, ?, ?, ?)",
          [(name === 'gone' ? 'a' : 'b').repeat(24), orgId, appId, ids[name], `fixloop/${ids[name]}`, JSON.stringify({ prepareMs: 0, cloneMs: 0, agentMs: 0, pushMs: 0, prMs: 0 }), now, now, node],
        )
      }
      // A sweep that found no dead node (the maintenance holder's, at each beat; on PostgreSQL this server's
      // own beat may have come first, hence no count here).
      await s.srv.runner.failRunsOf([])
      const status = async (runId: string) => (await dbRow<{ status: string }>(s.srv.ctx, 'SELECT status FROM agent_runs WHERE id = ?', [runId]))?.status
      expect([await status('a'.repeat(24)), await status('b'.repeat(24))]).toEqual(['failed', 'running'])
      expect((await dbRow(s.srv.ctx, 'SELECT status FROM feedback WHERE id = ?', [ids.gone]))?.status).toBe('failed')
      expect((await dbRow(s.srv.ctx, 'SELECT status FROM feedback WHERE id = ?', [ids.live]))?.status).toBe('agent_running')
      // Left alone again at the next sweep.
      expect(await s.srv.runner.failRunsOf([])).toBe(0)
      await dbRun(s.srv.ctx, "UPDATE agent_runs SET status = 'failed' WHERE id = ?", ['b'.repeat(24)])
    } finally {
      await teardown(s)
    }
  }, 60_000)

  test('a run left running by a crash is failed at the next start, and its report too', async () => {
    const s = await setup('github')
    const dataDir = s.srv.dataDir
    const now = Date.now()
    await dbRun(s.srv.ctx, `UPDATE feedback SET status = 'agent_running' WHERE id = ?`, [
      (await call(s.srv.url, 'POST', '/v1/feedback', { auth: s.t.pub, body: { text: 'Crash case: placeholder' } })).body.id,
    ])
    const fid = ((await dbRow(s.srv.ctx, "SELECT id FROM feedback WHERE status = 'agent_running'")) as { id: string }).id
    await dbRun(
      s.srv.ctx,
      "INSERT INTO agent_runs (id, org_id, app_id, feedback_id, provider, status, branch, timings, started_at, created_at) VALUES (?, ?, ?, ?, 'command', 'running', ?, ?, ?, ?)",
      ['f'.repeat(24), s.t.orgId, s.t.appId, fid, `fixloop/${fid}`, JSON.stringify({ prepareMs: 0, cloneMs: 0, agentMs: 0, pushMs: 0, prMs: 0 }), now, now],
    )
    // The restarted node finds the same database: in PostgreSQL mode, the same one on the file's servers.
    const dbEnv = s.srv.ctx.config.databaseUrl ? await clusterEnv(s.srv.ctx.config.databaseUrl) : {}
    await s.srv.stop()
    const { loadConfig } = await import('../src/config')
    const { startServer } = await import('../src/runtime/server')
    const again = await startServer(loadConfig({ host: '127.0.0.1', port: '0', dataDir }, { ...dbEnv, FIXLOOP_MASTER_KEY: MASTER_KEY }), { log: new Logger('silent') })
    try {
      // The reclaim at start is the runner's first turn (asynchronous: it may be on PostgreSQL).
      await again.runner.idle()
      const run = (await dbRow(again.ctx, 'SELECT status, error FROM agent_runs WHERE id = ?', ['f'.repeat(24)])) as { status: string; error: string }
      expect(run.status).toBe('failed')
      expect(run.error).toMatch(/^interrupted/)
      const f = (await dbRow(again.ctx, 'SELECT status, failure_reason FROM feedback WHERE id = ?', [fid])) as { status: string; failure_reason: string }
      expect(f.status).toBe('failed')
      expect(f.failure_reason).toContain('interrupted')
    } finally {
      await again.stop()
      await s.stub.stop()
      rmSync(dirname(s.bare), { recursive: true, force: true })
    }
  })
})

describe('preset output parsing', () => {
  test('Claude Code JSON output gives model, tokens, cost and summary', async () => {
    const dir = tempDir()
    const bare = makeBareRepo(dir, REPO_FILES)
    const work = join(dir, 'work')
    await execCommand(['git', 'clone', '-q', bare, work], { cwd: dir, env: { PATH: process.env.PATH! }, timeoutMs: 10_000 })
    const r = await execCommand(['sh', join(AGENTS, 'claude-json.sh')], { cwd: work, env: { PATH: process.env.PATH! }, timeoutMs: 10_000 })
    expect(r.code).toBe(0)
    const usage = parseAgentOutput('claude-code', r.stdout)
    expect(usage).toEqual({ model: 'claude-sonnet-4-5-20250929', tokensIn: 1600, tokensOut: 420, costUsd: 0.0421, summary: 'Fixed it' })
  })

  test('aider and codex outputs', () => {
    const aider = parseAgentOutput('aider', 'Model: gpt-4o with diff edit format\n...\nTokens: 2.1k sent, 310 received. Cost: $0.01 message, $0.02 session.\n')
    expect(aider).toEqual({ model: 'gpt-4o', tokensIn: 2100, tokensOut: 310, costUsd: 0.02 })
    const codex = parseAgentOutput('codex', '{"type":"thread.started"}\n{"type":"turn.completed","usage":{"input_tokens":900,"cached_input_tokens":0,"output_tokens":120}}\n')
    expect(codex).toEqual({ tokensIn: 900, tokensOut: 120 })
  })
})

describe('what a run reports', () => {
  test("the CLI's own tokens, cost and model win over the agent's result file, which fills only gaps; its summary wins", () => {
    const cli = { model: 'claude-sonnet-4-5', tokensIn: 1600, tokensOut: 420, costUsd: 0.04, summary: 'from the CLI' }
    expect(runUsage(cli, { model: 'free-model', tokensIn: 1, tokensOut: 1, costUsd: 0, summary: 'from the file' })).toEqual({ ...cli, summary: 'from the file' })
    // codex reports no cost; a command agent nothing: the file fills in.
    expect(runUsage({ tokensIn: 900, tokensOut: 120 }, { costUsd: 0.5, model: 'local' })).toEqual({ model: 'local', tokensIn: 900, tokensOut: 120, costUsd: 0.5, summary: undefined })
  })
  test('figures no run can have are dropped, wherever they come from', () => {
    expect(credibleUsage({ costUsd: 1e308, tokensIn: 1e300, tokensOut: -5 })).toEqual({ costUsd: undefined, tokensIn: undefined, tokensOut: undefined })
    expect(credibleUsage({ costUsd: MAX_RUN_COST_USD, tokensIn: 12, tokensOut: 0 })).toEqual({ costUsd: MAX_RUN_COST_USD, tokensIn: 12, tokensOut: 0 })
    expect(runUsage({ costUsd: 1e308 }, { costUsd: 0.25 }).costUsd).toBe(0.25)
  })
})

describe('connect-repo rules', () => {
  test('the token is sealed at rest and never returned', async () => {
    const s = await setup('github')
    try {
      const view = await connect(s)
      expect(JSON.stringify(view)).not.toContain(TOKEN)
      expect(view.hasHostToken).toBe(true)
      const stored = JSON.stringify((await dbRows(s.srv.ctx, 'SELECT * FROM repo_connections')))
      expect(stored).not.toContain(TOKEN)
      // The whole SQLite file too (PostgreSQL mode has no file: the stored row above is what it keeps).
      if (s.srv.ctx.storage.dialect === 'sqlite') expect(readFileSync(join(s.srv.dataDir, 'fixloop.db')).includes(Buffer.from(TOKEN))).toBe(false)
      await expect(s.srv.services.connections.connect(s.t.orgId, s.t.appId, { gitUrl: `https://x:${TOKEN}@github.com/acme/shop.git`, host: 'github', hostToken: TOKEN })).rejects.toThrow(/must not carry credentials/)
      await expect(s.srv.services.connections.connect(s.t.orgId, s.t.appId, { gitUrl: s.bare, host: 'github' })).rejects.toThrow(/needs an access token/)
      await expect(s.srv.services.connections.connect(s.t.orgId, s.t.appId, { gitUrl: s.bare, agent: 'command' })).rejects.toThrow(/needs --agent-command/)
    } finally {
      await teardown(s)
    }
  })
})

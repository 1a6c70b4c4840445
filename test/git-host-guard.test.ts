/**
 * The git-host address guard (src/agent/hosts.ts): an Org chooses its connection's API URL, so opening and
 * polling pull requests always refuse a link-local or cloud metadata address, and a private, loopback or
 * reserved one when the operator set FIXLOOP_GIT_HOST_ALLOW_PRIVATE=0 (on by default: a self-hosted git
 * host usually lives inside the network, and the runs of an install that had one before the guard must not
 * start failing). Real server, worker, git (a bare repository), fixture agent and the git-host stub on
 * loopback; the stub counts what reached it.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { loadConfig } from '../src/config'
import { HostError, openPullRequest, pullRequestState } from '../src/agent/hosts'
import { call, eventually, seedTenant, startTestServer, tempDir, type Tenant, type TestServer } from './harness'
import { startGitHostStub, type GitHostStub } from './git-host-stub'
import { makeBareRepo } from './git-fixtures'

const AGENTS = join(import.meta.dir, 'fixtures', 'agents')
const TOKEN = 'ghp_' + 'G7uA2rD9kQ4wE1tY6iO3pL8sZ5xC0vB2nM4j'
const PR = { title: 't', body: 'b', head: 'fixloop/x', base: 'main', draft: false }

let stub: GitHostStub
let bare: string

beforeAll(async () => {
  bare = makeBareRepo(tempDir('fixloop-guard-repo-'), { 'src/app.js': 'export const total = (xs) => xs.reduce((a, b) => a + b.price, 0)\n' }, 'main', 'shop')
  stub = await startGitHostStub({ kind: 'github', token: TOKEN, repos: [{ owner: 'acme', name: 'shop', barePath: bare }] })
})
afterAll(() => stub.stop())

describe('the git-host address guard', () => {
  test('FIXLOOP_GIT_HOST_ALLOW_PRIVATE: on unless set to 0, a boolean', () => {
    const dataDir = tempDir()
    expect(loadConfig({ dataDir }, {}).gitHostAllowPrivate).toBe(true)
    expect(loadConfig({ dataDir }, { FIXLOOP_GIT_HOST_ALLOW_PRIVATE: '0' }).gitHostAllowPrivate).toBe(false)
    expect(loadConfig({ dataDir }, { FIXLOOP_GIT_HOST_ALLOW_PRIVATE: '1' }).gitHostAllowPrivate).toBe(true)
    expect(() => loadConfig({ dataDir }, { FIXLOOP_GIT_HOST_ALLOW_PRIVATE: 'maybe' })).toThrow(/FIXLOOP_GIT_HOST_ALLOW_PRIVATE/)
  })

  test.each([
    ['loopback (the stub)', () => stub.apiUrl],
    ['a private network', () => 'http://10.0.0.7:8080/api/v4'],
    ['IPv6 loopback', () => 'http://[::1]:1/api'],
  ])('with the switch at 0, opening and polling refuse %s, naming the switch, and connect to nothing', async (_, apiUrl) => {
    const before = stub.requests.length
    for (const call of [() => openPullRequest('github', apiUrl(), TOKEN, 'acme/shop', PR, { allowPrivate: false }), () => pullRequestState('github', apiUrl(), TOKEN, 'acme/shop', 1, { allowPrivate: false })]) {
      const e = await call().catch((x: unknown) => x)
      expect(e).toBeInstanceOf(HostError)
      expect((e as Error).message).toMatch(/^refused by the git-host address guard: .* resolves to .*, a private, loopback or reserved address/)
      expect((e as Error).message).toContain('FIXLOOP_GIT_HOST_ALLOW_PRIVATE=1')
      expect((e as Error).message).not.toContain(TOKEN)
    }
    expect(stub.requests.length).toBe(before)
  })

  test.each([
    ['the cloud metadata address', 'http://169.254.169.254/latest'],
    ['another link-local address', 'http://169.254.10.1:8080/api/v4'],
    ['the metadata address in an IPv4-mapped IPv6 form', 'http://[::ffff:169.254.169.254]/latest'],
    ['IPv6 link-local', 'http://[fe80::1]:8080/api'],
    ["AWS's IPv6 metadata address", 'http://[fd00:ec2::254]/latest'],
  ])('private networks allowed or not, opening and polling refuse %s and do not offer the switch', async (_, apiUrl) => {
    for (const allowPrivate of [true, false]) {
      for (const call of [() => openPullRequest('github', apiUrl, TOKEN, 'acme/shop', PR, { allowPrivate, timeoutMs: 2_000 }), () => pullRequestState('github', apiUrl, TOKEN, 'acme/shop', 1, { allowPrivate, timeoutMs: 2_000 })]) {
        const e = await call().catch((x: unknown) => x)
        expect(e).toBeInstanceOf(HostError)
        expect((e as Error).message).toMatch(/^refused by the git-host address guard: .* resolves to .*, a link-local or cloud metadata address/)
        expect((e as Error).message).not.toContain('FIXLOOP_GIT_HOST_ALLOW_PRIVATE')
      }
    }
  })

  test('with FIXLOOP_GIT_HOST_ALLOW_PRIVATE the same host is called', async () => {
    const url = await openPullRequest('github', stub.apiUrl, TOKEN, 'acme/shop', { ...PR, head: 'main' }, { allowPrivate: true }).catch((e: Error) => e.message)
    // The stub answered (what it says about the branch is beside the point): the call reached it.
    expect(stub.requests.some((r) => r.method === 'POST' && r.path.endsWith('/repos/acme/shop/pulls'))).toBe(true)
    expect(String(url)).not.toMatch(/address guard/)
  })
})

describe('a run whose git host is on loopback, the switch off', () => {
  let srv: TestServer
  let t: Tenant
  beforeAll(async () => {
    srv = await startTestServer({ FIXLOOP_MASTER_KEY: 'd4'.repeat(32), FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000', FIXLOOP_GIT_HOST_ALLOW_PRIVATE: '0' })
    t = await seedTenant(srv.admin, { processingMode: 'auto_pr' })
    await srv.services.connections.connect(t.orgId, t.appId, {
      gitUrl: bare,
      host: 'github',
      hostApiUrl: stub.apiUrl,
      hostRepo: 'acme/shop',
      hostToken: TOKEN,
      agent: 'command',
      agentCommand: `sh ${JSON.stringify(join(AGENTS, 'fix.sh'))}`,
      timeoutSeconds: 30,
    })
  })
  afterAll(() => srv.close())

  test('fails saying the guard refused the host and how to allow it; no pull request is asked for', async () => {
    const before = stub.requests.filter((r) => r.method === 'POST').length
    const r = await call(srv.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: 'Cart total shows NaN whenever a product lacks a price tag' } })
    expect(r.status).toBe(201)
    const item = await eventually(async () => {
      const g = await call(srv.url, 'GET', `/v1/feedback/${r.body.id}`, { auth: t.key })
      return ['pr_opened', 'failed'].includes(g.body.status) ? g.body : undefined
    }, 30_000)
    await srv.runner.idle()
    expect(item.status).toBe('failed')
    const run = (await call(srv.url, 'GET', `/v1/agent-runs/${r.body.id}`, { auth: t.key })).body
    expect(run.error).toContain('refused by the git-host address guard')
    expect(run.error).toContain('FIXLOOP_GIT_HOST_ALLOW_PRIVATE=1')
    expect(stub.requests.filter((x) => x.method === 'POST').length).toBe(before)
  }, 60_000)
})

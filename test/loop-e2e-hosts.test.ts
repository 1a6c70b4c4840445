/**
 * The review loop end to end on Gitea and GitLab, against the compiled binary (test/loop-e2e.test.ts does
 * GitHub with the widget and the mail): one server, one App per host, each connected through the CLI to
 * a real local bare repository with the host's stub as its API (test/git-host-stub.ts: the hosts' paths,
 * auth headers and required fields). A report is fixed and its pull/merge request opened; the host's
 * real-shaped, signed delivery asks for changes (Gitea `pull_request_review_rejected` with
 * X-Gitea-Signature; GitLab a merge request update whose reviewer state became `requested_changes`, and a
 * `/fixloop` note, with X-Gitlab-Token); fixloop iterates on the same branch (the new commit on top of the
 * first, no second request); the merge delivery resolves the report.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { call, eventually, spawnServer, tempDir } from './harness'
import { cliJson, cliTenant, ensureBinary } from './helpers-lifecycle'
import { startGitHostStub, type GitHostStub } from './git-host-stub'
import { git, makeBareRepo, readFileAtBranch } from './git-fixtures'

const AGENTS = join(import.meta.dir, 'fixtures', 'agents')
const HOSTS = {
  gitea: { token: 'gitea_' + 'c0ffee'.repeat(6) + 'abcd', auth: (h: Record<string, string>) => h.authorization, expectAuth: (tok: string) => `token ${tok}`, createPath: '/api/v1/repos/acme/shop/pulls' },
  gitlab: { token: 'glpat-' + 'Zx9Wv8Ut7Sr6Qp5On4Ml', auth: (h: Record<string, string>) => h['private-token'], expectAuth: (tok: string) => tok, createPath: '/api/v4/projects/acme%2Fshop/merge_requests' },
} as const
type Host = keyof typeof HOSTS

let dir: string
let server: Awaited<ReturnType<typeof spawnServer>>
let t: Awaited<ReturnType<typeof cliTenant>>
const apps = {} as Record<Host, { appId: string; pub: string; stub: GitHostStub; bare: string; hook: { path: string; secret: string } }>

beforeAll(async () => {
  ensureBinary()
  dir = tempDir('fixloop-loop-hosts-')
  const dataDir = join(dir, 'data')
  t = await cliTenant(dataDir, ['--processing-mode', 'auto_pr'])
  for (const host of ['gitea', 'gitlab'] as const) {
    const app = host === 'gitea' ? { id: t.appId, publicKey: t.pub } : await cliJson(dataDir, ['app', 'create', '--org', t.orgId, '--name', 'GitLab App', '--processing-mode', 'auto_pr'])
    const bare = makeBareRepo(tempDir(`fixloop-loop-${host}-`), { 'src/app.js': 'export const total = (items) => items.reduce((a, b) => a + b.price, 0)\n' }, 'main', 'shop')
    const stub = await startGitHostStub({ kind: host, token: HOSTS[host].token, repos: [{ owner: 'acme', name: 'shop', barePath: bare }] })
    const tokenFile = join(dir, `${host}-token`)
    await Bun.write(tokenFile, HOSTS[host].token + '\n')
    const connected = await cliJson(dataDir, [
      'app', 'connect-repo', app.id, '--git-url', bare, '--host', host, '--host-api-url', stub.apiUrl, '--host-repo', 'acme/shop',
      '--host-token-file', tokenFile, '--agent', 'command', '--agent-command', `sh ${join(AGENTS, 'review.sh')}`, '--timeout-seconds', '30',
    ])
    // The host's webhook settings: fixloop's route for the App and the secret connect-repo printed once.
    apps[host] = { appId: app.id, pub: app.publicKey, stub, bare, hook: { path: connected.webhookPath, secret: connected.webhookSecret } }
  }
  server = await spawnServer(dataDir, { FIXLOOP_AGENT_SANDBOX_PATHS: AGENTS, FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000', FIXLOOP_PR_POLL_MINUTES: '0' })
  for (const host of ['gitea', 'gitlab'] as const) {
    const a = apps[host]
    a.stub.setWebhook(`${server.url}${a.hook.path}`, a.hook.secret)
  }
}, 60_000)

afterAll(async () => {
  await server?.stop()
  for (const a of Object.values(apps)) {
    await a.stub.stop()
    rmSync(dirname(a.bare), { recursive: true, force: true })
  }
  if (dir) rmSync(dir, { recursive: true, force: true })
})

const item = async (id: string) => (await call(server.url, 'GET', `/v1/feedback/${id}`, { auth: t.key })).body
const runs = async (id: string) => (await call(server.url, 'GET', `/v1/feedback/${id}/agent-runs`, { auth: t.key })).body.data as any[]
/** `n` runs of the report, none running, and the report back on its open request. */
const settled = (id: string, n: number) =>
  eventually(async () => {
    const all = await runs(id)
    return all.length === n && all[0].status !== 'running' && (await item(id)).status === 'pr_opened' ? all : undefined
  }, 45_000)

describe('report → pull/merge request → changes requested → iteration on the same branch → merged → resolved', () => {
  for (const host of ['gitea', 'gitlab'] as const) {
    test(host, async () => {
      const { stub, bare, pub } = apps[host]
      const headOf = (branch: string) => git([`--git-dir=${bare}`, 'rev-parse', `refs/heads/${branch}`]).trim()
      const sent = await call(server.url, 'POST', '/v1/feedback', { auth: pub, body: { text: `Cart total is NaN on ${host} when an item has no price`, url: 'https://shop.example/cart' } })
      expect(sent.status).toBe(201)
      const id = sent.body.id as string
      const branch = `fixloop/${id}`

      // 1. The request is opened through the host's real API shape, with the host's auth header.
      await settled(id, 1)
      expect(stub.created).toHaveLength(1)
      expect(stub.created[0]).toMatchObject({ kind: host, repo: 'acme/shop', head: branch, base: 'main' })
      const create = stub.requests.find((r) => r.method === 'POST' && r.status === 201)!
      expect(create.path).toBe(HOSTS[host].createPath)
      expect(HOSTS[host].auth(create.headers)).toBe(HOSTS[host].expectAuth(HOSTS[host].token))
      const prUrl = (await item(id)).mergeRequestUrl
      expect(prUrl).toBe(stub.created[0]!.url)
      const number = stub.created[0]!.number
      const firstFix = headOf(branch)

      // 2. A reviewer requests changes: fixloop iterates on the same branch, the review in the agent's task.
      const review = await stub.deliver('changes_requested', number, { text: 'Please also handle an empty cart.' })
      expect(review).toMatchObject({ status: 200, body: { received: true, outcome: 'review_queued', position: 1 } })
      const iterated = await settled(id, 2)
      expect(iterated.map((r) => [r.trigger, r.status])).toEqual([['review', 'succeeded'], ['report', 'succeeded']])
      const second = headOf(branch)
      expect(git([`--git-dir=${bare}`, 'rev-parse', `${second}^`]).trim()).toBe(firstFix)
      const task = readFileAtBranch(bare, branch, 'task-copy.md')!
      expect(task).toContain('## Review of the pull request')
      expect(task).toContain(host === 'gitea' ? 'Please also handle an empty cart.' : 'requested changes')

      // 3. A comment addressed to fixloop iterates again (GitLab: a note on the merge request).
      const comment = await stub.deliver('comment', number, { text: '/fixloop and show 0.00 for a missing price' })
      expect(comment.body).toMatchObject({ outcome: 'review_queued' })
      await settled(id, 3)
      expect(git([`--git-dir=${bare}`, 'rev-parse', `${headOf(branch)}^`]).trim()).toBe(second)
      expect(readFileAtBranch(bare, branch, 'task-copy.md')).toContain('show 0.00 for a missing price')
      expect(stub.created).toHaveLength(1) // still the one request

      // A forged delivery changes nothing.
      expect((await stub.deliver('merged', number, { secret: 'forged' })).status).toBe(401)
      expect((await item(id)).status).toBe('pr_opened')

      // 4. The merge resolves the report.
      const merged = await stub.deliver('merged', number)
      expect(merged.body).toMatchObject({ received: true, outcome: 'moved' })
      expect((await item(id)).status).toBe('resolved')
      const feed = await call(server.url, 'GET', `/v1/events?after=0&limit=100&types=feedback.resolved`, { auth: t.key })
      expect(feed.body.data.filter((e: any) => e.data.feedbackId === id).map((e: any) => e.data.prUrl)).toEqual([prUrl])
      // The host's token travelled only in its auth header.
      for (const r of stub.requests) expect(JSON.stringify(r.body ?? '')).not.toContain(HOSTS[host].token)
    }, 120_000)
  }
})

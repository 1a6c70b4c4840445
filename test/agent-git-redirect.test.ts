/**
 * The host token over git's HTTP transport (attack-agent session): git follows a redirect of its first
 * request to another host and asks the credential helper again, for that host. fixloop's helper answered
 * whatever host asked, so a git remote (a self-hosted Gitea, a mirror, an expired domain) redirecting to
 * a server of someone else's handed them the token. Real git, `git http-backend` behind a Basic-auth
 * check as the git host, and a second server that only records what it is sent.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { call, seedTenant, startTestServer, tempDir, type Tenant, type TestServer } from './harness'
import { runEnd } from './agent-run-end'
import { branchExists, makeBareRepo } from './git-fixtures'
import type { ConnectionInput } from '../src/modules/connections/service'

const TOKEN = 'ghp_' + 'R8nZ3xW9kL4vB8nR1tY6uI3oP5aS0dF2gH9k'
const BASIC = 'Basic ' + Buffer.from(`fixloop:${TOKEN}`).toString('base64')

/** A smart-HTTP git host: `git http-backend` over the bare repositories in `root`, Basic auth required. */
function gitHttpHost(root: string) {
  return Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(req) {
      const url = new URL(req.url)
      // The repository moved (a rename): same host, so the token may follow.
      if (url.pathname.startsWith('/old/')) return new Response(null, { status: 301, headers: { location: url.pathname.replace('/old/', '/acme/') + url.search } })
      if (req.headers.get('authorization') !== BASIC) return new Response('auth', { status: 401, headers: { 'www-authenticate': 'Basic realm="git"' } })
      const proc = Bun.spawn(['git', 'http-backend'], {
        env: {
          PATH: process.env.PATH!,
          GIT_PROJECT_ROOT: root,
          GIT_HTTP_EXPORT_ALL: '1',
          REMOTE_USER: 'fixloop',
          REQUEST_METHOD: req.method,
          PATH_INFO: url.pathname,
          QUERY_STRING: url.search.slice(1),
          CONTENT_TYPE: req.headers.get('content-type') ?? '',
          HTTP_CONTENT_ENCODING: req.headers.get('content-encoding') ?? '',
          GIT_CONFIG_NOSYSTEM: '1',
          GIT_CONFIG_GLOBAL: '/dev/null',
        },
        stdin: req.body ? new Uint8Array(await req.arrayBuffer()) : 'ignore',
        stdout: 'pipe',
      })
      const out = Buffer.from(await new Response(proc.stdout).arrayBuffer())
      await proc.exited
      const split = out.indexOf('\r\n\r\n')
      const headers = new Headers()
      let status = 200
      for (const line of out.subarray(0, split).toString().split('\r\n')) {
        const [k, ...v] = line.split(':')
        if (k.toLowerCase() === 'status') status = Number(v.join(':').trim().split(' ')[0])
        else headers.set(k, v.join(':').trim())
      }
      return new Response(out.subarray(split + 4), { status, headers })
    },
  })
}

let srv: TestServer
let t: Tenant
let bare: string
let host: ReturnType<typeof gitHttpHost>
let elsewhere: ReturnType<typeof Bun.serve>
const seen: { path: string; authorization: string | null }[] = []

beforeAll(async () => {
  const dir = tempDir('fixloop-repo-')
  bare = makeBareRepo(join(dir, 'acme'), { 'src/app.js': 'export const x = 1\n' }, 'main', 'shop')
  host = gitHttpHost(dir)
  // Another host (another port): answers 401 the way a git host would, to be sent credentials.
  elsewhere = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch(req) {
      seen.push({ path: new URL(req.url).pathname, authorization: req.headers.get('authorization') })
      return new Response('auth', { status: 401, headers: { 'www-authenticate': 'Basic realm="git"' } })
    },
  })
  srv = await startTestServer({ FIXLOOP_MASTER_KEY: 'a1'.repeat(32), FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000' })
  t = await seedTenant(srv.admin, { processingMode: 'auto_pr' })
})

afterAll(async () => {
  await srv.close()
  host.stop(true)
  elsewhere.stop(true)
  rmSync(dirname(dirname(bare)), { recursive: true, force: true })
})

async function runAt(gitUrl: string, text: string) {
  await srv.services.connections.connect(t.orgId, t.appId, { gitUrl, host: 'gitea', hostToken: TOKEN, prMode: 'branch', agent: 'command', agentCommand: `echo 'export const y = 2' >> src/app.js`, timeoutSeconds: 30 } as ConnectionInput)
  const r = await call(srv.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text } })
  expect(r.status).toBe(201)
  return (await runEnd(srv, t.key, r.body.id)).run
}

describe('the host token goes to the git host only', () => {
  test('over HTTP it clones and pushes with the token, also after a redirect on the same host', async () => {
    const run = await runAt(`http://127.0.0.1:${host.port}/old/shop.git`, 'The cart total is wrong after removing an item')
    expect(run.error).toBeNull()
    expect(run.status).toBe('succeeded')
    expect(branchExists(bare, run.branch)).toBe(true)
  })

  test('a redirect to another host gets no token: the clone fails there', async () => {
    // The "git host" here redirects every request elsewhere (a hostile or compromised remote, an expired domain).
    const redirecting = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: (req) => new Response(null, { status: 302, headers: { location: `http://127.0.0.1:${elsewhere.port}${new URL(req.url).pathname}${new URL(req.url).search}` } }) })
    try {
      const run = await runAt(`http://127.0.0.1:${redirecting.port}/acme/shop.git`, 'The wishlist page never finishes loading at all')
      expect(run.status).toBe('failed')
      expect(seen.length).toBeGreaterThan(0)
      for (const s of seen) expect(s.authorization).toBeNull()
      expect(JSON.stringify(run)).not.toContain(TOKEN)
    } finally {
      redirecting.stop(true)
    }
  })
})

/**
 * Every outbound call that reads a remote answer goes through one bounded client (src/core/outbound-http.ts),
 * attacked here by hostile hosts on loopback (the attack that found these, docs/security.md "Outbound calls"):
 *
 * - a host streaming 256 MiB (128 × the 2 MiB bound) to a tracker call (GitHub, GitLab, Gitea, Jira,
 *   Linear), a git-host pull request call (open, state) and Slack: each call ends with a clear "more than
 *   2097152 bytes" error and the process's RSS stays bounded; a host streaming without end does not hang;
 * - DNS rebinding: the tracker calls connect to exactly the addresses the guard checked, whatever the
 *   host name resolves to later (the service hands the guard's addresses to every call);
 * - a tracker that trickles its answer past its deadline (FIXLOOP_OUTBOUND_TIMEOUT, short here): PUT
 *   /v1/apps/:id/tracker is the connect path's 400 (never a 500), and a push job's failure shows in the
 *   connection's health;
 * - a redirect is never followed by a call that carries a credential (GitLab's PRIVATE-TOKEN included);
 * - only http(s) URLs from a tracker's or git host's answer are kept (javascript: is refused), and the
 *   dashboard's link helper never yields a non-http(s) href.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { resolveHost } from '../src/core/address-guard'
import { remoteHttpUrl } from '../src/core/outbound'
import { ANSWER_MAX_BYTES } from '../src/core/outbound-http'
import { HostError, openPullRequest, pullRequestState } from '../src/agent/hosts'
import { SlackApi, SlackError } from '../src/modules/chatops/slack-api'
import { TrackerError, type TrackerKind, type TrackerTarget } from '../src/trackers/adapter'
import { adapterFor } from '../src/trackers/registry'
// @ts-expect-error the dashboard's browser module has no types
import { webHref } from '../src/admin-ui/app/ui.js'
import { call, eventually, seedTenant, startTestServer, type TestServer } from './harness'

const TOKEN = 'tok_OUTBOUND_secret_0123456789'
/** The hostile git hosts here are on loopback: allowed, as FIXLOOP_GIT_HOST_ALLOW_PRIVATE (on by default) allows them. */
const LOOPBACK = { allowPrivate: true }
const MiB = 1024 * 1024
/** What a hostile host streams: far more than the bound, and finite so a regression cannot eat the machine. */
const STREAMED = 256 * MiB
const CHUNK = new Uint8Array(64 * 1024).fill(0x61)

/** A body of `total` bytes (Infinity: without end), produced as it is read (the host's own memory stays flat). */
function stream(total: number): ReadableStream<Uint8Array> {
  let sent = 0
  return new ReadableStream({
    pull(c) {
      if (sent >= total) return c.close()
      sent += CHUNK.byteLength
      c.enqueue(CHUNK)
    },
  })
}

/** The highest RSS seen while `run` runs, above the RSS before it (sampled every 10 ms). */
async function rssGrowth(run: () => Promise<unknown>): Promise<{ growth: number; outcome: unknown }> {
  Bun.gc(true)
  const before = process.memoryUsage().rss
  let peak = before
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 10)
  const outcome = await run().catch((e: unknown) => e)
  clearInterval(sampler)
  peak = Math.max(peak, process.memoryUsage().rss)
  return { growth: peak - before, outcome }
}

describe('a huge answer is never buffered whole', () => {
  let host: ReturnType<typeof Bun.serve>
  let base = ''
  beforeAll(() => {
    host = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      idleTimeout: 0,
      fetch: (req) => new Response(stream(new URL(req.url).pathname.startsWith('/endless') ? Infinity : STREAMED), { headers: { 'content-type': 'application/json' } }),
    })
    base = `http://127.0.0.1:${host.port}`
  })
  afterAll(() => host.stop(true))

  const target = (kind: TrackerKind, apiUrl = base): TrackerTarget => ({ kind, apiUrl, project: kind === 'jira' ? 'PROJ' : kind === 'linear' ? 'team-1' : 'acme/shop', token: TOKEN, ...(kind === 'jira' ? { account: 'bot@example.com' } : {}) })
  const calls: [string, (apiUrl: string) => Promise<unknown>, (e: unknown) => boolean][] = [
    ['GitHub issue read', (u) => adapterFor('github')!.readIssue(target('github', u), '1'), (e) => e instanceof TrackerError],
    ['GitLab issue create', (u) => adapterFor('gitlab')!.createIssue(target('gitlab', u), { title: 't', body: 'b', labels: [] }), (e) => e instanceof TrackerError],
    ['Gitea token check', (u) => adapterFor('gitea')!.whoAmI(target('gitea', u)), (e) => e instanceof TrackerError],
    ['Jira issue read', (u) => adapterFor('jira')!.readIssue(target('jira', u), 'PROJ-1'), (e) => e instanceof TrackerError],
    ['Linear token check', (u) => adapterFor('linear')!.whoAmI(target('linear', u)), (e) => e instanceof TrackerError],
    ['git host: opening a merge request', (u) => openPullRequest('gitlab', u, TOKEN, 'acme/shop', { title: 't', body: 'b', head: 'h', base: 'main', draft: false }, LOOPBACK), (e) => e instanceof HostError],
    ['git host: polling a pull request', (u) => pullRequestState('github', u, TOKEN, 'acme/shop', 7, LOOPBACK), (e) => e instanceof HostError],
    ['Slack chat.postMessage', (u) => new SlackApi(u).post(TOKEN, 'C1', 'hi'), (e) => e instanceof SlackError],
  ]
  for (const [name, run, isOwnError] of calls) {
    test(`${name}: a 256 MiB answer ends the call with a clear error, the RSS stays bounded`, async () => {
      const { growth, outcome } = await rssGrowth(() => run(base))
      // Buffered whole, the answer alone is 256 MiB (and its text more).
      expect(growth).toBeLessThan(64 * MiB)
      expect(isOwnError(outcome)).toBe(true)
      const message = (outcome as Error).message
      expect(message).toMatch(/more than the 2097152 bytes|response_too_large/)
      expect(message).not.toContain(TOKEN)
    }, 30_000)
  }
  test('a host that streams without end: the call ends (too large), it does not hang', async () => {
    const e = (await adapterFor('github')!.whoAmI(target('github', `${base}/endless`)).catch((x: unknown) => x)) as TrackerError
    expect(e).toBeInstanceOf(TrackerError)
    expect(e.failure).toBe('rejected')
    expect(e.message).toContain(`more than the ${ANSWER_MAX_BYTES} bytes`)
  }, 30_000)
})

describe('DNS rebinding: a call connects to exactly the addresses the guard checked', () => {
  // Two hosts on one port: 127.0.0.2 stands for the address the guard checked, 127.0.0.1 for what
  // "localhost" resolves to when the call resolves it again (the rebinding answer).
  let checked: ReturnType<typeof Bun.serve>
  let rebound: ReturnType<typeof Bun.serve>
  const seen: { who: string; host: string | null }[] = []
  const answer = (who: string) => (req: Request) => {
    seen.push({ who, host: req.headers.get('host') })
    return Response.json({ login: who, username: who, name: who, accountId: who, displayName: who, data: { viewer: { id: who, name: who } } })
  }
  beforeAll(() => {
    for (let i = 0; ; i++) {
      checked = Bun.serve({ hostname: '127.0.0.2', port: 0, fetch: answer('checked') })
      try {
        rebound = Bun.serve({ hostname: '127.0.0.1', port: checked.port, fetch: answer('rebound') })
        return
      } catch (e) {
        checked.stop(true)
        if (i > 20) throw e
      }
    }
  })
  afterAll(() => {
    checked.stop(true)
    rebound.stop(true)
  })

  for (const kind of ['github', 'gitlab', 'gitea', 'jira', 'linear'] as const) {
    test(`${kind}: the call reaches the checked address, with the host name in Host`, async () => {
      seen.length = 0
      const t: TrackerTarget = { kind, apiUrl: `http://localhost:${checked.port}`, project: 'x', token: TOKEN, account: 'bot@example.com', addresses: [{ address: '127.0.0.2', family: 4 }] }
      const who = await adapterFor(kind)!.whoAmI(t)
      expect(who.actor).toBe('checked')
      expect(seen).toEqual([{ who: 'checked', host: `localhost:${checked.port}` }])
    })
  }

  test("the trackers service gives every call the guard's addresses", async () => {
    const server = await startTestServer({ FIXLOOP_TRACKER_ALLOW_PRIVATE: '1' })
    try {
      const row = { kind: 'github', api_url: `http://localhost:${checked.port}`, project: 'acme/shop', account: null, token_sealed: server.ctx.box.seal(Buffer.from(TOKEN)) }
      const t = await server.services.trackers.targetOf(row as never)
      expect(t.addresses).toEqual(await resolveHost('localhost'))
    } finally {
      await server.close()
    }
  })
})

describe('a tracker answering past its deadline', () => {
  let server: TestServer
  /** The trackers' deadline here (FIXLOOP_OUTBOUND_TIMEOUT; 15 s by default): short, as it is waited out. */
  const DEADLINE_S = 3
  /** Two trackers, so the two deadlines below are waited out at the same time, not one after the other. */
  let slowUser: ReturnType<typeof Bun.serve>
  let slowIssues: ReturnType<typeof Bun.serve>
  const stalled = () => {
    // Headers and the start of a body at once, then nothing: the deadline fires while the body is read.
    let first = true
    return new Response(
      new ReadableStream({
        async pull(c) {
          if (first) {
            first = false
            c.enqueue(new TextEncoder().encode('{"login":'))
            return
          }
          await Bun.sleep(60_000)
        },
      }),
      { headers: { 'content-type': 'application/json' } },
    )
  }
  /** A GitHub-like tracker; `stallUser`: the connect's GET /user trickles; otherwise POST …/issues does. */
  const tracker = (stallUser: boolean) =>
    Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      idleTimeout: 0,
      fetch(req) {
        const path = new URL(req.url).pathname
        if (req.headers.get('authorization') !== `Bearer ${TOKEN}`) return Response.json({ message: 'Bad credentials' }, { status: 401 })
        if (path === '/user') return stallUser ? stalled() : Response.json({ login: 'bot', name: 'Bot' })
        if (path === '/repos/acme/shop/issues' && req.method === 'POST') return stallUser ? Response.json({ message: 'no' }, { status: 422 }) : stalled()
        return Response.json({ message: 'Not Found' }, { status: 404 })
      },
    })
  beforeAll(async () => {
    slowUser = tracker(true)
    slowIssues = tracker(false)
    server = await startTestServer({ FIXLOOP_TRACKER_ALLOW_PRIVATE: '1', FIXLOOP_TRACKER_POLL_MINUTES: '0', FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000', FIXLOOP_OUTBOUND_TIMEOUT: String(DEADLINE_S) })
  })
  afterAll(async () => {
    await server?.close()
    slowUser?.stop(true)
    slowIssues?.stop(true)
  })

  test('connect: the timeout in the body is the 400 an unreachable tracker gets; then a push job failing the same way shows in health', async () => {
    const connectBody = (t: ReturnType<typeof Bun.serve>) => ({ kind: 'github', apiUrl: `http://127.0.0.1:${t.port}`, project: 'acme/shop', token: TOKEN })
    const a = await seedTenant(server.admin, {}, 'Slow tracker')
    const b = await seedTenant(server.admin, {}, 'Slow issues')
    const connectTimesOut = async () => {
      const r = await call(server.url, 'PUT', `/v1/apps/${a.appId}/tracker`, { auth: a.key, body: connectBody(slowUser) })
      expect(r.status).toBe(400)
      expect(r.body.error.code).toBe('invalid_argument')
      expect(r.body.error.message).toContain('unreachable')
      expect(r.body.error.message).toContain(`no complete answer within ${DEADLINE_S * 1000} ms`)
      expect(r.text).not.toContain(TOKEN)
      // The refused connect left nothing behind: the same App connects to a tracker that answers.
      expect((await call(server.url, 'PUT', `/v1/apps/${a.appId}/tracker`, { auth: a.key, body: connectBody(slowIssues) })).status).toBe(200)
    }
    const pushTimesOut = async () => {
      expect((await call(server.url, 'PUT', `/v1/apps/${b.appId}/tracker`, { auth: b.key, body: connectBody(slowIssues) })).status).toBe(200)
      const f = await call(server.url, 'POST', '/v1/feedback', { auth: b.pub, body: { text: 'The export button does nothing on the invoices page', severity: 'high' } })
      expect(f.status).toBe(201)
      await eventually(async () => (await call(server.url, 'GET', `/v1/feedback/${f.body.id}`, { auth: b.key })).body.status === 'awaiting_manual', 15_000)
      expect((await call(server.url, 'POST', `/v1/feedback/${f.body.id}/tracker-issue`, { auth: b.key })).status).toBe(202)
      const health = await eventually(async () => {
        const v = (await call(server.url, 'GET', `/v1/apps/${b.appId}/tracker`, { auth: b.key })).body.tracker.health
        return v.state === 'failing' ? v : undefined
      }, 30_000)
      expect(health.lastError).toContain('unreachable when creating the issue')
      expect(health.lastError).toContain(`no complete answer within ${DEADLINE_S * 1000} ms`)
      expect(health.retryAt).not.toBeNull()
      expect((await call(server.url, 'GET', `/v1/feedback/${f.body.id}`, { auth: b.key })).body.trackerIssue.syncState).toBe('failing')
    }
    await Promise.all([connectTimesOut(), pushTimesOut()])
  }, 60_000)
})

describe('a redirect never carries a credential', () => {
  let thief: ReturnType<typeof Bun.serve>
  let redirector: ReturnType<typeof Bun.serve>
  const stolen: string[] = []
  beforeAll(() => {
    thief = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      fetch(req) {
        stolen.push([...req.headers].map(([k, v]) => `${k}: ${v}`).join('\n'))
        return Response.json({ login: 'x', html_url: 'https://h.example/p/1', web_url: 'https://h.example/p/1', number: 1, iid: 1, state: 'open', ok: true, ts: '1' })
      },
    })
    redirector = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: (req) => Response.redirect(`http://127.0.0.1:${thief.port}${new URL(req.url).pathname}`, 307) })
  })
  afterAll(() => {
    thief.stop(true)
    redirector.stop(true)
  })
  const at = () => `http://127.0.0.1:${redirector.port}`
  const cases: [string, () => Promise<unknown>][] = [
    ['GitLab: opening a merge request (PRIVATE-TOKEN)', () => openPullRequest('gitlab', at(), TOKEN, 'acme/shop', { title: 't', body: 'b', head: 'h', base: 'main', draft: false }, LOOPBACK)],
    ['GitHub: opening a pull request', () => openPullRequest('github', at(), TOKEN, 'acme/shop', { title: 't', body: 'b', head: 'h', base: 'main', draft: false }, LOOPBACK)],
    ['GitLab: polling a merge request', () => pullRequestState('gitlab', at(), TOKEN, 'acme/shop', 1, LOOPBACK)],
    ['GitLab tracker', () => adapterFor('gitlab')!.whoAmI({ kind: 'gitlab', apiUrl: at(), project: 'a/b', token: TOKEN })],
    ['Jira tracker', () => adapterFor('jira')!.whoAmI({ kind: 'jira', apiUrl: at(), project: 'P', token: TOKEN, account: 'a@example.com' })],
    ['Slack', () => new SlackApi(at()).post(TOKEN, 'C1', 'hi')],
  ]
  for (const [name, run] of cases) {
    test(name, async () => {
      stolen.length = 0
      const e = await run().catch((x: unknown) => x)
      expect(e).toBeInstanceOf(Error)
      expect(stolen).toEqual([])
    })
  }
})

describe('only http(s) URLs from a remote answer', () => {
  test('remoteHttpUrl: http(s) kept, every other scheme and credentials refused', () => {
    expect(remoteHttpUrl('https://github.com/acme/shop/issues/7')).toBe('https://github.com/acme/shop/issues/7')
    expect(remoteHttpUrl('http://gitea.local:3000/a/b/issues/1')).toBe('http://gitea.local:3000/a/b/issues/1')
    for (const bad of ['javascript:alert(document.cookie)', ' javascript:alert(1)', 'java\tscript:alert(1)', 'JAVASCRIPT:alert(1)', 'data:text/html,<script>alert(1)</script>', 'vbscript:x', '//evil.example/x', '/relative', 'https://user:pw@h.example/', '', 42, null, `https://h.example/${'a'.repeat(3000)}`]) {
      expect(remoteHttpUrl(bad)).toBeNull()
    }
  })

  let host: ReturnType<typeof Bun.serve>
  beforeAll(() => {
    host = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      fetch: () =>
        Response.json({ number: 7, iid: 7, state: 'open', html_url: 'javascript:alert(document.cookie)', web_url: 'javascript:alert(document.cookie)', data: { issueCreate: { success: true, issue: { id: 'i1', identifier: 'ENG-1', url: 'javascript:alert(1)', state: { name: 'Todo', type: 'unstarted' } } } } }),
    })
  })
  afterAll(() => host.stop(true))
  const draft = { title: 't', body: 'b', labels: [] }
  for (const kind of ['github', 'gitlab', 'gitea', 'linear'] as const) {
    test(`${kind}: an issue whose URL is javascript: is refused as a malformed answer`, async () => {
      const t: TrackerTarget = { kind, apiUrl: `http://127.0.0.1:${host.port}`, project: kind === 'linear' ? 'team-1' : 'acme/shop', token: TOKEN }
      const e = (await adapterFor(kind)!.createIssue(t, draft).catch((x: unknown) => x)) as TrackerError
      expect(e).toBeInstanceOf(TrackerError)
      expect(e.failure).toBe('rejected')
      expect(e.message).toMatch(/html_url|web_url|without the issue/)
    })
  }
  test('git host: a pull request whose html_url is javascript: is not opened as a link', async () => {
    const e = await openPullRequest('github', `http://127.0.0.1:${host.port}`, TOKEN, 'acme/shop', { title: 't', body: 'b', head: 'h', base: 'main', draft: false }, LOOPBACK).catch((x: unknown) => x)
    expect(e).toBeInstanceOf(HostError)
    expect((e as Error).message).toContain('http(s) html_url')
  })
  test("the dashboard's link helper yields only http(s) hrefs", () => {
    expect(webHref('https://github.com/acme/shop/pull/3')).toBe('https://github.com/acme/shop/pull/3')
    for (const bad of ['javascript:alert(1)', ' javascript:alert(1)', 'data:text/html,x', '/admin', null, undefined, 7]) expect(webHref(bad)).toBeUndefined()
  })
})

/**
 * FIXLOOP_OUTBOUND_TIMEOUT (src/core/outbound-deadline.ts): the deadline of each call to an issue tracker's or
 * a git host's API. The default leaves every deadline where it was (15 s; Jira Cloud and Linear 20 s;
 * opening a pull request 30 s); a value that is not a whole number of seconds from 1 to 20 stops `serve`
 * (exit 2, one line naming the setting and the range); a value given is what a held call waits, in the
 * compiled server and in each kind of call, and what its error says.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { loadConfig } from '../src/config'
import { OUTBOUND_TIMEOUT_MS_DEFAULT, openRequestDeadlineMs, saasTrackerDeadlineMs } from '../src/core/outbound-deadline'
import { HostError, openPullRequest, pullRequestState } from '../src/agent/hosts'
import { TrackerError, type TrackerTarget } from '../src/trackers/adapter'
import { adapterFor } from '../src/trackers/registry'
import { call, spawnServer, tempDir } from './harness'
import { cliTenant, ensureBinary } from './helpers-lifecycle'
import { serveExpectingExit } from './ops-helpers'

const TOKEN = 'tok_DEADLINE_secret_0123456789'

describe('the setting', () => {
  test('defaults to 15 s, the deadlines derived from it where they were; takes a whole number of seconds from 1 to 20', () => {
    const dataDir = tempDir()
    expect(loadConfig({ dataDir }, {}).outboundTimeoutMs).toBe(15_000)
    expect(OUTBOUND_TIMEOUT_MS_DEFAULT).toBe(15_000)
    expect([saasTrackerDeadlineMs(15_000), openRequestDeadlineMs(15_000)]).toEqual([20_000, 30_000])
    expect(loadConfig({ dataDir }, { FIXLOOP_OUTBOUND_TIMEOUT: '1' }).outboundTimeoutMs).toBe(1_000)
    expect(loadConfig({ dataDir }, { FIXLOOP_OUTBOUND_TIMEOUT: '20' }).outboundTimeoutMs).toBe(20_000)
    for (const bad of ['0', '21', '300', '2.5', '-3', 'ten']) {
      expect(() => loadConfig({ dataDir }, { FIXLOOP_OUTBOUND_TIMEOUT: bad })).toThrow(`FIXLOOP_OUTBOUND_TIMEOUT: must be a whole number of seconds from 1 to 20, got "${bad}"`)
    }
  })

  test.each([['0'], ['21'], ['2.5'], ['ten']])('serve refuses FIXLOOP_OUTBOUND_TIMEOUT=%s: exit 2, one line naming the setting and the range', async (value) => {
    ensureBinary()
    const r = await serveExpectingExit(tempDir(), [], { FIXLOOP_OUTBOUND_TIMEOUT: value })
    expect(r.code).toBe(2)
    const lines = r.stderr.split('\n').filter((l) => l.includes('FIXLOOP_OUTBOUND_TIMEOUT'))
    expect(lines.length).toBe(1)
    expect(lines[0]).toContain(`FIXLOOP_OUTBOUND_TIMEOUT: must be a whole number of seconds from 1 to 20, got "${value}"`)
    expect(r.stderr).not.toContain('unknown setting')
  })
})

/** A host that takes every request and never answers it (until the file ends). */
function holdingHost() {
  const held: Array<() => void> = []
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    idleTimeout: 0,
    fetch: () => new Promise<Response>((resolve) => held.push(() => resolve(Response.json({ message: 'late' }, { status: 500 })))),
  })
  return {
    url: `http://127.0.0.1:${server.port}`,
    stop() {
      for (const release of held) release()
      server.stop(true)
    },
  }
}

/** How long `run` took to fail, and its error. */
async function timedFailure(run: () => Promise<unknown>): Promise<{ ms: number; error: Error }> {
  const t0 = performance.now()
  const error = (await run().then(
    () => new Error('the call answered'),
    (e: unknown) => e as Error,
  )) as Error
  return { ms: performance.now() - t0, error }
}

describe('a call held by its host ends at the configured deadline, not at 15 s', () => {
  let host: ReturnType<typeof holdingHost>
  beforeAll(() => {
    host = holdingHost()
  })
  afterAll(() => host.stop())

  test('the compiled server: a tracker connect to a host that never answers is the 400 after 2 s (FIXLOOP_OUTBOUND_TIMEOUT=2)', async () => {
    ensureBinary()
    const dataDir = tempDir()
    const t = await cliTenant(dataDir)
    const server = await spawnServer(dataDir, { FIXLOOP_OUTBOUND_TIMEOUT: '2', FIXLOOP_TRACKER_ALLOW_PRIVATE: '1' })
    try {
      const t0 = performance.now()
      const r = await call(server.url, 'PUT', `/v1/apps/${t.appId}/tracker`, { auth: t.key, body: { kind: 'github', apiUrl: host.url, project: 'acme/shop', token: TOKEN } })
      const ms = performance.now() - t0
      expect(r.status).toBe(400)
      expect(r.body.error.code).toBe('invalid_argument')
      expect(r.body.error.message).toContain('unreachable')
      expect(r.body.error.message).toContain('no complete answer within 2000 ms')
      expect(r.text).not.toContain(TOKEN)
      // At 2 s, not at the default's 15 (the margin is the server's own work: the address check, the request).
      expect(ms).toBeGreaterThanOrEqual(1_900)
      expect(ms).toBeLessThan(10_000)
      // Nothing was connected.
      expect((await call(server.url, 'GET', `/v1/apps/${t.appId}/tracker`, { auth: t.key })).body).toEqual({ tracker: null })
    } finally {
      await server.stop()
    }
  }, 30_000)

  test('every kind of call: REST trackers and pull request reads the deadline, Jira and Linear a third more, opening a pull request twice it', async () => {
    const deadline = 1_500
    const target = (kind: TrackerTarget['kind']): TrackerTarget => ({ kind, apiUrl: host.url, project: kind === 'jira' ? 'PROJ' : kind === 'linear' ? 'team-1' : 'acme/shop', token: TOKEN, account: 'bot@example.com', timeoutMs: deadline })
    const pr = { title: 't', body: 'b', head: 'h', base: 'main', draft: false }
    const calls: [string, () => Promise<unknown>, number, (e: unknown) => boolean][] = [
      ['GitHub issue read', () => adapterFor('github')!.readIssue(target('github'), '1'), deadline, (e) => e instanceof TrackerError],
      ['GitLab token check', () => adapterFor('gitlab')!.whoAmI(target('gitlab')), deadline, (e) => e instanceof TrackerError],
      ['Gitea issue update', () => adapterFor('gitea')!.updateIssue(target('gitea'), '1', { title: 't', body: 'b' }), deadline, (e) => e instanceof TrackerError],
      ['Jira issue read', () => adapterFor('jira')!.readIssue(target('jira'), 'PROJ-1'), 2_000, (e) => e instanceof TrackerError],
      ['Linear token check', () => adapterFor('linear')!.whoAmI(target('linear')), 2_000, (e) => e instanceof TrackerError],
      ['git host: reading a pull request', () => pullRequestState('github', host.url, TOKEN, 'acme/shop', 7, { allowPrivate: true, timeoutMs: deadline }), deadline, (e) => e instanceof HostError],
      ['git host: opening a merge request', () => openPullRequest('gitlab', host.url, TOKEN, 'acme/shop', pr, { allowPrivate: true, timeoutMs: deadline }), 3_000, (e) => e instanceof HostError],
    ]
    // At once: the test waits the longest deadline (3 s), not their sum.
    const outcomes = await Promise.all(calls.map(([, run]) => timedFailure(run)))
    for (const [i, [name, , expected, isOwnError]] of calls.entries()) {
      const { ms, error } = outcomes[i]
      expect({ name, own: isOwnError(error), said: error.message.includes(`no complete answer within ${expected} ms`) }).toEqual({ name, own: true, said: true })
      expect(error.message).not.toContain(TOKEN)
      // Waited out, and not the default's 15-30 s (which deadline it was, the message says).
      expect({ name, ms: ms >= expected - 50 && ms < expected + 5_000 }).toEqual({ name, ms: true })
    }
  }, 30_000)
})

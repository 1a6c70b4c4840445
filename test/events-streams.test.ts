/**
 * Many event streams at once (issue 28 item 5): caught-up streams share one read per batch (no query of
 * their own however many events arrive in a tick), every stream gets every event exactly once and in
 * order while events flow (streams behind, caught up, filtered, joining mid-flow), and a credential that
 * opens more than FIXLOOP_SSE_STREAMS_PER_KEY streams gets 429 rate_limited with Retry-After.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { storeOf } from './dialects'
import { Database } from 'bun:sqlite'
import { join } from 'node:path'
import { call, eventually, seedTenant, startTestServer, tempDir, type Tenant, type TestServer } from './harness'
import { appendEvents, appendEventsIn, SseClient } from './events-helpers'
import { applyMigrations } from '../src/db/sqlite/migrate'
import { EventHub } from '../src/modules/events/hub'
import { type EventsRepo } from '../src/modules/events/repo'
import { sqliteStorage } from '../src/db/sqlite/storage'
import { openEventStream } from '../src/modules/events/stream'
import { createAdminsService } from '../src/modules/admins/service'
import { passwordHasher } from '../src/modules/admins/password-hash'

const CAP = 3
let server: TestServer
let a: Tenant
let b: Tenant

beforeAll(async () => {
  server = await startTestServer({ FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000', FIXLOOP_SSE_STREAMS_PER_KEY: String(CAP) })
  a = await seedTenant(server.admin, {}, 'Acme')
  b = await seedTenant(server.admin, {}, 'Busy')
})
afterAll(() => server.close())

/** Reads an SSE body and collects the seqs of its messages (`id:` lines). */
function collect(res: Response): { seqs: number[]; cancel: () => Promise<void> } {
  const out = { seqs: [] as number[], cancel: async () => {} }
  const reader = res.body!.getReader()
  out.cancel = () => reader.cancel()
  const decoder = new TextDecoder()
  let carry = ''
  void (async () => {
    for (;;) {
      const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }))
      if (done) return
      const text = carry + decoder.decode(value, { stream: true })
      const lines = text.split('\n')
      carry = lines.pop()!
      for (const line of lines) if (line.startsWith('id: ')) out.seqs.push(Number(line.slice(4)))
    }
  })()
  return out
}

describe('shared reads', () => {
  test('caught-up streams take a burst of 700 events from the hub: no stream queries on its own', async () => {
    const dir = tempDir()
    const sqlite = new Database(join(dir, 'events.db'))
    // A real file, without an fsync per appended event (not what this test is about).
    sqlite.run('PRAGMA journal_mode = WAL')
    sqlite.run('PRAGMA synchronous = OFF')
    applyMigrations(sqlite)
    sqlite.run("INSERT INTO orgs (id, name, created_at) VALUES ('0000000000000000000000aa', 'Org', 0)")
    const orgId = '0000000000000000000000aa'
    const real = storeOf(sqliteStorage(sqlite)).events
    // The real repo on a real database; only its per-stream read is counted.
    let ownReads = 0
    const repo: EventsRepo = { ...real, page: (o, f) => (ownReads++, real.page(o, f)) }
    const hub = new EventHub(repo, { pollMs: 1000, heartbeatMs: 60_000 })
    const start = appendEvents(sqlite, orgId, null, 5).at(-1)!
    const streams = Array.from({ length: 20 }, () => collect(openEventStream(repo, hub, orgId, { after: start })))
    // Each stream reads up to the head once (one short page), then it is live.
    await eventually(() => ownReads >= 20)
    await Bun.sleep(50)
    const before = ownReads
    const burst = appendEvents(sqlite, orgId, null, 700)
    await hub.check()
    await eventually(() => streams.every((s) => s.seqs.length >= 700), 10_000)
    expect(ownReads - before).toBe(0)
    for (const s of streams) expect(s.seqs).toEqual(burst)
    hub.stop()
    sqlite.close()
  })
})

describe('many streams while events flow', () => {
  test('every stream gets every event exactly once and in order: behind, caught up, filtered, joining mid-flow', async () => {
    // B's key opens up to CAP streams: more keys of the same Org carry the rest.
    const keys = await Promise.all(Array.from({ length: 4 }, async () => (await server.admin.createKey(b.orgId, 'streams')).key))
    const head = (await call(server.url, 'GET', '/v1/events?limit=1&types=webhook.test', { auth: b.key })).body.nextAfter as number
    const backlog = await appendEventsIn(server.ctx, b.orgId, b.appId, 900)
    const open = (key: string, query: string) => SseClient.open(`${server.url}/v1/events/stream?${query}`, key)
    // Behind by 900 events, and caught up (after = the head once the backlog is written).
    const behind = await Promise.all([open(keys[0], `after=${head}`), open(keys[0], `after=${head}`), open(keys[1], `after=${head}`)])
    const caughtUp = await Promise.all([open(keys[1], `after=${backlog.at(-1)}`), open(keys[2], `after=${backlog.at(-1)}`)])
    const filtered = await open(keys[2], `after=${head}&types=feedback.received`)
    const flowing: number[] = []
    const received: number[] = []
    let late: SseClient[] = []
    // Bursts above the shared page (and above 256 a tick), between small ones, for a bounded number of rounds.
    for (let round = 0; round < 8; round++) {
      flowing.push(...await appendEventsIn(server.ctx, b.orgId, b.appId, round % 2 === 0 ? 450 : 7))
      if (round === 3) received.push(...await appendEventsIn(server.ctx, b.orgId, b.appId, 5, 'feedback.received'))
      // Two streams join mid-flow from the start of the flow (they are behind while events keep coming).
      if (round === 4) late = await Promise.all([open(keys[3], `after=${backlog.at(-1)}`), open(keys[3], `after=${backlog.at(-1)}`)])
      await Bun.sleep(round % 3 === 0 ? 0 : 60)
    }
    const all = [...backlog, ...flowing, ...received].sort((x, y) => x - y)
    const sinceBacklog = all.filter((s) => s > backlog.at(-1)!)
    const expected: [SseClient, number[]][] = [
      ...behind.map((c): [SseClient, number[]] => [c, all]),
      ...caughtUp.map((c): [SseClient, number[]] => [c, sinceBacklog]),
      ...late.map((c): [SseClient, number[]] => [c, sinceBacklog]),
      [filtered, received],
    ]
    for (const [c] of expected) expect(c.status).toBe(200)
    await eventually(() => expected.every(([c, want]) => c.messages.length >= want.length), 30_000)
    await Bun.sleep(300)
    for (const [c, want] of expected) expect(c.seqs).toEqual(want)
    await Promise.all(expected.map(([c]) => c.close()))
  }, 60_000)
})

describe('streams per credential', () => {
  test(`an sk_ key opening more than ${CAP} streams gets 429 rate_limited with Retry-After; other keys are unaffected; closing frees a slot`, async () => {
    const open = (key: string) => SseClient.open(`${server.url}/v1/events/stream`, key)
    const mine = await Promise.all(Array.from({ length: CAP }, () => open(a.key)))
    expect(mine.map((c) => c.status)).toEqual(Array(CAP).fill(200))
    const over = await fetch(`${server.url}/v1/events/stream`, { headers: { authorization: `Bearer ${a.key}` } })
    // An accepted stream would never end: read a body only when refused.
    if (over.status === 200) await over.body!.cancel()
    expect(over.status).toBe(429)
    const body = (await over.json()) as { error: { code: string; message: string; details: unknown } }
    expect(body.error.code).toBe('rate_limited')
    expect(body.error.details).toEqual({ openStreams: CAP, scope: 'key' })
    expect(body.error.message).toContain('FIXLOOP_SSE_STREAMS_PER_KEY')
    expect(body.error.message).not.toContain(a.key)
    expect(Number(over.headers.get('retry-after'))).toBeGreaterThan(0)
    // Another key of the same Org has its own allowance.
    const other = await server.admin.createKey(a.orgId, 'second')
    const theirs = await open(other.key)
    expect(theirs.status).toBe(200)
    // A stream that ends gives its slot back.
    await mine[0].close()
    await eventually(async () => {
      const again = await open(a.key)
      if (again.status !== 200) return false
      mine[0] = again
      return true
    }, 3000)
    await Promise.all([...mine, theirs].map((c) => c.close()))
  })

  test(`a dashboard session is one credential too: its ${CAP + 1}th stream is 429`, async () => {
    const admins = createAdminsService(server.ctx.store.admins, server.ctx.box, server.ctx.clock, passwordHasher(server.ctx.config.passwordHashMib))
    await admins.create('streams@example.com', 'streams password 1', [a.orgId], 'owner')
    const signIn = await call(server.url, 'POST', '/admin/api/session', { body: { email: 'streams@example.com', password: 'streams password 1' } })
    expect(signIn.status).toBe(200)
    const headers = { cookie: signIn.headers.get('set-cookie')!.split(';')[0], 'x-fixloop-org': a.orgId, accept: 'text/event-stream' }
    const opened: Response[] = []
    for (let i = 0; i < CAP; i++) opened.push(await fetch(`${server.url}/v1/events/stream`, { headers }))
    expect(opened.map((r) => r.status)).toEqual(Array(CAP).fill(200))
    const over = await fetch(`${server.url}/v1/events/stream`, { headers })
    if (over.status === 200) await over.body!.cancel()
    expect(over.status).toBe(429)
    expect(((await over.json()) as { error: { code: string } }).error.code).toBe('rate_limited')
    expect(over.headers.get('retry-after')).toBe('60')
    await Promise.all(opened.map((r) => r.body!.cancel()))
  })
})

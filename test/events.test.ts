import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, eventually, seedTenant, startTestServer, type Tenant, type TestServer } from './harness'
import { appendEvents, appendEventsIn, SseClient } from './events-helpers'
import { purgeExpired } from '../src/modules/events/retention'
import { ManualClock } from '../src/core/clock'
import { createAdminsService } from '../src/modules/admins/service'
import { passwordHasher } from '../src/modules/admins/password-hash'

let server: TestServer
let a: Tenant
let b: Tenant

beforeAll(async () => {
  server = await startTestServer({ FIXLOOP_SSE_HEARTBEAT_SECONDS: '0.3', FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000' })
  a = await seedTenant(server.admin, {}, 'Acme')
  b = await seedTenant(server.admin, {}, 'Other')
})
afterAll(() => server.close())

describe('GET /v1/events (pull feed)', () => {
  test('pages by seq with the documented shape, oldest first, tenant-scoped', async () => {
    const seqs = await appendEventsIn(server.ctx, a.orgId, a.appId, 5)
    await appendEventsIn(server.ctx, b.orgId, b.appId, 3)
    const r = await call(server.url, 'GET', '/v1/events?limit=3', { auth: a.key })
    expect(r.status).toBe(200)
    expect(r.body.data.map((e: { seq: number }) => e.seq)).toEqual(seqs.slice(0, 3))
    expect(r.body.nextAfter).toBe(seqs[2])
    const e = r.body.data[0]
    expect(Object.keys(e).sort()).toEqual(['appId', 'createdAt', 'data', 'id', 'seq', 'type'])
    expect(e.id).toMatch(/^[0-9a-f]{24}$/)
    expect(e.type).toBe('feedback.status_changed')
    expect(e.appId).toBe(a.appId)
    expect(e.data).toMatchObject({ from: 'sanitized', to: 'queued' })
    const r2 = await call(server.url, 'GET', `/v1/events?after=${r.body.nextAfter}&limit=100`, { auth: a.key })
    expect(r2.body.data.map((x: { seq: number }) => x.seq)).toEqual(seqs.slice(3))
    // Org B sees only its own three events, numbered from 1.
    const rb = await call(server.url, 'GET', '/v1/events', { auth: b.key })
    expect(rb.body.data.map((x: { seq: number }) => x.seq)).toEqual([1, 2, 3])
    expect(rb.body.data.every((x: { appId: string }) => x.appId === b.appId)).toBe(true)
  })

  test('filters by types and appId; nextAfter skips past what the filter excluded', async () => {
    const before = (await call(server.url, 'GET', '/v1/events?limit=500', { auth: a.key })).body.nextAfter
    await appendEventsIn(server.ctx, a.orgId, a.appId, 2, 'feedback.received')
    await appendEventsIn(server.ctx, a.orgId, a.appId, 2)
    const r = await call(server.url, 'GET', `/v1/events?after=${before}&types=feedback.received`, { auth: a.key })
    expect(r.body.data.map((e: { type: string }) => e.type)).toEqual(['feedback.received', 'feedback.received'])
    expect(r.body.nextAfter).toBe(before + 4)
    const other = await call(server.url, 'GET', `/v1/events?types=webhook.test`, { auth: a.key })
    expect(other.body.data).toEqual([])
    expect(other.body.nextAfter).toBe(before + 4)
    const byApp = await call(server.url, 'GET', `/v1/events?appId=${b.appId}`, { auth: a.key })
    expect(byApp.status).toBe(404)
    expect(byApp.body.error.code).toBe('app_not_found')
  })

  test('exact while events are being written: no gaps, no duplicates', async () => {
    const start = (await call(server.url, 'GET', '/v1/events?limit=500', { auth: a.key })).body.nextAfter
    let writing = true
    let written = 0
    const writer = (async () => {
      while (writing && written < 600) {
        await appendEventsIn(server.ctx, a.orgId, a.appId, 3)
        written += 3
        await Bun.sleep(0)
      }
    })()
    const seen: number[] = []
    let after = start
    for (let i = 0; i < 400; i++) {
      const r = await call(server.url, 'GET', `/v1/events?after=${after}&limit=7`, { auth: a.key })
      seen.push(...r.body.data.map((e: { seq: number }) => e.seq))
      after = r.body.nextAfter
      if (written >= 600 && r.body.data.length === 0) break
    }
    writing = false
    await writer
    const tail = await call(server.url, 'GET', `/v1/events?after=${after}&limit=500`, { auth: a.key })
    seen.push(...tail.body.data.map((e: { seq: number }) => e.seq))
    expect(seen.length).toBe(written)
    expect(seen).toEqual(Array.from({ length: written }, (_, i) => start + 1 + i))
  })

  test.each([
    ['negative after', '?after=-1'],
    ['fractional after', '?after=1.5'],
    ['text after', '?after=abc'],
    ['limit too large', '?limit=501'],
    ['limit zero', '?limit=0'],
    ['junk param', '?foo=bar'],
    ['bad types', '?types=' + encodeURIComponent('<script>')],
    ['bad appId', '?appId=xyz'],
    ['huge after', '?after=' + '9'.repeat(400)],
  ])('bad query (%s) is 400 invalid_body', async (_name, qs) => {
    const r = await call(server.url, 'GET', '/v1/events' + qs, { auth: a.key })
    expect(r.status).toBe(400)
    expect(r.body.error.code).toBe('invalid_body')
  })

  test('a types filter naming no event type (a typo) is 400 naming the types there are, on the feed and the stream alike; no stream slot is held', async () => {
    for (const path of ['/v1/events?types=feedback.recieved', '/v1/events?types=feedback.received,agent_run.done', '/v1/events/stream?types=feedback.recieved']) {
      const r = await call(server.url, 'GET', path, { auth: a.key })
      expect({ path, status: r.status, code: r.body.error.code }).toEqual({ path, status: 400, code: 'invalid_body' })
      expect(r.body.error.details.issues[0].path).toBe('/types')
      expect(r.body.error.details.issues[0].message).toContain('feedback.received')
    }
    expect(server.services.events.openFor(a.keyId)).toBe(0)
    // Known types, also repeated, still filter.
    expect((await call(server.url, 'GET', '/v1/events?types=feedback.received,feedback.received', { auth: a.key })).status).toBe(200)
  })

  test('needs an sk_ key', async () => {
    expect((await call(server.url, 'GET', '/v1/events')).status).toBe(401)
    expect((await call(server.url, 'GET', '/v1/events', { auth: a.pub })).status).toBe(401)
    expect((await call(server.url, 'GET', '/v1/events/stream', { auth: 'sk_nope' })).status).toBe(401)
  })

  test('retention purges old events; seq keeps rising', async () => {
    // Stamped 31 days ago (their ids carry the creation second too, and retention ranges on them).
    const old = await appendEventsIn(server.ctx, b.orgId, null, 2, 'feedback.status_changed', new ManualClock(Date.now() - 31 * 86400_000))
    const purged = await purgeExpired(server.ctx)
    expect(purged.events).toBe(2)
    const r = await call(server.url, 'GET', '/v1/events?limit=500', { auth: b.key })
    expect(r.body.data.map((e: { seq: number }) => e.seq)).not.toContain(old[0])
    expect((await appendEventsIn(server.ctx, b.orgId, null, 1))[0]).toBe(old[1] + 1)
  })

  test('retention deletes dashboard sessions over for more than a day (their address and browser go with them); live ones stay', async () => {
    const admins = server.ctx.store.admins
    const now = Date.now()
    await admins.insertAdmin({ id: 'ret-admin', email: 'retention@example.com', passwordHash: 'x', isOwner: false, totpSecretEnc: null, totpLastStep: null, createdAt: now, updatedAt: now }, [])
    const row = (id: string, lastSeenAt: number, expiresAt: number) => ({ id, tokenHash: `th-${id}`, adminId: 'ret-admin', csrfToken: 'c', userAgent: 'Firefox', ip: '203.0.113.9', createdAt: lastSeenAt, lastSeenAt, expiresAt })
    await admins.insertSession(row('ret-live', now, now + 86400_000))
    await admins.insertSession(row('ret-ended', now - 3 * 86400_000, now - 2 * 86400_000)) // expired two days ago
    const purged = await purgeExpired(server.ctx)
    expect(purged.sessions).toBeGreaterThanOrEqual(1)
    expect(await admins.sessionByTokenHash('th-ret-ended')).toBeUndefined()
    expect((await admins.sessionByTokenHash('th-ret-live'))?.ip).toBe('203.0.113.9')
  })
})

describe('GET /v1/events/stream (SSE)', () => {
  test('replays after `after`, then streams new events live with id = seq; heartbeats come', async () => {
    const c = (await appendEventsIn(server.ctx, a.orgId, a.appId, 1))[0]
    const s = await SseClient.open(`${server.url}/v1/events/stream?after=${c - 1}`, a.key)
    expect(s.status).toBe(200)
    await eventually(() => s.messages.length === 1)
    expect(s.seqs).toEqual([c])
    const more = await appendEventsIn(server.ctx, a.orgId, a.appId, 3)
    await eventually(() => s.messages.length === 4)
    expect(s.seqs).toEqual([c, ...more])
    const ev = JSON.parse(s.messages[1].data!)
    expect(ev.seq).toBe(more[0])
    expect(s.messages[1].event).toBe('feedback.status_changed')
    await eventually(() => s.comments.filter((x) => x === 'keep-alive').length >= 2, 10_000)
    await s.close()
  })

  test('Last-Event-ID wins over after and resumes exactly; filters apply; Org B never sees A', async () => {
    const seqs = await appendEventsIn(server.ctx, a.orgId, a.appId, 4)
    const s = await SseClient.open(`${server.url}/v1/events/stream?after=0`, a.key, { 'last-event-id': String(seqs[1]) })
    await eventually(() => s.messages.length >= 2)
    expect(s.seqs.slice(0, 2)).toEqual([seqs[2], seqs[3]])
    await s.close()
    const sb = await SseClient.open(`${server.url}/v1/events/stream?types=feedback.received`, b.key)
    await appendEventsIn(server.ctx, a.orgId, a.appId, 2, 'feedback.received')
    await appendEventsIn(server.ctx, b.orgId, b.appId, 2)
    const bs = await appendEventsIn(server.ctx, b.orgId, b.appId, 1, 'feedback.received')
    await eventually(() => sb.messages.some((m) => Number(m.id) === bs[0]))
    expect(sb.messages.every((m) => m.event === 'feedback.received' && JSON.parse(m.data!).appId === b.appId)).toBe(true)
    await sb.close()
  })

  test('bad Last-Event-ID and bad filters are invalid_body; a closed client frees its subscription', async () => {
    const bad = await call(server.url, 'GET', '/v1/events/stream', { auth: a.key, headers: { 'last-event-id': 'abc' } })
    expect(bad.status).toBe(400)
    expect(bad.body.error.code).toBe('invalid_body')
    // Named as every other refused header is (header:Idempotency-Key, header:Content-Encoding, …): a bare
    // "Last-Event-ID" read as a body member's name to a client matching on the path's form.
    expect(bad.body.error.details.issues).toEqual([{ path: 'header:Last-Event-ID', message: 'must be a seq (a non-negative integer)' }])
    // Only the decimal seqs this server writes: not what Number() would also read.
    for (const id of ['0x10', '1e3', '0b1', '+5', '1.0', '12345678901234567890']) {
      const loose = await call(server.url, 'GET', '/v1/events/stream', { auth: a.key, headers: { 'last-event-id': id } })
      expect([id, loose.status]).toEqual([id, 400])
    }
    const junk = await call(server.url, 'GET', '/v1/events/stream?x=1', { auth: a.key })
    expect(junk.status).toBe(400)
    const before = server.hub.subscriberCount
    const s = await SseClient.open(`${server.url}/v1/events/stream`, a.key)
    await eventually(() => server.hub.subscriberCount === before + 1)
    await s.close()
    await eventually(() => server.hub.subscriberCount === before, 10_000)
  })
})

describe('a stream outlives no credential (checked at every heartbeat)', () => {
  test('revoking the key ends its open stream; events written afterwards never reach it', async () => {
    const key = await server.admin.createKey(a.orgId, 'streaming')
    const s = await SseClient.open(`${server.url}/v1/events/stream`, key.key)
    expect(s.status).toBe(200)
    const before = await appendEventsIn(server.ctx, a.orgId, a.appId, 1)
    await eventually(() => s.seqs.includes(before[0]))
    // Another key of the Org keeps its stream: only the revoked credential's streams end.
    const other = await SseClient.open(`${server.url}/v1/events/stream`, a.key)
    await server.admin.revokeKey(a.orgId, key.id)
    // Ended at a heartbeat (0.3 s here): 10 s is a bound for a loaded machine, not the heartbeat's timing.
    await eventually(() => s.ended(), 10_000)
    const after = await appendEventsIn(server.ctx, a.orgId, a.appId, 2)
    await eventually(() => after.every((seq) => other.seqs.includes(seq)), 10_000)
    expect(await other.ended()).toBe(false)
    expect(s.seqs.some((seq) => after.includes(seq))).toBe(false)
    // And the key is refused when it tries again.
    expect((await SseClient.open(`${server.url}/v1/events/stream`, key.key)).status).toBe(401)
    await other.close()
  })

  test("signing out ends the session's stream", async () => {
    const admins = createAdminsService(server.ctx.store.admins, server.ctx.box, server.ctx.clock, passwordHasher(server.ctx.config.passwordHashMib))
    await admins.create('stream-out@example.com', 'stream out password 1', [a.orgId], 'owner')
    const signIn = await call(server.url, 'POST', '/admin/api/session', { body: { email: 'stream-out@example.com', password: 'stream out password 1' } })
    expect(signIn.status).toBe(200)
    const cookie = signIn.headers.get('set-cookie')!.split(';')[0]
    const s = await SseClient.open(`${server.url}/v1/events/stream`, '', { cookie, 'x-fixloop-org': a.orgId })
    expect(s.status).toBe(200)
    const seen = await appendEventsIn(server.ctx, a.orgId, a.appId, 1)
    await eventually(() => s.seqs.includes(seen[0]))
    expect((await call(server.url, 'DELETE', '/admin/api/session', { headers: { cookie, 'x-csrf-token': signIn.body.csrfToken } })).status).toBe(200)
    await eventually(() => s.ended(), 10_000)
    const after = await appendEventsIn(server.ctx, a.orgId, a.appId, 1)
    await Bun.sleep(600)
    expect(s.seqs).not.toContain(after[0])
  })
})

describe('many streams at once', () => {
  test('small batches (shared read) and large ones (each stream reads) reach every stream exactly, filters applied', async () => {
    const start = (await call(server.url, 'GET', '/v1/events?limit=1&types=webhook.test', { auth: a.key })).body.nextAfter
    const all = await Promise.all(Array.from({ length: 5 }, () => SseClient.open(`${server.url}/v1/events/stream?after=${start}`, a.key)))
    const received = await SseClient.open(`${server.url}/v1/events/stream?after=${start}&types=feedback.received`, a.key)
    await Bun.sleep(200)
    const small = await appendEventsIn(server.ctx, a.orgId, a.appId, 40)
    await Bun.sleep(150)
    const big = await appendEventsIn(server.ctx, a.orgId, a.appId, 700)
    const rec = await appendEventsIn(server.ctx, a.orgId, a.appId, 3, 'feedback.received')
    const want = [...small, ...big, ...rec]
    await eventually(() => all.every((c) => c.messages.length >= want.length) && received.messages.length >= 3, 15_000)
    await Bun.sleep(200)
    for (const c of all) expect(c.seqs).toEqual(want)
    expect(received.seqs).toEqual(rec)
    await Promise.all([...all, received].map((c) => c.close()))
  })
})

describe('a slow SSE reader', () => {
  test('is not buffered without bound: the stream pauses, then resumes from the database with every event in order', async () => {
    const net = await import('node:net')
    const start = (await call(server.url, 'GET', '/v1/events?limit=1&types=webhook.test', { auth: b.key })).body.nextAfter
    const port = Number(new URL(server.url).port)
    const chunks: Buffer[] = []
    // Events received so far ("\nid: " lines), counted as the bytes come: re-reading all of them at every
    // poll (up to ~6 MB, every 20 ms) cost this process, which is also the server, seconds of CPU.
    let ids = 0
    let tail = ''
    const sock = net.connect(port, '127.0.0.1')
    await new Promise<void>((r) => sock.once('connect', () => r()))
    sock.on('data', (c: Buffer) => {
      chunks.push(c)
      // latin1: one character per byte, so no character is split between chunks; the 4 characters kept
      // finish a "\nid: " cut by a chunk's end, and cannot hold a whole one (5 characters) twice.
      const text = tail + c.toString('latin1')
      ids += text.match(/\nid: /g)?.length ?? 0
      tail = text.slice(-4)
    })
    sock.write(`GET /v1/events/stream?after=${start} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${b.key}\r\n\r\n`)
    await eventually(() => Buffer.concat(chunks).toString().includes('connected'))
    sock.pause() // stop reading: kernel buffers fill, then the server's small queue
    const total = 20_000 // ~6 MB of events, far beyond the socket buffers and the 64 KB queue
    // In one commit on SQLite too (as on PostgreSQL): 20,000 commits of one event each, every one synced to
    // disk, took ~20 s on a loaded machine; the reader sees them all at once either way (appendEventsIn
    // appends them in one synchronous stretch, no reader in between). IMMEDIATE: a deferred transaction
    // reads the Org's last seq first, and its upgrade to a writer fails at once (SQLITE_BUSY, no busy
    // wait) when the server's processing thread committed in between (a CI flake).
    const storage = server.ctx.storage
    if (storage.dialect === 'sqlite') storage.sqlite.transaction(() => appendEvents(storage.sqlite, b.orgId, b.appId, total)).immediate()
    else await appendEventsIn(server.ctx, b.orgId, b.appId, total)
    await server.hub.check()
    await Bun.sleep(500)
    sock.resume()
    await eventually(() => ids >= total, 30_000)
    const seqs = [...Buffer.concat(chunks).toString().matchAll(/\nid: (\d+)\n/g)].map((m) => Number(m[1]))
    expect(seqs.length).toBe(total)
    expect(seqs).toEqual(Array.from({ length: total }, (_, i) => start + 1 + i))
    sock.destroy()
  }, 60_000)
})

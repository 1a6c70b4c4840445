import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, eventually, seedTenant, startTestServer, type Tenant, type TestServer } from './harness'
import { appendEventsIn } from './events-helpers'
import { handSignature, Receiver } from './webhook-receiver'
import { dbRow, dbRun } from './sqlite-of'

let server: TestServer
let rx: Receiver
let a: Tenant
let b: Tenant

beforeAll(async () => {
  server = await startTestServer({
    FIXLOOP_WEBHOOK_ALLOW_PRIVATE: '1',
    FIXLOOP_WEBHOOK_RETRY_SCALE: '0.0005',
    FIXLOOP_WEBHOOK_TIMEOUT_SECONDS: '0.5',
    FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000',
  })
  rx = new Receiver()
  a = await seedTenant(server.admin, {}, 'Acme')
  b = await seedTenant(server.admin, {}, 'Other')
})
afterAll(async () => {
  await server.close()
  rx.stop()
})

async function createHook(t: Tenant, path: string, extra: Record<string, unknown> = {}) {
  const r = await call(server.url, 'POST', '/v1/webhooks', { auth: t.key, body: { url: rx.url + path, ...extra } })
  expect(r.status).toBe(201)
  rx.secrets.set(path, r.body.secret)
  return r.body as { id: string; secret: string; url: string; events: string[] }
}

const deliveries = async (t: Tenant, id: string) => (await call(server.url, 'GET', `/v1/webhooks/${id}/deliveries`, { auth: t.key })).body.data

describe('webhook endpoints', () => {
  test('create returns a whsec_ secret once; it is sealed at rest and never listed', async () => {
    const w = await createHook(a, '/ok/create', { events: ['feedback.status_changed'] })
    expect(w.id).toMatch(/^[0-9a-f]{24}$/)
    expect(w.secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/)
    const raw = Buffer.from(w.secret.slice(6), 'base64')
    expect(raw.length).toBeGreaterThanOrEqual(24)
    expect(raw.length).toBeLessThanOrEqual(32)
    expect(w.events).toEqual(['feedback.status_changed'])
    const list = await call(server.url, 'GET', '/v1/webhooks', { auth: a.key })
    expect(list.text).not.toContain(w.secret)
    expect(list.text).not.toContain(w.secret.slice(6))
    expect(list.body.data.map((x: { id: string }) => x.id)).toContain(w.id)
    const row = (await dbRow(server.ctx, 'SELECT * FROM webhooks WHERE id = ?', [w.id])) as Record<string, string>
    expect(JSON.stringify(row)).not.toContain(w.secret.slice(6))
    expect(row.secret_sealed.startsWith('v1:')).toBe(true)
  })

  test('cross-Org ids are 404 everywhere', async () => {
    const w = await createHook(a, '/ok/tenancy')
    for (const [method, path] of [
      ['GET', `/v1/webhooks/${w.id}`],
      ['DELETE', `/v1/webhooks/${w.id}`],
      ['GET', `/v1/webhooks/${w.id}/deliveries`],
      ['POST', `/v1/webhooks/${w.id}/rotate-secret`],
      ['POST', `/v1/webhooks/${w.id}/test`],
      ['POST', `/v1/webhooks/${w.id}/enable`],
    ] as const) {
      const r = await call(server.url, method, path, { auth: b.key })
      expect([r.status, r.body.error.code]).toEqual([404, 'not_found'])
    }
    const list = await call(server.url, 'GET', '/v1/webhooks', { auth: b.key })
    expect(list.body.data.map((x: { id: string }) => x.id)).not.toContain(w.id)
    const app = await call(server.url, 'POST', '/v1/webhooks', { auth: b.key, body: { url: rx.url + '/ok/x', appId: a.appId } })
    expect([app.status, app.body.error.code]).toEqual([404, 'app_not_found'])
  })

  test.each([
    ['unknown field', { url: 'http://127.0.0.1:1/x', extra: 1 }, 'invalid_body'],
    ['missing url', {}, 'invalid_body'],
    ['url not a string', { url: 5 }, 'invalid_body'],
    ['events not an array', { url: 'http://127.0.0.1:1/x', events: 'a' }, 'invalid_body'],
    ['unknown event type', { url: 'http://127.0.0.1:1/x', events: ['feedback.nope'] }, 'invalid_body'],
    ['deep nesting', { url: 'http://127.0.0.1:1/x', events: [[[[[['x']]]]]] }, 'invalid_body'],
    ['huge url', { url: 'http://127.0.0.1/' + 'a'.repeat(5000) }, 'invalid_body'],
    ['ftp url', { url: 'ftp://127.0.0.1/x' }, 'url_not_allowed'],
    ['relative url', { url: '/x' }, 'url_not_allowed'],
    ['credentials in url', { url: 'http://u:p@127.0.0.1/x' }, 'url_not_allowed'],
    ['bad appId', { url: 'http://127.0.0.1:1/x', appId: 'zz' }, 'invalid_body'],
  ])('create with %s is 400 %s', async (_n, body, code) => {
    const r = await call(server.url, 'POST', '/v1/webhooks', { auth: a.key, body })
    expect(r.status).toBe(400)
    expect(r.body.error.code).toBe(code)
  })

  test('other bad input: malformed ids, junk query, bad ranges', async () => {
    expect((await call(server.url, 'GET', '/v1/webhooks/nope', { auth: a.key })).body.error.code).toBe('invalid_id')
    expect((await call(server.url, 'POST', '/v1/webhooks/deliveries/nope/redeliver', { auth: a.key })).body.error.code).toBe('invalid_id')
    const w = await createHook(a, '/ok/bad')
    expect((await call(server.url, 'GET', `/v1/webhooks/${w.id}/deliveries?limit=0`, { auth: a.key })).status).toBe(400)
    expect((await call(server.url, 'GET', `/v1/webhooks/${w.id}/deliveries?junk=1`, { auth: a.key })).status).toBe(400)
    const range = await call(server.url, 'POST', `/v1/webhooks/${w.id}/redeliver-failed`, { auth: a.key, body: { since: 'yesterday', until: 'now' } })
    expect([range.status, range.body.error.code]).toEqual([400, 'invalid_body'])
    // An impossible date is refused, not rolled over (2026-02-30 was 2 March).
    const rolled = await call(server.url, 'POST', `/v1/webhooks/${w.id}/redeliver-failed`, { auth: a.key, body: { since: '2026-02-30T00:00:00Z', until: '2026-03-05T00:00:00Z' } })
    expect([rolled.status, rolled.body.error.code]).toEqual([400, 'invalid_body'])
    const raw = await call(server.url, 'POST', '/v1/webhooks', { auth: a.key, rawBody: '{"url":', headers: { 'content-type': 'application/json' } })
    expect([raw.status, raw.body.error.code]).toEqual([400, 'invalid_body'])
    expect((await call(server.url, 'POST', '/v1/webhooks', { body: { url: rx.url } })).status).toBe(401)
  })
})

describe('delivery', () => {
  test('signed per Standard Webhooks (checked by an independent library and by hand), thin event body, stable id', async () => {
    const w = await createHook(a, '/ok/sign', { appId: a.appId })
    const seqs = await appendEventsIn(server.ctx, a.orgId, a.appId, 3)
    await appendEventsIn(server.ctx, a.orgId, null, 1) // Org-wide: not for an App-scoped endpoint
    await appendEventsIn(server.ctx, b.orgId, b.appId, 2) // another Org: never
    await eventually(() => rx.at('/ok/sign').length >= 3)
    await Bun.sleep(300)
    // In seq order: one attempt in flight per endpoint (the next test checks it under jitter).
    const got = rx.at('/ok/sign')
    expect(got.length).toBe(3)
    for (const r of got) {
      expect(r.verified).toBe(true)
      expect(r.signature).toBe(handSignature(w.secret, r.id, r.timestamp, r.body))
      const ev = JSON.parse(r.body)
      expect(Object.keys(ev).sort()).toEqual(['appId', 'createdAt', 'data', 'id', 'seq', 'type'])
      expect(r.id).toBe(ev.id)
      expect(ev.appId).toBe(a.appId)
    }
    expect(got.map((r) => JSON.parse(r.body).seq)).toEqual(seqs)
    const feed = await call(server.url, 'GET', `/v1/events?after=${seqs[0] - 1}&limit=3`, { auth: a.key })
    expect(got.map((r) => r.body)).toEqual(feed.body.data.map((e: unknown) => JSON.stringify(e)))
    const log = await deliveries(a, w.id)
    expect(log.length).toBe(3)
    expect(log[0].status).toBe('succeeded')
    expect(log[0].log[0]).toMatchObject({ attempt: 1, responseStatus: 200, responseBody: 'ok', error: null })
    expect(log[0].log[0].requestHeaders['webhook-id']).toBe(log[0].eventId)
    expect(typeof log[0].log[0].latencyMs).toBe('number')
  })

  test('in order per endpoint: one attempt in flight at a time, first attempts in seq order, while other endpoints proceed', async () => {
    // Answers take 0-29 ms by message id, so attempts sent at once would finish (and log) out of order.
    await createHook(a, '/jitter/one')
    await createHook(a, '/jitter/two')
    const seqs = await appendEventsIn(server.ctx, a.orgId, a.appId, 24)
    const mine = (path: string) => rx.at(path).filter((r) => JSON.parse(r.body).seq >= seqs[0])
    await eventually(() => mine('/jitter/one').length >= 24 && mine('/jitter/two').length >= 24, 20_000)
    for (const path of ['/jitter/one', '/jitter/two']) {
      expect(mine(path).map((r) => JSON.parse(r.body).seq)).toEqual(seqs)
      expect(rx.mostOpen.get(path)).toBe(1)
    }
    // The two endpoints were served side by side, not one after the other.
    const [one, two] = [mine('/jitter/one'), mine('/jitter/two')]
    expect(two[0].at).toBeLessThan(one.at(-1)!.at)
  })

  test('a failed attempt waits for its retry without holding back later events; first attempts stay in seq order', async () => {
    const w = await createHook(a, '/jitter-flaky/one')
    const seqs = await appendEventsIn(server.ctx, a.orgId, a.appId, 10)
    const mine = () => rx.at('/jitter-flaky/one').filter((r) => JSON.parse(r.body).seq >= seqs[0])
    // Odd seqs fail once: 5 of the 10 events take two attempts.
    const odd = seqs.filter((q) => q % 2 === 1).length
    await eventually(() => mine().length >= 10 + odd, 20_000)
    const got = mine()
    const firsts = got.filter((r, i) => got.findIndex((x) => x.id === r.id) === i).map((r) => JSON.parse(r.body).seq)
    expect(firsts).toEqual(seqs)
    expect(rx.mostOpen.get('/jitter-flaky/one')).toBe(1)
    const done = await eventually(async () => {
      const l = await deliveries(a, w.id)
      return l.filter((d: { eventSeq?: number; status: string }) => d.status === 'succeeded').length >= 10 ? l : undefined
    })
    expect(done.filter((d: { attempts: number }) => d.attempts === 2).length).toBe(odd)
  })

  test('event type filters: only the chosen types arrive', async () => {
    await createHook(a, '/ok/filter', { events: ['feedback.received'] })
    await appendEventsIn(server.ctx, a.orgId, a.appId, 2)
    const want = await appendEventsIn(server.ctx, a.orgId, a.appId, 1, 'feedback.received')
    await eventually(() => rx.at('/ok/filter').length >= 1)
    await Bun.sleep(300)
    expect(rx.at('/ok/filter').map((r) => JSON.parse(r.body).seq)).toEqual(want)
  })

  test('a receiver failing the first 3 attempts gets the same webhook-id 4 times, with growing gaps; the log keeps 4 KB', async () => {
    const w = await createHook(a, '/flaky/3')
    const [seq] = await appendEventsIn(server.ctx, a.orgId, a.appId, 1)
    await eventually(() => rx.at('/flaky/3').length >= 4, 10_000)
    const got = rx.at('/flaky/3')
    expect(new Set(got.map((r) => r.id)).size).toBe(1)
    expect(got.every((r) => r.verified)).toBe(true)
    expect(JSON.parse(got[0].body).seq).toBe(seq)
    const gaps = got.slice(1).map((r, i) => r.at - got[i].at)
    expect(gaps[2]).toBeGreaterThan(gaps[0])
    const [d] = await eventually(async () => {
      const l = await deliveries(a, w.id)
      return l[0]?.status === 'succeeded' ? l : undefined
    })
    expect(d.attempts).toBe(4)
    expect(d.log.map((x: { responseStatus: number }) => x.responseStatus)).toEqual([503, 503, 503, 200])
    expect(d.log[0].responseBody.length).toBe(4096)
  })

  test('Retry-After is honoured', async () => {
    await createHook(a, '/busy')
    await appendEventsIn(server.ctx, a.orgId, a.appId, 1)
    await eventually(() => rx.at('/busy').length >= 2, 5000)
    const [first, second] = rx.at('/busy')
    // Retry-After: 600 s, scaled by 0.0005 = 300 ms; the schedule alone would wait ~3 ms.
    expect(second.at - first.at).toBeGreaterThanOrEqual(280)
  })

  test('410 disables the endpoint and records webhook.disabled (delivered to the other endpoints)', async () => {
    const watcher = await createHook(a, '/ok/watch', { events: ['webhook.disabled'] })
    const w = await createHook(a, '/gone')
    await appendEventsIn(server.ctx, a.orgId, a.appId, 1)
    await eventually(() => rx.at('/ok/watch').length >= 1, 5000)
    const ev = JSON.parse(rx.at('/ok/watch')[0].body)
    expect(ev).toMatchObject({ type: 'webhook.disabled', data: { webhookId: w.id } })
    const got = await call(server.url, 'GET', `/v1/webhooks/${w.id}`, { auth: a.key })
    expect(got.body.enabled).toBe(false)
    expect(got.body.disabledReason).toContain('410')
    const feed = await call(server.url, 'GET', `/v1/events?types=webhook.disabled&limit=500`, { auth: a.key })
    expect(feed.body.data.some((e: { data: { webhookId: string } }) => e.data.webhookId === w.id)).toBe(true)
    const n = rx.at('/gone').length
    await appendEventsIn(server.ctx, a.orgId, a.appId, 2)
    await Bun.sleep(500)
    expect(rx.at('/gone').length).toBe(n)
    const test = await call(server.url, 'POST', `/v1/webhooks/${w.id}/test`, { auth: a.key })
    expect([test.status, test.body.error.code]).toEqual([409, 'webhook_disabled'])
    expect(watcher.id).not.toBe(w.id)
  })

  test('no answer in time is a failed attempt (timeout), retried', async () => {
    const w = await createHook(a, '/slow')
    await appendEventsIn(server.ctx, a.orgId, a.appId, 1)
    const [d] = await eventually(async () => {
      const l = await deliveries(a, w.id)
      return l[0]?.log.length >= 1 ? l : undefined
    }, 5000)
    expect(d.log[0].error).toContain('timeout')
    expect(d.log[0].responseStatus).toBeNull()
    expect(d.log[0].latencyMs).toBeGreaterThanOrEqual(450)
    expect(d.status).toBe('pending')
    await call(server.url, 'DELETE', `/v1/webhooks/${w.id}`, { auth: a.key })
  })

  test('redirects are not followed: a 302 to 127.0.0.1 is a failed attempt', async () => {
    const w = await createHook(a, '/redirect')
    const [seq] = await appendEventsIn(server.ctx, a.orgId, a.appId, 1)
    const [d] = await eventually(async () => {
      const l = await deliveries(a, w.id)
      return l[0]?.log.length >= 1 ? l : undefined
    }, 5000)
    expect(d.log[0].responseStatus).toBe(302)
    expect(d.status).toBe('pending')
    expect(rx.at('/ok').some((r) => JSON.parse(r.body).seq === seq)).toBe(false)
    await call(server.url, 'DELETE', `/v1/webhooks/${w.id}`, { auth: a.key })
  })

  test('send a test event reaches that endpoint only; redeliver resends with the same webhook-id', async () => {
    const w = await createHook(a, '/ok/test-target')
    await createHook(a, '/ok/bystander')
    const t = await call(server.url, 'POST', `/v1/webhooks/${w.id}/test`, { auth: a.key })
    expect(t.status).toBe(202)
    await eventually(() => rx.at('/ok/test-target').length >= 1)
    await Bun.sleep(300)
    expect(JSON.parse(rx.at('/ok/test-target')[0].body)).toMatchObject({ type: 'webhook.test', seq: t.body.seq, data: { webhookId: w.id } })
    expect(rx.at('/ok/bystander').length).toBe(0)
    const [d] = await deliveries(a, w.id)
    const re = await call(server.url, 'POST', `/v1/webhooks/deliveries/${d.id}/redeliver`, { auth: a.key })
    expect(re.status).toBe(200)
    await eventually(() => rx.at('/ok/test-target').length >= 2)
    const [one, two] = rx.at('/ok/test-target')
    expect(two.id).toBe(one.id)
    expect(two.body).toBe(one.body)
    expect((await call(server.url, 'POST', `/v1/webhooks/deliveries/${d.id}/redeliver`, { auth: b.key })).status).toBe(404)
  })

  test('rotation: both secrets sign for the overlap, as two space-separated v1 signatures', async () => {
    const w = await createHook(a, '/ok/rotate')
    const r = await call(server.url, 'POST', `/v1/webhooks/${w.id}/rotate-secret`, { auth: a.key })
    expect(r.status).toBe(200)
    expect(r.body.secret).not.toBe(w.secret)
    expect(Date.parse(r.body.previousSecretValidUntil) - Date.now()).toBeGreaterThan(23.9 * 3600_000)
    await appendEventsIn(server.ctx, a.orgId, a.appId, 1)
    await eventually(() => rx.at('/ok/rotate').length >= 1)
    const got = rx.at('/ok/rotate')[0]
    const sigs = got.signature.split(' ')
    expect(sigs).toEqual([handSignature(r.body.secret, got.id, got.timestamp, got.body), handSignature(w.secret, got.id, got.timestamp, got.body)])
    expect(got.verified).toBe(true) // with the old secret (the receiver has not switched yet)
  })
})

describe('https targets', () => {
  test('TLS is verified: a receiver with a self-signed certificate gets no delivery, the attempt says why', async () => {
    const { join } = await import('node:path')
    const dir = join(import.meta.dir, 'fixtures', 'tls')
    let hits = 0
    const tls = Bun.serve({
      port: 0,
      hostname: '127.0.0.1',
      tls: { cert: Bun.file(join(dir, 'cert.pem')), key: Bun.file(join(dir, 'key.pem')) },
      fetch: () => (hits++, new Response('ok')),
    })
    try {
      const w = await call(server.url, 'POST', '/v1/webhooks', { auth: a.key, body: { url: `https://localhost:${tls.port}/hook` } })
      expect(w.status).toBe(201)
      await appendEventsIn(server.ctx, a.orgId, a.appId, 1)
      const [d] = await eventually(async () => {
        const l = await deliveries(a, w.body.id)
        return l[0]?.log.length >= 1 ? l : undefined
      }, 5000)
      expect(d.log[0].responseStatus).toBeNull()
      expect(d.log[0].error).toMatch(/connection failed: .*(CERT|SELF_SIGNED|certificate)/i)
      expect(hits).toBe(0)
      await call(server.url, 'DELETE', `/v1/webhooks/${w.body.id}`, { auth: a.key })
    } finally {
      tls.stop(true)
    }
  })
})

describe("one Org's hanging endpoints", () => {
  test("take at most half of the delivery pool: another Org's deliveries go out while they hang", async () => {
    // Attempts time out after 5 s; every endpoint of the greedy Org answers after 3 s.
    const own = await startTestServer({ FIXLOOP_WEBHOOK_ALLOW_PRIVATE: '1', FIXLOOP_WEBHOOK_TIMEOUT_SECONDS: '5', FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000' })
    const receiver = new Receiver()
    try {
      const greedy = await seedTenant(own.admin, {}, 'Greedy')
      const other = await seedTenant(own.admin, {}, 'Patient')
      // 20 endpoints, more than the pool's 16 attempts; created first, so first in the claim's table order.
      for (let i = 0; i < 20; i++) expect((await call(own.url, 'POST', '/v1/webhooks', { auth: greedy.key, body: { url: `${receiver.url}/slow/${i}` } })).status).toBe(201)
      expect((await call(own.url, 'POST', '/v1/webhooks', { auth: other.key, body: { url: `${receiver.url}/ok/patient` } })).status).toBe(201)
      await appendEventsIn(own.ctx, greedy.orgId, greedy.appId, 2)
      await own.services.webhookDispatcher.fanOut(greedy.orgId)
      await own.services.webhookDispatcher.sendDue()
      // Every slot the greedy Org may take is taken (its attempts hang for 3 s).
      await eventually(() => receiver.received.filter((r) => r.path.startsWith('/slow/')).length >= 8, 3_000)
      const started = Date.now()
      await appendEventsIn(own.ctx, other.orgId, other.appId, 1)
      await own.services.webhookDispatcher.fanOut(other.orgId)
      await own.services.webhookDispatcher.sendDue()
      const delivered = await eventually(() => receiver.at('/ok/patient')[0]?.at, 2_500)
      // Well before the first hanging attempt ends (3 s): it did not wait for a slot.
      expect(delivered - started).toBeLessThan(2_500)
      // The greedy Org never had more than half of the 16 attempts in flight.
      expect(receiver.received.filter((r) => r.path.startsWith('/slow/') && r.at < delivered).length).toBeLessThanOrEqual(8)
    } finally {
      await own.close()
      receiver.stop()
    }
  }, 30_000)

  test("three Orgs whose receivers never answer leave room for a fourth Org: its delivery goes out at once, not after their timeout", async () => {
    // Before, each Org could hold half of the 16 attempts: the first two hanging Orgs took all 16 for
    // the 5 s timeout, and every other Org's delivery waited for it.
    const own = await startTestServer({ FIXLOOP_WEBHOOK_ALLOW_PRIVATE: '1', FIXLOOP_WEBHOOK_TIMEOUT_SECONDS: '5', FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000' })
    const release = Promise.withResolvers<void>()
    const hits: string[] = []
    // Takes each request and never answers (until the test ends).
    const hang = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: async (req) => (hits.push(new URL(req.url).pathname), await release.promise, new Response('late')) })
    const receiver = new Receiver()
    try {
      const hanging = [await seedTenant(own.admin, {}, 'Hang A'), await seedTenant(own.admin, {}, 'Hang B'), await seedTenant(own.admin, {}, 'Hang C')]
      const healthy = await seedTenant(own.admin, {}, 'Healthy')
      // 10 endpoints each, more than half the pool; created first, so first in the claim's table order.
      for (const [n, t] of hanging.entries()) {
        for (let i = 0; i < 10; i++) expect((await call(own.url, 'POST', '/v1/webhooks', { auth: t.key, body: { url: `http://127.0.0.1:${hang.port}/${n}/${i}` } })).status).toBe(201)
      }
      expect((await call(own.url, 'POST', '/v1/webhooks', { auth: healthy.key, body: { url: `${receiver.url}/ok/healthy` } })).status).toBe(201)
      // The hanging Orgs' deliveries come one Org after the other, each taking what it may.
      for (const t of hanging) {
        await appendEventsIn(own.ctx, t.orgId, t.appId, 1)
        await own.services.webhookDispatcher.fanOut(t.orgId)
        await own.services.webhookDispatcher.sendDue()
      }
      // Their attempts are under way: 8 + 4 + 1 now (before: 8 + 8, the whole pool).
      await eventually(() => hits.length >= 13, 3_000)
      const started = Date.now()
      await appendEventsIn(own.ctx, healthy.orgId, healthy.appId, 1)
      await own.services.webhookDispatcher.fanOut(healthy.orgId)
      await own.services.webhookDispatcher.sendDue()
      const delivered = await eventually(() => receiver.at('/ok/healthy')[0]?.at, 8_000)
      // Well before the hanging attempts' 5 s timeout: it did not wait for a slot.
      expect(delivered - started).toBeLessThan(2_500)
      // Every hanging Org was served too, and the pool still has room.
      expect(new Set(hits.map((p) => p.split('/')[1])).size).toBe(3)
      expect(hits.length).toBeLessThan(16)
    } finally {
      release.resolve()
      await own.close()
      hang.stop(true)
      receiver.stop()
    }
  }, 30_000)
})

/**
 * Spec parts 5 and 7: which credential each route takes and every way a request is refused before it
 * is judged — missing/invalid Authorization, unknown or deleted App, Origin, public_disabled, revoked
 * keys (refused at once) — and the rate limits of part 8 with Retry-After.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { storeOf } from './dialects'
import { join } from 'node:path'
import { call, seedTenant, startTestServer, type Tenant, type TestServer } from './harness'
import { openDatabase } from '../src/db/sqlite/client'
import { createTenantsService } from '../src/modules/tenants/service'
import { ReplyLog, expectEnvelope, expectRateLimited, runScenario, secretForms, userToken, type Scenario } from './helpers-auth'
import { sqliteStorage } from '../src/db/sqlite/storage'
import { pgStorage } from '../src/db/pg/storage'
import { openPool } from '../src/db/pg/client-options'

const FAKE_ID = 'ffffffffffffffffffffffff'
const UNKNOWN_SK = 'sk_' + 'A'.repeat(43)
const UNKNOWN_PUB = 'pub_' + '0'.repeat(32)
const BODY = { text: 'The save button does nothing' }
const SHOP = 'https://shop.example'

let srv: TestServer
let t: Tenant
let other: Tenant
let restricted: { id: string; publicKey: string; signingSecret: string }
let privateApp: { id: string; publicKey: string; signingSecret: string }
let itemId: string
const log = new ReplyLog()

beforeAll(async () => {
  // A generous multiplier so the many requests of this suite never meet a rate limit by accident.
  srv = await startTestServer({ FIXLOOP_RATE_LIMIT_MULTIPLIER: '100' })
  t = await seedTenant(srv.admin)
  other = await seedTenant(srv.admin, {}, 'Other')
  restricted = await srv.admin.createApp(t.orgId, { name: 'Shop', allowedOrigins: [SHOP, 'https://admin.shop.example'] })
  privateApp = await srv.admin.createApp(t.orgId, { name: 'Private', publicSubmissionEnabled: false })
  const r = await call(srv.url, 'POST', '/v1/feedback', { auth: t.pub, body: BODY })
  expect(r.status).toBe(201)
  itemId = r.body.id
})

afterAll(async () => {
  const secrets = [t, other].flatMap((x) => [x.key, ...secretForms(x.secret)])
  secrets.push(...secretForms(restricted.signingSecret), ...secretForms(privateApp.signingSecret))
  log.expectNoLeak(secrets)
  log.expectNo5xx()
  log.expectRequestIds()
  await srv.close()
})

describe('POST /v1/feedback (widget route) refuses bad credentials', () => {
  const cases = (): Scenario[] => [
    { name: 'no Authorization header', method: 'POST', path: '/v1/feedback', body: BODY, status: 401, code: 'missing_authorization' },
    { name: 'Basic scheme', method: 'POST', path: '/v1/feedback', headers: { authorization: `Basic ${btoa('a:b')}` }, body: BODY, status: 401, code: 'invalid_authorization' },
    { name: 'key without the Bearer scheme', method: 'POST', path: '/v1/feedback', headers: { authorization: t.pub }, body: BODY, status: 401, code: 'invalid_authorization' },
    { name: 'Bearer with no key', method: 'POST', path: '/v1/feedback', headers: { authorization: 'Bearer' }, body: BODY, status: 401, code: 'invalid_authorization' },
    { name: 'Bearer with two tokens', method: 'POST', path: '/v1/feedback', headers: { authorization: `Bearer ${t.pub} ${t.pub}` }, body: BODY, status: 401, code: 'invalid_authorization' },
    { name: 'sk_ key on the widget route', method: 'POST', path: '/v1/feedback', auth: t.key, body: BODY, status: 401, code: 'invalid_authorization', mustNotContain: [t.key] },
    { name: 'a key with neither prefix', method: 'POST', path: '/v1/feedback', auth: 'abc123', body: BODY, status: 401, code: 'invalid_authorization' },
    { name: 'unknown pub_ key', method: 'POST', path: '/v1/feedback', auth: UNKNOWN_PUB, body: BODY, status: 401, code: 'unknown_app' },
    { name: 'pub_ key with a typo', method: 'POST', path: '/v1/feedback', auth: t.pub.slice(0, -1) + (t.pub.endsWith('0') ? '1' : '0'), body: BODY, status: 401, code: 'unknown_app' },
    {
      name: 'auth is judged before the body: no key and an invalid body is 401, not 400',
      method: 'POST',
      path: '/v1/feedback',
      body: { nope: true },
      status: 401,
      code: 'missing_authorization',
    },
    { name: 'unknown key and invalid body is 401', method: 'POST', path: '/v1/feedback', auth: UNKNOWN_PUB, body: { text: '' }, status: 401, code: 'unknown_app' },
    // Origin (spec 7: missing Origin is refused too when the list is non-empty).
    { name: 'restricted App, no Origin', method: 'POST', path: '/v1/feedback', auth: restricted.publicKey, body: BODY, status: 403, code: 'origin_not_allowed' },
    {
      name: 'restricted App, wrong Origin',
      method: 'POST',
      path: '/v1/feedback',
      auth: restricted.publicKey,
      headers: { origin: 'https://evil.example' },
      body: BODY,
      status: 403,
      code: 'origin_not_allowed',
    },
    {
      name: 'restricted App, Origin differing only by port',
      method: 'POST',
      path: '/v1/feedback',
      auth: restricted.publicKey,
      headers: { origin: 'https://shop.example:8443' },
      body: BODY,
      status: 403,
      code: 'origin_not_allowed',
    },
    {
      name: 'restricted App, Origin differing only by scheme',
      method: 'POST',
      path: '/v1/feedback',
      auth: restricted.publicKey,
      headers: { origin: 'http://shop.example' },
      body: BODY,
      status: 403,
      code: 'origin_not_allowed',
    },
    {
      name: 'restricted App, an allowed subdomain does not open the parent',
      method: 'POST',
      path: '/v1/feedback',
      auth: restricted.publicKey,
      headers: { origin: 'https://evil.shop.example' },
      body: BODY,
      status: 403,
      code: 'origin_not_allowed',
    },
    { name: 'restricted App, allowed Origin', method: 'POST', path: '/v1/feedback', auth: restricted.publicKey, headers: { origin: SHOP }, body: BODY, status: 201 },
    {
      name: 'restricted App, second allowed Origin',
      method: 'POST',
      path: '/v1/feedback',
      auth: restricted.publicKey,
      headers: { origin: 'https://admin.shop.example' },
      body: BODY,
      status: 201,
    },
    { name: 'open App, no Origin (server-side submit)', method: 'POST', path: '/v1/feedback', auth: t.pub, body: BODY, status: 201 },
    { name: 'open App, any Origin', method: 'POST', path: '/v1/feedback', auth: t.pub, headers: { origin: 'https://anything.example' }, body: BODY, status: 201 },
    // publicSubmissionEnabled false and no user token.
    {
      name: 'private App without a user token',
      method: 'POST',
      path: '/v1/feedback',
      auth: privateApp.publicKey,
      body: BODY,
      status: 403,
      code: 'public_disabled',
      mustNotContain: secretForms(privateApp.signingSecret),
    },
    {
      name: 'private App with body identity but no token is still refused',
      method: 'POST',
      path: '/v1/feedback',
      auth: privateApp.publicKey,
      body: { ...BODY, identity: { externalUserId: 'u1', email: 'u1@example.com' } },
      status: 403,
      code: 'public_disabled',
    },
  ]

  test('scenario table', async () => {
    for (const s of cases()) await runScenario(srv.url, s, log)
  })

  test('a private App accepts the same request with a valid user token', async () => {
    const token = await userToken(privateApp.signingSecret, privateApp.id)
    const r = await log.call(srv.url, 'POST', '/v1/feedback', { auth: privateApp.publicKey, headers: { 'x-service-user-token': token }, body: BODY })
    expect(r.status).toBe(201)
  })

  test('origin_not_allowed does not reveal the allowed list', async () => {
    const r = await log.call(srv.url, 'POST', '/v1/feedback', { auth: restricted.publicKey, headers: { origin: 'https://evil.example' }, body: BODY })
    expect(r.status).toBe(403)
    expect(r.text).not.toContain('admin.shop.example')
  })

  test('a deleted App is refused at once with unknown_app', async () => {
    const app = await srv.admin.createApp(t.orgId, { name: 'Doomed' })
    const before = await log.call(srv.url, 'POST', '/v1/feedback', { auth: app.publicKey, body: BODY })
    expect(before.status).toBe(201)
    await srv.admin.deleteApp(t.orgId, app.id)
    const after = await log.call(srv.url, 'POST', '/v1/feedback', { auth: app.publicKey, body: BODY })
    expect(after.status).toBe(401)
    expectEnvelope(after, 'unknown_app')
    // A token for the deleted App does not bring it back.
    const token = await userToken(app.signingSecret, app.id)
    const withToken = await log.call(srv.url, 'POST', '/v1/feedback', { auth: app.publicKey, headers: { 'x-service-user-token': token }, body: BODY })
    expect(withToken.status).toBe(401)
    expectEnvelope(withToken, 'unknown_app')
  })

  test('turning public submission off applies to the very next request', async () => {
    const app = await srv.admin.createApp(t.orgId, { name: 'Toggle' })
    expect((await log.call(srv.url, 'POST', '/v1/feedback', { auth: app.publicKey, body: BODY })).status).toBe(201)
    await srv.admin.updateApp(t.orgId, app.id, { publicSubmissionEnabled: false })
    const r = await log.call(srv.url, 'POST', '/v1/feedback', { auth: app.publicKey, body: BODY })
    expect(r.status).toBe(403)
    expectEnvelope(r, 'public_disabled')
    await srv.admin.updateApp(t.orgId, app.id, { publicSubmissionEnabled: true, allowedOrigins: [SHOP] })
    const noOrigin = await log.call(srv.url, 'POST', '/v1/feedback', { auth: app.publicKey, body: BODY })
    expect(noOrigin.status).toBe(403)
    expectEnvelope(noOrigin, 'origin_not_allowed')
    expect((await log.call(srv.url, 'POST', '/v1/feedback', { auth: app.publicKey, headers: { origin: SHOP }, body: BODY })).status).toBe(201)
  })
})

/** The sk routes of spec part 4, each with a request that succeeds given a good key. */
function skRoutes(): { name: string; method: string; path: string; body?: unknown; okStatus: number }[] {
  return [
    { name: 'GET /v1/apps', method: 'GET', path: '/v1/apps', okStatus: 200 },
    { name: 'GET /v1/feedback', method: 'GET', path: '/v1/feedback', okStatus: 200 },
    { name: 'GET /v1/feedback/:id', method: 'GET', path: `/v1/feedback/${itemId}`, okStatus: 200 },
    // archived is reachable from every non-terminal state; the good-key check runs once at the end.
    { name: 'PATCH /v1/feedback/:id', method: 'PATCH', path: `/v1/feedback/${itemId}`, body: { status: 'archived' }, okStatus: 200 },
    { name: 'POST /v1/tokens/mint', method: 'POST', path: `/v1/tokens/mint?appId=${t.appId}`, body: { sub: 'user-1' }, okStatus: 200 },
  ]
}

describe('sk routes refuse bad credentials', () => {
  test('scenario table: every route × every bad credential', async () => {
    for (const route of skRoutes()) {
      const bad: Omit<Scenario, 'method' | 'path' | 'body'>[] = [
        { name: `${route.name}: no Authorization`, status: 401, code: 'missing_authorization' },
        { name: `${route.name}: Basic scheme`, headers: { authorization: `Basic ${btoa('x:y')}` }, status: 401, code: 'invalid_authorization' },
        { name: `${route.name}: key without Bearer`, headers: { authorization: t.key }, status: 401, code: 'invalid_authorization', mustNotContain: [t.key] },
        { name: `${route.name}: a space inside the key`, headers: { authorization: 'Bearer sk_a b' }, status: 401, code: 'invalid_authorization' },
        { name: `${route.name}: pub_ key`, auth: t.pub, status: 401, code: 'invalid_authorization' },
        { name: `${route.name}: unknown sk_ key`, auth: UNKNOWN_SK, status: 401, code: 'invalid_authorization', mustNotContain: [UNKNOWN_SK] },
        { name: `${route.name}: truncated real sk_ key`, auth: t.key.slice(0, -2), status: 401, code: 'invalid_authorization', mustNotContain: [t.key.slice(0, -2)] },
        { name: `${route.name}: sk_ key with a trailing character`, auth: t.key + 'x', status: 401, code: 'invalid_authorization' },
      ]
      for (const b of bad) await runScenario(srv.url, { ...b, method: route.method, path: route.path, body: route.body }, log)
    }
  })

  test('auth is judged before validation on sk routes too', async () => {
    const cases: Scenario[] = [
      { name: 'PATCH with bad id and no key', method: 'PATCH', path: '/v1/feedback/not-an-id', body: { status: 'archived' }, status: 401, code: 'missing_authorization' },
      { name: 'GET with bad id and pub_ key', method: 'GET', path: '/v1/feedback/not-an-id', auth: t.pub, status: 401, code: 'invalid_authorization' },
      { name: 'mint with bad body and unknown key', method: 'POST', path: `/v1/tokens/mint?appId=${t.appId}`, auth: UNKNOWN_SK, body: { nope: 1 }, status: 401, code: 'invalid_authorization' },
      { name: 'list with bad limit and no key', method: 'GET', path: '/v1/feedback?limit=0', status: 401, code: 'missing_authorization' },
    ]
    for (const s of cases) await runScenario(srv.url, s, log)
  })

  test('a good key passes on every route', async () => {
    for (const route of skRoutes()) {
      const r = await log.call(srv.url, route.method, route.path, { auth: t.key, body: route.body })
      expect({ route: route.name, status: r.status }).toEqual({ route: route.name, status: route.okStatus })
    }
  })

  test('a revoked key is refused immediately on every route', async () => {
    const fresh = await srv.admin.createKey(t.orgId, 'soon revoked')
    const ok = await log.call(srv.url, 'GET', '/v1/apps', { auth: fresh.key })
    expect(ok.status).toBe(200)
    await srv.admin.revokeKey(t.orgId, fresh.id)
    for (const route of skRoutes()) {
      await runScenario(
        srv.url,
        { name: `${route.name}: revoked key`, method: route.method, path: route.path, auth: fresh.key, body: route.body, status: 401, code: 'invalid_authorization', mustNotContain: [fresh.key] },
        log,
      )
    }
    // The Org's other key is untouched.
    expect((await log.call(srv.url, 'GET', '/v1/apps', { auth: t.key })).status).toBe(200)
  })

  test('a key revoked and an App deleted from another connection (as the CLI does) are refused at once', async () => {
    // The admin CLI is another process with its own database connection: emulate it with a second one
    // (a second pool in PostgreSQL mode).
    const other = srv.ctx.config.databaseUrl ? pgStorage(openPool(srv.ctx.config.databaseUrl, 1)) : undefined
    const file = other ? undefined : openDatabase(join(srv.dataDir, 'fixloop.db'))
    try {
      const cli = createTenantsService({ ...srv.ctx, store: storeOf(other ?? sqliteStorage(file!.sqlite, file!.db), srv.ctx.clock) })
      const fresh = await cli.createKey(t.orgId, 'cli key')
      const app = await cli.createApp(t.orgId, { name: 'CLI app' })
      expect((await log.call(srv.url, 'GET', '/v1/apps', { auth: fresh.key })).status).toBe(200)
      expect((await log.call(srv.url, 'POST', '/v1/feedback', { auth: app.publicKey, body: BODY })).status).toBe(201)
      await cli.revokeKey(t.orgId, fresh.id)
      await cli.deleteApp(t.orgId, app.id)
      const r = await log.call(srv.url, 'GET', '/v1/apps', { auth: fresh.key })
      expect(r.status).toBe(401)
      expectEnvelope(r, 'invalid_authorization')
      const w = await log.call(srv.url, 'POST', '/v1/feedback', { auth: app.publicKey, body: BODY })
      expect(w.status).toBe(401)
      expectEnvelope(w, 'unknown_app')
    } finally {
      file?.sqlite.close()
      await other?.pool.end()
    }
  })

  test('another Org\'s valid key is a valid key, scoped to its own Org', async () => {
    const r = await log.call(srv.url, 'GET', '/v1/apps', { auth: other.key })
    expect(r.status).toBe(200)
    expect(r.body.data.map((a: { id: string }) => a.id)).toEqual([other.appId])
  })
})

describe('rate limits (spec part 8) with FIXLOOP_RATE_LIMIT_MULTIPLIER=0.05', () => {
  // 0.05 × the spec's ceilings: public submit bucket 3, private submit 6, sk key 5.
  let rl: TestServer
  let a: Tenant
  const rlLog = new ReplyLog()
  const xff = (ip: string) => ({ 'x-forwarded-for': ip })

  beforeAll(async () => {
    rl = await startTestServer({ FIXLOOP_RATE_LIMIT_MULTIPLIER: '0.05', FIXLOOP_TRUST_PROXY: '1' })
    a = await seedTenant(rl.admin)
  })
  afterAll(async () => {
    rlLog.expectNo5xx()
    rlLog.expectRequestIds()
    rlLog.expectNoLeak([a.key, ...secretForms(a.secret)])
    await rl.close()
  })

  test('public bucket: 3 submissions pass, the 4th is 429 with Retry-After; other IPs and Apps are unaffected', async () => {
    for (let i = 0; i < 3; i++) {
      const r = await rlLog.call(rl.url, 'POST', '/v1/feedback', { auth: a.pub, headers: xff('203.0.113.1'), body: BODY })
      expect(r.status).toBe(201)
    }
    const limited = await rlLog.call(rl.url, 'POST', '/v1/feedback', { auth: a.pub, headers: xff('203.0.113.1'), body: BODY })
    const retry = expectRateLimited(limited)
    // One token refills in 1 / (1 × 0.05) = 20 s.
    expect(retry).toBeLessThanOrEqual(20)
    // Still limited on the next try: a 429 does not reset the bucket.
    expectRateLimited(await rlLog.call(rl.url, 'POST', '/v1/feedback', { auth: a.pub, headers: xff('203.0.113.1'), body: BODY }))

    // Another address on the same App has its own bucket.
    expect((await rlLog.call(rl.url, 'POST', '/v1/feedback', { auth: a.pub, headers: xff('203.0.113.2'), body: BODY })).status).toBe(201)
    // The same address on another App has its own bucket.
    const app2 = await rl.admin.createApp(a.orgId, { name: 'Second' })
    expect((await rlLog.call(rl.url, 'POST', '/v1/feedback', { auth: app2.publicKey, headers: xff('203.0.113.1'), body: BODY })).status).toBe(201)
    // The trusted hop is the last one: a client cannot escape its bucket with a forged first hop.
    const spoofed = await rlLog.call(rl.url, 'POST', '/v1/feedback', { auth: a.pub, headers: xff('198.51.100.7, 203.0.113.1'), body: BODY })
    expectRateLimited(spoofed)
  })

  test('private bucket is per (sub, App), not per address: 6 pass, the 7th is 429', async () => {
    const app = await rl.admin.createApp(a.orgId, { name: 'Members', publicSubmissionEnabled: false })
    const alice = await userToken(app.signingSecret, app.id, 'alice')
    for (let i = 0; i < 6; i++) {
      // A different address each time: the private bucket does not care.
      const r = await rlLog.call(rl.url, 'POST', '/v1/feedback', { auth: app.publicKey, headers: { ...xff(`192.0.2.${i + 1}`), 'x-service-user-token': alice }, body: BODY })
      expect(r.status).toBe(201)
    }
    expectRateLimited(await rlLog.call(rl.url, 'POST', '/v1/feedback', { auth: app.publicKey, headers: { ...xff('192.0.2.99'), 'x-service-user-token': alice }, body: BODY }))
    // Another user of the same App, from the same address, is not affected.
    const bob = await userToken(app.signingSecret, app.id, 'bob')
    expect((await rlLog.call(rl.url, 'POST', '/v1/feedback', { auth: app.publicKey, headers: { ...xff('192.0.2.99'), 'x-service-user-token': bob }, body: BODY })).status).toBe(201)
  })

  test('a rejected user token does not spend the user\'s bucket', async () => {
    const app = await rl.admin.createApp(a.orgId, { name: 'Members2', publicSubmissionEnabled: false })
    const bad = await userToken('00'.repeat(32), app.id, 'carol')
    for (let i = 0; i < 8; i++) {
      const r = await rlLog.call(rl.url, 'POST', '/v1/feedback', { auth: app.publicKey, headers: { 'x-service-user-token': bad }, body: BODY })
      expect(r.status).toBe(401)
    }
    const good = await userToken(app.signingSecret, app.id, 'carol')
    expect((await rlLog.call(rl.url, 'POST', '/v1/feedback', { auth: app.publicKey, headers: { 'x-service-user-token': good }, body: BODY })).status).toBe(201)
  })

  test('sk bucket is per key: 5 requests pass, the 6th is 429; another key of the same Org is unaffected', async () => {
    const k1 = await rl.admin.createKey(a.orgId, 'k1')
    const k2 = await rl.admin.createKey(a.orgId, 'k2')
    for (let i = 0; i < 5; i++) expect((await rlLog.call(rl.url, 'GET', '/v1/apps', { auth: k1.key })).status).toBe(200)
    // Every sk route draws from the same per-key bucket.
    const limited = await rlLog.call(rl.url, 'GET', '/v1/feedback', { auth: k1.key, headers: xff('203.0.113.50') })
    const retry = expectRateLimited(limited)
    // Refill is 10/s × 0.05 = 0.5 token/s: the next token is at most 2 s away.
    expect(retry).toBeLessThanOrEqual(2)
    expect(limited.text).not.toContain(k1.key)
    expect((await rlLog.call(rl.url, 'GET', '/v1/apps', { auth: k2.key })).status).toBe(200)
    rlLog.expectNoLeak([k1.key, k2.key])
  })

  test('the sk bucket refills continuously: after Retry-After the key works again', async () => {
    const k = await rl.admin.createKey(a.orgId, 'refill')
    let limited
    for (let i = 0; i < 10; i++) {
      const r = await rlLog.call(rl.url, 'GET', '/v1/apps', { auth: k.key })
      if (r.status === 429) {
        limited = r
        break
      }
      expect(r.status).toBe(200)
    }
    expect(limited).toBeDefined()
    const retry = expectRateLimited(limited!)
    await Bun.sleep(retry * 1000 + 100)
    expect((await rlLog.call(rl.url, 'GET', '/v1/apps', { auth: k.key })).status).toBe(200)
  })
})

/**
 * Idempotency-Keys belong to the submitter (issue 10.7): App + token `sub` in private mode, App + client
 * address in public mode. Another user's identical key and body is a new report, never a replay of
 * someone else's; the same submitter's retry is still a replay.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, seedTenant, startTestServer, type Reply, type Tenant, type TestServer } from './harness'
import { userToken } from './helpers-auth'
import { dbRow, dbRows } from './sqlite-of'

let srv: TestServer
let t: Tenant

beforeAll(async () => {
  // Behind a trusted proxy the client address comes from X-Forwarded-For, so one test can be many clients.
  srv = await startTestServer({ FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000', FIXLOOP_TRUST_PROXY: 'true' }, { worker: { autoStart: false } })
  t = await seedTenant(srv.admin)
})
afterAll(() => srv.close())

const rows = async (): Promise<number> => (await dbRow<{ n: number }>(srv.ctx, 'SELECT COUNT(*) AS n FROM feedback WHERE app_id = ?', [t.appId]))!.n
const replayed = (r: Reply) => r.headers.get('idempotent-replayed') === 'true'
const post = (headers: Record<string, string>, body: Record<string, unknown> = { text: 'The save button does nothing' }) =>
  call(srv.url, 'POST', '/v1/feedback', { auth: t.pub, body, headers: { 'idempotency-key': 'save-1', ...headers } })

describe('public mode: scoped by client address', () => {
  test('two clients, same key and body: two reports; each client retry is a replay of its own', async () => {
    const before = await rows()
    const a = await post({ 'x-forwarded-for': '198.51.100.7' })
    const b = await post({ 'x-forwarded-for': '198.51.100.8' })
    expect([a.status, b.status]).toEqual([201, 201])
    expect(replayed(b)).toBe(false)
    expect(b.body.id).not.toBe(a.body.id)
    const aAgain = await post({ 'x-forwarded-for': '198.51.100.7' })
    expect(replayed(aAgain)).toBe(true)
    expect(aAgain.body.id).toBe(a.body.id)
    expect(await rows()).toBe(before + 2)
  })

  test("another client's different body under the same key is not idempotency_key_reused", async () => {
    const first = await post({ 'x-forwarded-for': '203.0.113.1', 'idempotency-key': 'shared' }, { text: 'one' })
    const other = await post({ 'x-forwarded-for': '203.0.113.2', 'idempotency-key': 'shared' }, { text: 'two' })
    expect([first.status, other.status]).toEqual([201, 201])
    const reused = await post({ 'x-forwarded-for': '203.0.113.1', 'idempotency-key': 'shared' }, { text: 'three' })
    expect(reused.status).toBe(409)
    expect(reused.body.error.code).toBe('idempotency_key_reused')
  })
})

describe('private mode: scoped by the token sub', () => {
  test('two users from one address, same key and body: two reports; a user retry is a replay', async () => {
    const before = await rows()
    const alice = { 'x-service-user-token': await userToken(t.secret, t.appId, 'alice'), 'x-forwarded-for': '192.0.2.10' }
    const bob = { 'x-service-user-token': await userToken(t.secret, t.appId, 'bob'), 'x-forwarded-for': '192.0.2.10' }
    const a = await post(alice)
    const b = await post(bob)
    expect([a.status, b.status]).toEqual([201, 201])
    expect(b.body.id).not.toBe(a.body.id)
    const bAgain = await post({ ...bob, 'x-forwarded-for': '192.0.2.99' })
    expect(replayed(bAgain)).toBe(true)
    expect(bAgain.body.id).toBe(b.body.id)
    expect(await rows()).toBe(before + 2)
  })

  test('the stored key does not hold the client address', async () => {
    const keys = await dbRows<{ key: string }>(srv.ctx, 'SELECT key FROM idempotency_keys')
    expect(keys.length).toBeGreaterThan(0)
    for (const { key } of keys) expect(key).not.toContain('198.51.100')
  })
})

/**
 * Idempotency-Key on POST /v1/feedback: a retry with the same key and body within 24 h gets the first
 * response and stores nothing new; a different body under the same key is refused.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ManualClock } from '../src/core/clock'
import { seedTenant, startTestServer, type Reply, type Tenant, type TestServer } from './harness'
import { submit } from './helpers-lifecycle'
import { dbRow } from './sqlite-of'

const DAY_MS = 24 * 3600 * 1000
const clock = new ManualClock(Date.UTC(2025, 2, 1, 9, 0, 0))
let srv: TestServer
let t: Tenant
let appB: { id: string; publicKey: string }

beforeAll(async () => {
  srv = await startTestServer({ FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000' }, { clock, worker: { autoStart: false } })
  t = await seedTenant(srv.admin)
  appB = await srv.admin.createApp(t.orgId, { name: 'Second App' })
})
afterAll(() => srv.close())

const rowsOf = async (appId: string): Promise<number> => (await dbRow<{ n: number }>(srv.ctx, 'SELECT COUNT(*) AS n FROM feedback WHERE app_id = ?', [appId]))!.n
const withKey = (key: string) => ({ 'idempotency-key': key })
const replayed = (r: Reply) => r.headers.get('idempotent-replayed')

describe('Idempotency-Key', () => {
  test('same key and body: the same 201 body, one row, Idempotent-Replayed: true on the retry', async () => {
    const before = await rowsOf(t.appId)
    const body = { text: 'Retry me', severity: 'high' }
    const first = await submit(srv.url, t.pub, body, withKey('retry-1'))
    expect(first.status).toBe(201)
    expect(replayed(first)).toBeNull()
    const second = await submit(srv.url, t.pub, body, withKey('retry-1'))
    expect(second.status).toBe(201)
    expect(second.body).toEqual(first.body)
    expect(replayed(second)).toBe('true')
    const third = await submit(srv.url, t.pub, body, withKey('retry-1'))
    expect(third.body).toEqual(first.body)
    expect(await rowsOf(t.appId)).toBe(before + 1)
    // A request without a key is never deduplicated.
    const plain = await submit(srv.url, t.pub, body)
    expect(plain.body.id).not.toBe(first.body.id)
    expect(await rowsOf(t.appId)).toBe(before + 2)
  })

  test('same key, different body: 409 idempotency_key_reused, nothing stored', async () => {
    const first = await submit(srv.url, t.pub, { text: 'original' }, withKey('reuse-1'))
    expect(first.status).toBe(201)
    const before = await rowsOf(t.appId)
    const other = await submit(srv.url, t.pub, { text: 'something else' }, withKey('reuse-1'))
    expect(other.status).toBe(409)
    expect(other.body.error.code).toBe('idempotency_key_reused')
    expect(await rowsOf(t.appId)).toBe(before)
    // The key still answers for the original body.
    const again = await submit(srv.url, t.pub, { text: 'original' }, withKey('reuse-1'))
    expect(again.body).toEqual(first.body)
  })

  test('the same key on another App is independent', async () => {
    const body = { text: 'same words, two Apps' }
    const a = await submit(srv.url, t.pub, body, withKey('shared-key'))
    const b = await submit(srv.url, appB.publicKey, body, withKey('shared-key'))
    expect(a.status).toBe(201)
    expect(b.status).toBe(201)
    expect(b.body.id).not.toBe(a.body.id)
    expect(replayed(b)).toBeNull()
    // And a different body on the other App is not "reuse".
    const c = await submit(srv.url, appB.publicKey, { text: 'other' }, withKey('shared-key-2'))
    const d = await submit(srv.url, t.pub, { text: 'different' }, withKey('shared-key-2'))
    expect([c.status, d.status]).toEqual([201, 201])
  })

  test('20 concurrent identical requests with one key: exactly one row, every response the same id', async () => {
    const before = await rowsOf(t.appId)
    const body = { text: 'double-click storm' }
    const replies = await Promise.all(Array.from({ length: 20 }, () => submit(srv.url, t.pub, body, withKey('storm-1'))))
    expect(replies.map((r) => r.status)).toEqual(Array(20).fill(201))
    expect(new Set(replies.map((r) => r.body.id)).size).toBe(1)
    expect(replies.filter((r) => replayed(r) === null)).toHaveLength(1)
    expect(await rowsOf(t.appId)).toBe(before + 1)
  })

  test('concurrent requests with one key but two bodies: one row; the losers are replays or 409', async () => {
    const before = await rowsOf(t.appId)
    const replies = await Promise.all(
      Array.from({ length: 20 }, (_, i) => submit(srv.url, t.pub, { text: i % 2 ? 'body A' : 'body B' }, withKey('storm-2'))),
    )
    expect(await rowsOf(t.appId)).toBe(before + 1)
    const ok = replies.filter((r) => r.status === 201)
    const refused = replies.filter((r) => r.status === 409)
    expect(ok.length + refused.length).toBe(20)
    expect(ok).toHaveLength(10)
    expect(new Set(ok.map((r) => r.body.id)).size).toBe(1)
    expect(refused.every((r) => r.body.error.code === 'idempotency_key_reused')).toBe(true)
  })

  test('20 concurrent requests with 20 keys: 20 rows', async () => {
    const before = await rowsOf(t.appId)
    const replies = await Promise.all(Array.from({ length: 20 }, (_, i) => submit(srv.url, t.pub, { text: 'same text' }, withKey(`many-${i}`))))
    expect(new Set(replies.map((r) => r.body.id)).size).toBe(20)
    expect(await rowsOf(t.appId)).toBe(before + 20)
  })

  test('after 24 h the key is forgotten', async () => {
    const body = { text: 'remember me for a day' }
    const first = await submit(srv.url, t.pub, body, withKey('day-1'))
    expect(first.status).toBe(201)
    clock.advance(DAY_MS - 1)
    const stillRemembered = await submit(srv.url, t.pub, body, withKey('day-1'))
    expect(stillRemembered.body.id).toBe(first.body.id)
    expect(replayed(stillRemembered)).toBe('true')
    clock.advance(1)
    const before = await rowsOf(t.appId)
    const forgotten = await submit(srv.url, t.pub, body, withKey('day-1'))
    expect(forgotten.status).toBe(201)
    expect(forgotten.body.id).not.toBe(first.body.id)
    expect(replayed(forgotten)).toBeNull()
    expect(await rowsOf(t.appId)).toBe(before + 1)
    // The new submission is remembered in turn, and a different body is free to reuse an expired key.
    expect((await submit(srv.url, t.pub, body, withKey('day-1'))).body.id).toBe(forgotten.body.id)
    clock.advance(DAY_MS)
    expect((await submit(srv.url, t.pub, { text: 'new body' }, withKey('day-1'))).status).toBe(201)
  })

  test('a refused request does not use up its key', async () => {
    const bad = await submit(srv.url, t.pub, { text: '' }, withKey('after-400'))
    expect(bad.status).toBe(400)
    const good = await submit(srv.url, t.pub, { text: 'now valid' }, withKey('after-400'))
    expect(good.status).toBe(201)
    expect(replayed(good)).toBeNull()
  })

  test('key validation: 255 printable characters is fine; 256, or a space, is 400 invalid_body and stores nothing', async () => {
    const before = await rowsOf(t.appId)
    const ok = await submit(srv.url, t.pub, { text: 'long key' }, withKey('k'.repeat(255)))
    expect(ok.status).toBe(201)
    for (const key of ['k'.repeat(256), 'two words']) {
      const r = await submit(srv.url, t.pub, { text: 'long key' }, withKey(key))
      expect(r.status).toBe(400)
      expect(r.body.error.code).toBe('invalid_body')
    }
    expect(await rowsOf(t.appId)).toBe(before + 1)
  })
})

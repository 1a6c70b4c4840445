/**
 * An Idempotency-Key retry whose JSON members come in another order is the same request (found by an
 * attack on the API): `{"text","severity"}` then `{"severity","text"}` under one key was refused
 * `409 idempotency_key_reused`, though a JSON object's members have no order (RFC 8259) and a retry that
 * differs only in spacing was already replayed. The body's hash is now taken with its members sorted at
 * every level; a key stored before (hash of the members in the order sent) still replays its answer.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { call, seedTenant, startTestServer, type Tenant, type TestServer } from './harness'
import { dbRow, dbRun } from './sqlite-of'
import { requestHashes } from '../src/modules/feedback/service'

let srv: TestServer
let t: Tenant
beforeAll(async () => {
  srv = await startTestServer({ FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000' })
  t = await seedTenant(srv.admin)
})
afterAll(() => srv.close())

const send = (raw: string, key: string) => call(srv.url, 'POST', '/v1/feedback', { auth: t.pub, rawBody: raw, headers: { 'content-type': 'application/json', 'idempotency-key': key } })
const count = async () => (await dbRow<{ n: number }>(srv.ctx, 'SELECT COUNT(*) AS n FROM feedback WHERE app_id = ?', [t.appId]))!.n

test('members in another order, at any depth: the first answer, replayed, and one report', async () => {
  const before = await count()
  const first = await send('{"text":"Order me","severity":"low","metadata":{"plan":"pro","seats":3},"viewport":{"w":1,"h":2,"dpr":1}}', 'order-1')
  expect(first.status).toBe(201)
  const again = await send('{"viewport":{"dpr":1,"h":2,"w":1},"metadata":{"seats":3,"plan":"pro"},"severity":"low","text":"Order me"}', 'order-1')
  expect(again.status).toBe(201)
  expect(again.body).toEqual(first.body)
  expect(again.headers.get('idempotent-replayed')).toBe('true')
  expect(await count()).toBe(before + 1)
})

test('a different body is still refused, whatever its order; array order still counts', async () => {
  expect((await send('{"text":"Keep order","consoleLogs":[{"level":"log","message":"a","ts":1},{"level":"log","message":"b","ts":2}]}', 'order-2')).status).toBe(201)
  const swapped = await send('{"text":"Keep order","consoleLogs":[{"level":"log","message":"b","ts":2},{"level":"log","message":"a","ts":1}]}', 'order-2')
  expect(swapped.status).toBe(409)
  expect(swapped.body.error.code).toBe('idempotency_key_reused')
  expect((await send('{"severity":"high","text":"Keep order"}', 'order-2')).status).toBe(409)
})

test('a key stored with the earlier hash (members in the order sent) still replays', async () => {
  const raw = '{"text":"Stored before","severity":"medium"}'
  const first = await send(raw, 'order-3')
  expect(first.status).toBe(201)
  // What an earlier version stored for this key: the hash of the members in the order sent.
  const { orderedHash, requestHash } = requestHashes(JSON.parse(raw))
  expect(orderedHash).not.toBe(requestHash)
  await dbRun(srv.ctx, "UPDATE idempotency_keys SET request_hash = ? WHERE key LIKE '%:order-3'", [orderedHash])
  expect((await dbRow<{ n: number }>(srv.ctx, 'SELECT COUNT(*) AS n FROM idempotency_keys WHERE request_hash = ?', [orderedHash]))!.n).toBe(1)
  const again = await send(raw, 'order-3')
  expect(again.status).toBe(201)
  expect(again.body).toEqual(first.body)
})

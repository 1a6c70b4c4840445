/**
 * CONTRACT.md writes the event URLs as `GET /v1/events/stream?after=<seq>&types=&appId=` and
 * `GET /v1/events?after=<seq>&limit=N&types=a,b&appId=`. A client filling them in with no filter sends
 * `types=` and `appId=` empty: that means every type and every App (it was refused with 400, an outside
 * audit found). Every other empty value keeps its answer: an empty number or status is no value (400).
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { call, seedTenant, startTestServer, type Tenant, type TestServer } from './harness'
import { appendEventsIn } from './events-helpers'

let server: TestServer
let t: Tenant

beforeAll(async () => {
  server = await startTestServer({ FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000' })
  t = await seedTenant(server.admin, {}, 'Empty')
  await appendEventsIn(server.ctx, t.orgId, t.appId, 3)
})
afterAll(async () => {
  await server?.close()
})

test("the contract's stream URL with empty filters opens the stream and sends every event", async () => {
  const ctl = new AbortController()
  const r = await fetch(`${server.url}/v1/events/stream?after=0&types=&appId=`, { headers: { authorization: `Bearer ${t.key}` }, signal: ctl.signal })
  try {
    expect(r.status).toBe(200)
    expect(r.headers.get('content-type')).toStartWith('text/event-stream')
    const reader = r.body!.getReader()
    let text = ''
    while ((text.match(/^id: /gm) ?? []).length < 3) text += new TextDecoder().decode((await reader.read()).value)
    expect((text.match(/^id: \d+$/gm) ?? []).length).toBe(3)
  } finally {
    ctl.abort()
  }
})

test('the pull feed with empty filters answers as without them', async () => {
  const a = await call(server.url, 'GET', '/v1/events?after=0&limit=10&types=&appId=', { auth: t.key })
  const b = await call(server.url, 'GET', '/v1/events?after=0&limit=10', { auth: t.key })
  expect(a.status).toBe(200)
  expect(a.body.data).toHaveLength(3)
  expect(a.body).toEqual(b.body)
})

test('other empty values are still no value: 400 invalid_body naming the parameter', async () => {
  for (const [path, name] of [['/v1/events?after=', 'after'], ['/v1/events?limit=', 'limit'], ['/v1/feedback?status=', 'status'], ['/v1/feedback?limit=', 'limit']]) {
    const r = await call(server.url, 'GET', path, { auth: t.key })
    expect([path, r.status, r.body.error.code]).toEqual([path, 400, 'invalid_body'])
    expect(JSON.stringify(r.body.error.details.issues)).toContain(`/${name}`)
  }
  const twice = await call(server.url, 'GET', '/v1/events?types=&types=feedback.received', { auth: t.key })
  expect(twice.status).toBe(400)
})

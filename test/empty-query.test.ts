/**
 * An empty query parameter is one left out. CONTRACT.md writes the stream's URL as
 * `GET /v1/events/stream?after=<seq>&types=&appId=`, and a client filling that in with no filter sends
 * `types=&appId=`: it was refused with 400 (an outside audit). Every query parameter is optional, so ""
 * means "not given", for filters, cursors and numbers alike; a value that is there is still checked.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { call, seedTenant, startTestServer, type Tenant, type TestServer } from './harness'

let server: TestServer
let t: Tenant

beforeAll(async () => {
  server = await startTestServer({ FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000' })
  t = await seedTenant(server.admin, {}, 'Empty')
  for (const text of ['first report', 'second report']) expect((await call(server.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text } })).status).toBe(201)
})
afterAll(async () => {
  await server?.close()
})

test("the contract's stream URL with empty filters opens the stream", async () => {
  const ctl = new AbortController()
  const r = await fetch(`${server.url}/v1/events/stream?after=0&types=&appId=`, { headers: { authorization: `Bearer ${t.key}` }, signal: ctl.signal })
  try {
    expect(r.status).toBe(200)
    expect(r.headers.get('content-type')).toStartWith('text/event-stream')
  } finally {
    ctl.abort()
  }
})

test('empty filters, cursors and numbers answer as if left out', async () => {
  const same = async (withEmpty: string, without: string) => {
    const a = await call(server.url, 'GET', withEmpty, { auth: t.key })
    const b = await call(server.url, 'GET', without, { auth: t.key })
    expect(a.status).toBe(200)
    expect(a.body).toEqual(b.body)
  }
  await same('/v1/events?after=0&types=&appId=&limit=', '/v1/events?after=0')
  await same('/v1/feedback?cursor=&status=&appId=&limit=', '/v1/feedback')
  const page = await call(server.url, 'GET', '/v1/feedback?cursor=&limit=', { auth: t.key })
  expect(page.body.data.map((f: { text: string }) => f.text)).toEqual(['second report', 'first report'])
})

test('a value that is there is still checked, and a parameter given twice is still refused', async () => {
  for (const path of ['/v1/events?types=nope', '/v1/feedback?status=bogus', '/v1/feedback?limit=0', '/v1/feedback?cursor=xyz']) {
    const r = await call(server.url, 'GET', path, { auth: t.key })
    expect([path, r.status, r.body.error.code]).toEqual([path, 400, 'invalid_body'])
  }
  const twice = await call(server.url, 'GET', '/v1/feedback?limit=&limit=5', { auth: t.key })
  expect(twice.status).toBe(400)
})

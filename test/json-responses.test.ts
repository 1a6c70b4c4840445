/**
 * Every JSON answer carries one Content-Type, whatever produced it (a handler, the error envelope, a
 * validation failure, an unknown route, the docs); a missing field is one issue, not two; an API answer
 * is not cached.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, seedTenant, startTestServer, type Tenant, type TestServer } from './harness'

const JSON_TYPE = 'application/json;charset=utf-8'

let server: TestServer
let t: Tenant
beforeAll(async () => {
  server = await startTestServer({ FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000' })
  t = await seedTenant(server.admin)
})
afterAll(() => server.close())

describe('JSON content type', () => {
  const cases: [string, string, string, (t: Tenant) => Parameters<typeof call>[3], number][] = [
    ['200 list', 'GET', '/v1/feedback', (t) => ({ auth: t.key }), 200],
    ['201 create', 'POST', '/v1/feedback', (t) => ({ auth: t.pub, body: { text: 'hello' } }), 201],
    ['200 healthz', 'GET', '/healthz', () => ({}), 200],
    ['200 openapi', 'GET', '/openapi.json', () => ({}), 200],
    ['404 unknown route', 'GET', '/v1/nope', () => ({}), 404],
    ['404 unknown id', 'GET', '/v1/feedback/000000000000000000000000', (t) => ({ auth: t.key }), 404],
    ['400 invalid id', 'GET', '/v1/feedback/xyz', (t) => ({ auth: t.key }), 400],
    ['400 invalid body', 'POST', '/v1/feedback', (t) => ({ auth: t.pub, body: { text: 5 } }), 400],
    ['400 malformed JSON', 'POST', '/v1/feedback', (t) => ({ auth: t.pub, rawBody: '{', headers: { 'content-type': 'application/json' } }), 400],
    ['401 no key', 'GET', '/v1/feedback', () => ({}), 401],
    ['405/404 wrong method', 'DELETE', '/healthz', () => ({}), 404],
  ]
  for (const [name, method, path, opts, status] of cases) {
    test(`${name}: ${method} ${path} → ${status} ${JSON_TYPE}`, async () => {
      const r = await call(server.url, method, path, opts(t))
      expect(r.status).toBe(status)
      expect(r.headers.get('content-type')).toBe(JSON_TYPE)
      // Answers, errors included, are never sniffed into something else (an error may echo the caller's text).
      expect(r.headers.get('x-content-type-options')).toBe('nosniff')
    })
  }
})

describe('one issue per path', () => {
  const entry = { level: 'error', message: 'boom', ts: 1 }
  const cases: [string, Record<string, unknown>, string][] = [
    ['consoleLogs[].ts missing', { level: 'error', message: 'boom' }, '/consoleLogs/0/ts'],
    ['consoleLogs[].message missing', { level: 'error', ts: 1 }, '/consoleLogs/0/message'],
    ['consoleLogs[].level missing', { message: 'boom', ts: 1 }, '/consoleLogs/0/level'],
    ['consoleLogs[].ts a string', { ...entry, ts: 'x' }, '/consoleLogs/0/ts'],
    ['consoleLogs[].ts negative', { ...entry, ts: -1 }, '/consoleLogs/0/ts'],
    ['consoleLogs[].level unknown', { ...entry, level: 'loud' }, '/consoleLogs/0/level'],
  ]
  for (const [name, bad, path] of cases) {
    test(`${name}: one issue at ${path}`, async () => {
      const r = await call(server.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: 'x', consoleLogs: [bad, entry] } })
      expect(r.status).toBe(400)
      expect(r.body.error.code).toBe('invalid_body')
      const paths: string[] = r.body.error.details.issues.map((i: { path: string }) => i.path)
      expect(paths).toEqual([path])
    })
  }
})

/**
 * API answers carry `Cache-Control: no-store` (keys, secrets and tokens on creation, reporters' data):
 * no browser or proxy cache keeps them. A route that says how it may be cached keeps its own header.
 */
describe('Cache-Control on API answers', () => {
  test('a minted token, a webhook secret and a report are no-store', async () => {
    const mint = await call(server.url, 'POST', `/v1/tokens/mint?appId=${t.appId}`, { auth: t.key, body: { sub: 'u1' } })
    expect(mint.status).toBe(200)
    expect(mint.headers.get('cache-control')).toBe('no-store')
    const hook = await call(server.url, 'POST', '/v1/webhooks', { auth: t.key, body: { url: 'https://hooks.example.com/x' } })
    expect(hook.status).toBe(201)
    expect(hook.headers.get('cache-control')).toBe('no-store')
    const sent = await call(server.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: 'A report', identity: { email: 'r@example.com' } } })
    const one = await call(server.url, 'GET', `/v1/feedback/${sent.body.id}`, { auth: t.key })
    expect(one.status).toBe(200)
    expect(one.headers.get('cache-control')).toBe('no-store')
  })

  test("the widget's config keeps its own, cacheable, header", async () => {
    const config = await fetch(`${server.url}/v1/widget/config`, { headers: { authorization: `Bearer ${t.pub}` } })
    expect(config.status).toBe(200)
    expect(config.headers.get('cache-control')).toMatch(/^private, max-age=\d+$/)
  })
})

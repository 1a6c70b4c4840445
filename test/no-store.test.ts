/**
 * API answers carry `Cache-Control: no-store` (keys, secrets and tokens on creation, reporters' data):
 * no browser or proxy cache keeps them. A route that says how it may be cached keeps its own header.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, seedTenant, startTestServer, type Tenant, type TestServer } from './harness'

let server: TestServer
let t: Tenant
beforeAll(async () => {
  server = await startTestServer({ FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000' })
  t = await seedTenant(server.admin)
})
afterAll(() => server.close())

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

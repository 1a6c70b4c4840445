/** Wrong JSON types are invalid_body, never coerced ("600" is not 600, "true" is not true). */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { call, seedTenant, startTestServer, type Tenant, type TestServer } from './harness'

let srv: TestServer
let t: Tenant
beforeAll(async () => {
  srv = await startTestServer()
  t = await seedTenant(srv.admin)
})
afterAll(() => srv.close())

const cases: [string, string, string, () => string, unknown][] = [
  ['mint expiresInSeconds as a string', 'POST', '/v1/tokens/mint?appId=', () => t.key, { sub: 'u', expiresInSeconds: '600' }],
  ['upload byteSize as a string', 'POST', '/v1/feedback/upload-url', () => t.pub, { contentType: 'image/png', byteSize: '10', kind: 'screenshot' }],
  ['console ts as a string', 'POST', '/v1/feedback', () => t.pub, { text: 'x', consoleLogs: [{ level: 'error', message: 'm', ts: '1700000000000' }] }],
  ['attachment byteSize as a string', 'POST', '/v1/feedback', () => t.pub, { text: 'x', attachments: [{ key: 'k', kind: 'screenshot', contentType: 'image/png', byteSize: '5' }] }],
  ['viewport width as a string', 'POST', '/v1/feedback', () => t.pub, { text: 'x', viewport: { w: '100', h: 1, dpr: 1 } }],
  ['text as a number', 'POST', '/v1/feedback', () => t.pub, { text: 5 }],
]
for (const [name, method, path, auth, body] of cases) {
  test(name, async () => {
    const r = await call(srv.url, method, path.endsWith('appId=') ? path + t.appId : path, { auth: auth(), body })
    expect(r.status).toBe(400)
    expect(r.body.error.code).toBe('invalid_body')
    expect(r.body.error.details.issues.length).toBeGreaterThan(0)
  })
}

test('the Bearer scheme is case-insensitive (RFC 6750)', async () => {
  for (const scheme of ['bearer', 'BEARER', 'Bearer ']) {
    const r = await call(srv.url, 'GET', '/v1/apps', { headers: { authorization: `${scheme} ${t.key}` } })
    expect(r.status).toBe(200)
  }
  const malformed = await call(srv.url, 'GET', '/v1/apps', { headers: { authorization: `Basic ${t.key}` } })
  expect(malformed.body.error.code).toBe('invalid_authorization')
})

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, eventually, seedTenant, startTestServer, type Tenant, type TestServer } from './harness'

let srv: TestServer
let t: Tenant
beforeAll(async () => {
  srv = await startTestServer()
  t = await seedTenant(srv.admin)
})
afterAll(() => srv.close())

describe('submission to awaiting_manual', () => {
  test('public submission is stored, sanitized and routed to awaiting_manual', async () => {
    const r = await call(srv.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: 'Broken checkout, mail me at jo@example.com' } })
    expect(r.status).toBe(201)
    expect(r.body.status).toBe('received')
    expect(r.body.id).toMatch(/^[0-9a-f]{24}$/)
    const item = await eventually(async () => {
      const g = await call(srv.url, 'GET', `/v1/feedback/${r.body.id}`, { auth: t.key })
      return g.body.status === 'awaiting_manual' ? g.body : undefined
    })
    expect(item.text).not.toContain('jo@example.com')
    expect(item.redactions.email).toBe(1)
    expect(r.headers.get('x-request-id')).toBeTruthy()
  })
})

/**
 * `GET /v1/apps/:id/triage?unmergeScore=` is read on the raw query text like the integer parameters
 * (found by fuzzing the query string): as t.Numeric it took a space as 0 and "0x1" as 1, against the rule
 * of docs/api.md that such junk is 400 invalid_body naming the parameter. Numbers as JavaScript writes
 * them (the dashboard sends `String(score)`: "0.85", "1e-7") still pass.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { call, seedTenant, startTestServer, type Tenant, type TestServer } from './harness'

let server: TestServer
let t: Tenant
beforeAll(async () => {
  server = await startTestServer({ FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000' })
  t = await seedTenant(server.admin)
})
afterAll(() => server.close())

const triage = (q: string) => call(server.url, 'GET', `/v1/apps/${t.appId}/triage?unmergeScore=${q}`, { auth: t.key })

test('junk numbers are 400 invalid_body at /unmergeScore', async () => {
  for (const q of ['%20', '0x1', '', 'Infinity', 'NaN', '+0.5', '-0', '1e', '0.5.5', '1%00', '2', '1.0000001', '0b1', '1_0']) {
    const r = await triage(q)
    expect(r.status, q).toBe(400)
    expect(r.body.error.code, q).toBe('invalid_body')
    expect(r.body.error.details.issues[0].path, q).toBe('/unmergeScore')
  }
})

test('numbers as JavaScript writes them are read', async () => {
  for (const q of ['0', '1', '0.85', '.5', '1e-7', '5E-1', String(0.1 + 0.2)]) {
    const r = await triage(q)
    expect(r.status, q).toBe(200)
    expect(r.body.afterUnmerge, q).toBeDefined()
  }
  expect((await call(server.url, 'GET', `/v1/apps/${t.appId}/triage`, { auth: t.key })).body.afterUnmerge).toBeUndefined()
})

/**
 * A refused `after` or `limit` of the events API is named as itself (found by fuzzing the query string):
 * `GET /v1/events?after=0&limit=0` answered `details.issues[0].path: "/after"` with limit's message
 * ("greater or equal to 1"). Both were t.Numeric, whose range error carries no parameter name, and the
 * error handler guessed the first parameter whose text read as the value. They are now read and checked
 * by readIntQuery alone (src/http/query.ts), which knows the name.
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

const issuePaths = async (query: string) => {
  const r = await call(server.url, 'GET', `/v1/events?${query}`, { auth: t.key })
  expect(r.status).toBe(400)
  expect(r.body.error.code).toBe('invalid_body')
  return r.body.error.details.issues.map((i: { path: string }) => i.path)
}

test('the parameter at fault is named, whichever other parameter holds the same number', async () => {
  expect(await issuePaths('after=0&limit=0')).toEqual(['/limit'])
  expect(await issuePaths('limit=0&after=0')).toEqual(['/limit'])
  expect(await issuePaths('after=501&limit=501')).toEqual(['/limit'])
  expect(await issuePaths('after=-1&limit=-1')).toEqual(['/after'])
  expect(await issuePaths('after=1e3&limit=5')).toEqual(['/after'])
  expect(await issuePaths(`after=${'9'.repeat(20)}`)).toEqual(['/after'])
})

test('valid values still page', async () => {
  const r = await call(server.url, 'GET', '/v1/events?after=0&limit=500', { auth: t.key })
  expect(r.status).toBe(200)
  expect(r.body).toMatchObject({ data: [], nextAfter: 0 })
})

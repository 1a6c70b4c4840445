/**
 * A JSON body of more than MAX_JSON_VALUES values is refused before JSON.parse (found by an attack on the
 * API): 8 MB of `{"text":"x","k0":0,"k1":0,…}` (600,000 members) cost the parser about half a second on
 * the event loop, so one client holding the App's public key stalled every other request while its
 * submissions lasted (/healthz p50 1.1 s over 30 such bodies within the default rate limit). The largest
 * real report still passes.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { call, seedTenant, startTestServer, type Tenant, type TestServer } from './harness'
import { jsonValuesExceed, MAX_JSON_VALUES } from '../src/http/strict-json'

let srv: TestServer
let t: Tenant
beforeAll(async () => {
  srv = await startTestServer({ FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000' })
  t = await seedTenant(srv.admin)
})
afterAll(() => srv.close())

const post = (raw: string) => call(srv.url, 'POST', '/v1/feedback', { auth: t.pub, rawBody: raw, headers: { 'content-type': 'application/json' } })
const manyMembers = (n: number) => `{"text":"x",${Array.from({ length: n }, (_, i) => `"k${i}":0`).join(',')}}`

test('a body of 600,000 members is refused as too many values, before it is parsed', async () => {
  const r = await post(manyMembers(600_000))
  expect(r.status).toBe(400)
  expect(r.body.error.code).toBe('invalid_body')
  expect(r.body.error.details.issues).toEqual([{ path: '/', message: `JSON holding more than ${MAX_JSON_VALUES} values` }])
  // As many elements of an array, in any field: the same.
  const arr = await post(`{"text":"x","metadata":{"a":[${Array(MAX_JSON_VALUES + 5).fill(0).join(',')}]}}`)
  expect(arr.body.error.details.issues[0].message).toBe(`JSON holding more than ${MAX_JSON_VALUES} values`)
})

test('commas inside strings are not values; a report at every limit passes', async () => {
  expect(jsonValuesExceed(new TextEncoder().encode(JSON.stringify({ text: ','.repeat(100_000) })))).toBe(false)
  const meta = `[${Array(2040).fill(0).join(',')}]`
  const body = {
    text: 'a,'.repeat(4096),
    url: 'https://shop.example/?' + 'a=1,'.repeat(400),
    consoleLogs: Array.from({ length: 500 }, (_, i) => ({ level: 'log', message: `m,${i}`, ts: i })),
    metadata: { a: JSON.parse(meta) },
    componentTarget: { name: 'Button', meta: { a: JSON.parse(meta) } },
  }
  const r = await post(JSON.stringify(body))
  expect(r.status, r.text).toBe(201)
})

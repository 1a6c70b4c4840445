/**
 * Expensive reports are charged to their sender's rate-limit bucket (issue 28.3): one token per request
 * as before, plus one per full 32 K characters of free text (src/modules/feedback/submit-cost.ts). A
 * report at every limit takes 16 of the public bucket's 60, and Retry-After says when the whole request
 * fits again. Real server, an injected clock for the refill.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ManualClock } from '../src/core/clock'
import { CHARS_PER_TOKEN, extraTokens } from '../src/modules/feedback/submit-cost'
import { call, seedTenant, startTestServer, type Tenant, type TestServer } from './harness'
import { expectRateLimited } from './helpers-auth'
import { dbRow } from './sqlite-of'

const clock = new ManualClock(Date.UTC(2025, 5, 1, 9, 0, 0))
let srv: TestServer
let t: Tenant

beforeAll(async () => {
  srv = await startTestServer({ FIXLOOP_TRUST_PROXY: '1' }, { clock, worker: { autoStart: false } })
  t = await seedTenant(srv.admin)
})
afterAll(() => srv.close())

const HEAVY = {
  text: 'x'.repeat(8192),
  url: 'https://shop.example/' + 'p'.repeat(2000),
  consoleLogs: Array.from({ length: 500 }, (_, i) => ({ level: 'log', message: '0 '.repeat(500), ts: i })),
}
const NORMAL = { text: 'The checkout button does nothing', consoleLogs: [{ level: 'error', message: 'TypeError: x is undefined', ts: 1 }] }
const post = (ip: string, body: object) => call(srv.url, 'POST', '/v1/feedback', { auth: t.pub, headers: { 'x-forwarded-for': ip }, body })
const stored = async (): Promise<number> => (await dbRow<{ n: number }>(srv.ctx, 'SELECT COUNT(*) AS n FROM feedback'))!.n

/** 32 console messages of 1,000 characters after one of `first`. */
const consoleOf = (first: number) => Array.from({ length: 33 }, (_, i) => ({ level: 'log', message: 'z'.repeat(i === 0 ? first : 1000), ts: i }))

describe('the cost of a submission', () => {
  const CASES = [
    { name: 'an ordinary report', body: NORMAL, extra: 0 },
    { name: 'a report at every limit (~510 K characters)', body: HEAVY, extra: 15 },
    // 1 + 766 + 32 × 1,000 = 32,767 characters, then one more.
    { name: 'one character under 32 K of text and console', body: { text: 'a', consoleLogs: consoleOf(766) }, extra: 0 },
    { name: 'exactly 32 K of text and console', body: { text: 'ab', consoleLogs: consoleOf(766) }, extra: 1 },
  ]
  for (const c of CASES) {
    test(c.name, () => {
      expect(extraTokens(c.body as Parameters<typeof extraTokens>[0])).toBe(c.extra)
    })
  }
  test('one token per full 32 K characters', () => expect(CHARS_PER_TOKEN).toBe(32 * 1024))
})

describe('heavy reports take more of the public bucket (60 tokens, 1 a second)', () => {
  test('three reports at every limit pass, the fourth is 429 with a Retry-After after which it passes', async () => {
    for (let i = 0; i < 3; i++) expect((await post('203.0.113.10', HEAVY)).status).toBe(201)
    const before = await stored()
    // 60 - 3 × 16 = 12 tokens: the request's first token leaves 11, and it needs 15 more.
    const retry = expectRateLimited(await post('203.0.113.10', HEAVY))
    expect(await stored()).toBe(before)
    // The retry needs 16 with 11 in the bucket: 5 s at 1 token a second.
    expect(retry).toBe(5)
    clock.advance((retry - 1) * 1000)
    expectRateLimited(await post('203.0.113.10', HEAVY))
    // That refused try took its first token too: one more second.
    clock.advance(2000)
    expect((await post('203.0.113.10', HEAVY)).status).toBe(201)
  })

  test('sixty ordinary reports pass from one address, as before; other addresses keep their own buckets', async () => {
    for (let i = 0; i < 60; i++) expect((await post('203.0.113.20', NORMAL)).status).toBe(201)
    expectRateLimited(await post('203.0.113.20', NORMAL))
    expect((await post('203.0.113.21', HEAVY)).status).toBe(201)
    expect((await post('203.0.113.21', NORMAL)).status).toBe(201)
  })
})

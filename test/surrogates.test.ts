/**
 * Unpaired UTF-16 surrogates (`"\ud800"` in a JSON text): JavaScript holds them, Unicode does not. An audit
 * found them kept in the fields stored as JSON (metadata, console logs) and sent back as `\ud800` escapes,
 * which strict parsers (jq, serde_json) refuse; and user tokens whose `sub` was `"\ud800"`, `"\udfff"` or
 * `"\ufffd"` sharing one identity. The rule (src/core/well-formed.ts): at the edge every string a client
 * or a third party sends has its unpaired surrogates made U+FFFD; a user token's claims holding one are
 * refused (401). Run on SQLite and, with FIXLOOP_TEST_DIALECT=pg, on PostgreSQL.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, seedTenant, startTestServer, type Tenant, type TestServer } from './harness'
import { userToken } from './helpers-auth'
import { parseDeliveryJson } from '../src/core/nul'
import { clip } from '../widget/src/clip'

let server: TestServer
let t: Tenant

beforeAll(async () => {
  server = await startTestServer({ FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000' })
  t = await seedTenant(server.admin, {}, 'Surrogates')
})
afterAll(async () => {
  await server?.close()
})

/** Any `\ud800`-`\udfff` escape in a JSON text: what strict parsers refuse when unpaired. */
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F][0-9a-fA-F]{2}/

describe('a body with unpaired surrogates', () => {
  test('is stored with U+FFFD in their place, in text and in the fields kept as JSON; the answer is strict JSON; a pair (an emoji) is kept', async () => {
    const body = {
      text: 'Checkout broke \ud83d\ude00 then \ud83d',
      metadata: { plan: 'pro\ud800', ['k\udfff']: ['x\udc00y'] },
      consoleLogs: [{ level: 'error', message: 'TypeError \udbff at cart', ts: 1 }],
      identity: { name: 'Ann \ud800' },
    }
    // JSON.stringify writes each unpaired surrogate as a `\udXXX` escape: what a client cutting an emoji sends.
    expect(JSON.stringify(body)).toMatch(SURROGATE_ESCAPE)
    const created = await call(server.url, 'POST', '/v1/feedback', { auth: t.pub, body })
    expect(created.status).toBe(201)
    const got = await call(server.url, 'GET', `/v1/feedback/${created.body.id}`, { auth: t.key })
    expect(got.status).toBe(200)
    expect(got.text).not.toMatch(SURROGATE_ESCAPE)
    const f = got.body
    expect(f.text).toBe('Checkout broke \ud83d\ude00 then \ufffd')
    expect(f.submissionMeta).toEqual({ plan: 'pro\ufffd', ['k\ufffd']: ['x\ufffdy'] })
    expect(f.consoleLogs[0].message).toBe('TypeError \ufffd at cart')
    expect(f.submittedBy.name).toBe('Ann \ufffd')
    // Every string of the answer is well-formed Unicode.
    const strings: string[] = []
    JSON.parse(got.text, (_key, value) => (typeof value === 'string' && strings.push(value), value))
    expect(strings.every((s) => s.isWellFormed())).toBe(true)
  })

  test('a third party delivery (git host, tracker) is made well-formed the same way', () => {
    const raw = new TextEncoder().encode('{"title":"Crash \\ud800","labels":["a\\udfff"],"emoji":"\\ud83d\\ude00"}')
    expect(parseDeliveryJson(raw)).toEqual({ title: 'Crash \ufffd', labels: ['a\ufffd'], emoji: '\ud83d\ude00' })
  })
})

describe("a user token whose claims hold an unpaired surrogate: 401, never one identity for several users", () => {
  const submitAs = async (sub: string, ctx?: Record<string, unknown>) => {
    const token = await userToken(t.secret, t.appId, sub, ctx ? { ctx } : {})
    return call(server.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: `from ${JSON.stringify(sub)}` }, headers: { 'x-service-user-token': token } })
  }
  for (const sub of ['\ud800', '\udfff', 'user-\udc00']) {
    test(`sub ${JSON.stringify(sub)}`, async () => {
      const r = await submitAs(sub)
      expect({ status: r.status, code: r.body?.error?.code }).toEqual({ status: 401, code: 'invalid_user_token' })
    })
  }
  test('ctx value or key', async () => {
    for (const ctx of [{ email: 'a\ud800@b.example' }, { ['k\udbff']: 1 }]) {
      const r = await submitAs('user-ok', ctx)
      expect({ status: r.status, code: r.body?.error?.code }).toEqual({ status: 401, code: 'invalid_user_token' })
    }
  })
  test('U+FFFD itself and an emoji are ordinary characters of a sub', async () => {
    expect((await submitAs('\ufffd')).status).toBe(201)
    expect((await submitAs('user-\ud83d\ude00')).status).toBe(201)
  })
})

describe("the widget cuts text on a character's edge", () => {
  test('clip never leaves half of a surrogate pair', () => {
    expect(clip('ab\ud83d\ude00', 3)).toBe('ab')
    expect(clip('ab\ud83d\ude00', 4)).toBe('ab\ud83d\ude00')
    expect(clip('abc', 2)).toBe('ab')
    expect(clip('abc', 5)).toBe('abc')
    for (let n = 1; n <= 12; n++) expect(clip('\ud83d\ude00'.repeat(6), n).isWellFormed()).toBe(true)
  })
})

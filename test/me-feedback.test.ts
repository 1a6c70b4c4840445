/**
 * GET /v1/me/feedback: a signed-in user's own reports (pub_ key + user token). Only that token's `sub`'s
 * private-mode reports of the key's App; cross-user and cross-App reads impossible; bad tokens refused as
 * on the submission route; junk query and huge cursors answered with the error envelope.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, eventually, seedTenant, startTestServer, type Tenant, type TestServer } from './harness'
import { feedbackRowIn } from './helpers-lifecycle'
import { keyOf, signToken, claimsFor, userToken } from './helpers-auth'

let server: TestServer
let a: Tenant
let b: Tenant

beforeAll(async () => {
  server = await startTestServer()
  a = await seedTenant(server.admin, { name: 'Alpha' }, 'Alpha')
  b = await seedTenant(server.admin, { name: 'Beta' }, 'Beta')
})
afterAll(() => server?.close())

const me = (t: Tenant, token: string | null, query = '') =>
  call(server.url, 'GET', `/v1/me/feedback${query}`, { auth: t.pub, headers: token ? { 'X-Service-User-Token': token } : {} })

async function submitAs(t: Tenant, sub: string, text: string) {
  const token = await userToken(t.secret, t.appId, sub, { ctx: { email: `${sub}@example.com` } })
  const r = await call(server.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text }, headers: { 'X-Service-User-Token': token } })
  expect(r.status).toBe(201)
  return r.body.id as string
}

describe('GET /v1/me/feedback', () => {
  test("only the token's sub's reports of the key's App, newest first, sanitized, paged", async () => {
    const mine = [await submitAs(a, 'ann', 'First: my token ghp_abcdefghijklmnopqrstuvwxyz0123456789 leaked'), await submitAs(a, 'ann', 'Second report'), await submitAs(a, 'ann', 'Third report')]
    const theirs = await submitAs(a, 'bob', 'Bob writes')
    const otherApp = await submitAs(b, 'ann', 'Ann at Beta')
    const pub = await call(server.url, 'POST', '/v1/feedback', { auth: a.pub, body: { text: 'public claim', identity: { externalUserId: 'ann' } } })
    expect(pub.status).toBe(201)
    for (const id of mine) await eventually(async () => (await feedbackRowIn(server.ctx, id)).redactions !== null)
    const ann = await userToken(a.secret, a.appId, 'ann')
    const page1 = await me(a, ann, '?limit=2')
    expect(page1.status).toBe(200)
    expect(page1.body.data.map((d: any) => d.id)).toEqual([mine[2], mine[1]])
    expect(Object.keys(page1.body.data[0]).sort()).toEqual(['createdAt', 'id', 'status', 'text'])
    const page2 = await me(a, ann, `?limit=2&cursor=${page1.body.nextCursor}`)
    expect(page2.body.data.map((d: any) => d.id)).toEqual([mine[0]])
    expect(page2.body.nextCursor).toBeNull()
    expect(page2.body.data[0].text).not.toContain('ghp_abcdefghijklmnopqrstuvwxyz')
    const all = JSON.stringify([page1.body, page2.body])
    for (const id of [theirs, otherApp, pub.body.id]) expect(all).not.toContain(id)
    // The same sub through the other App's key sees that App's report only.
    const annB = await userToken(b.secret, b.appId, 'ann')
    expect((await me(b, annB)).body.data.map((d: any) => d.id)).toEqual([otherApp])
    // App A's token with App B's key: the app claim does not match.
    const cross = await me(b, ann)
    expect(cross.status).toBe(401)
    expect(cross.body.error.code).toBe('invalid_user_token')
  })

  test.each([
    ['no user token', null, 401, 'invalid_user_token'],
    ['a token signed with another secret', 'other-secret', 401, 'invalid_user_token'],
    ['an expired token', 'expired', 401, 'invalid_user_token'],
    ['alg none', 'none', 401, 'invalid_user_token'],
    ['junk', 'not.a.jwt', 401, 'invalid_user_token'],
  ])('%s: %i %s', async (_name, kind, status, code) => {
    let token: string | null = kind
    if (kind === 'other-secret') token = await signToken(keyOf('ab'.repeat(32)), claimsFor(a.appId, 'ann'))
    if (kind === 'expired') token = await signToken(keyOf(a.secret), { ...claimsFor(a.appId, 'ann'), iat: 1000, exp: 2000 })
    if (kind === 'none') token = `${Buffer.from('{"alg":"none","typ":"JWT"}').toString('base64url')}.${Buffer.from(JSON.stringify(claimsFor(a.appId, 'ann'))).toString('base64url')}.`
    const r = await me(a, token)
    expect(r.status).toBe(status)
    expect(r.body.error.code).toBe(code)
  })

  test('bad keys and a public-disabled App without a token', async () => {
    const ann = await userToken(a.secret, a.appId, 'ann')
    const r1 = await call(server.url, 'GET', '/v1/me/feedback', { auth: 'pub_nope', headers: { 'X-Service-User-Token': ann } })
    expect(r1.status).toBe(401)
    const r2 = await call(server.url, 'GET', '/v1/me/feedback', { auth: a.key, headers: { 'X-Service-User-Token': ann } })
    expect(r2.status).toBe(401)
    expect(r2.body.error.code).toBe('invalid_authorization')
  })

  // Issue 36 item 2: a missing credential on a read is 401 invalid_user_token, on a private App as on a
  // public one; never 403 public_disabled, which is about submitting without a token.
  test.each([
    ['a public App', true],
    ['a private App', false],
  ])('%s without X-Service-User-Token: 401 invalid_user_token', async (_name, publicSubmissionEnabled) => {
    const app = await server.admin.createApp(a.orgId, { name: `Me ${publicSubmissionEnabled}`, publicSubmissionEnabled })
    for (const headers of [{}, { 'X-Service-User-Token': '' }] as Record<string, string>[]) {
      const r = await call(server.url, 'GET', '/v1/me/feedback', { auth: app.publicKey, headers })
      expect(r.status).toBe(401)
      expect(r.body.error.code).toBe('invalid_user_token')
      expect(r.body.error.message).not.toMatch(/public submission/i)
    }
    // A private App's submission without a token is still the spec's 403 public_disabled.
    if (!publicSubmissionEnabled) {
      const post = await call(server.url, 'POST', '/v1/feedback', { auth: app.publicKey, body: { text: 'no token' } })
      expect(post.status).toBe(403)
      expect(post.body.error.code).toBe('public_disabled')
    }
  })

  test.each([
    ['?cursor=' + 'f'.repeat(5000)],
    ['?cursor=zz'],
    ['?limit=0'],
    ['?limit=1e9'],
    ['?limit=abc'],
    ['?limit=1&limit=2'],
    ['?junk=1'],
    ['?cursor[a][b][c]=1'],
  ])('fuzz %s: 400 invalid_body, never 5xx', async (q) => {
    const ann = await userToken(a.secret, a.appId, 'ann')
    const r = await me(a, ann, q)
    expect(r.status).toBeGreaterThanOrEqual(400)
    expect(r.status).toBeLessThan(500)
    expect(r.body.error.code).toBeDefined()
  })
})

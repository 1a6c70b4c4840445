/**
 * Private mode (spec 5.1/5.2 and 4.8): every way a user token is refused (all 401 invalid_user_token),
 * the tokens that are accepted, identity taken from the token rather than the body, secret rotation,
 * the signing secret's hex/base64 forms, and POST /v1/tokens/mint.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { generateKeyPair, jwtVerify } from 'jose'
import { call, seedTenant, startTestServer, type Tenant, type TestServer } from './harness'
import { decodeSecret } from '../src/core/secrets'
import {
  ReplyLog,
  claimsFor,
  decodeJwt,
  expectEnvelope,
  expectInvalidBody,
  keyOf,
  nowS,
  secretForms,
  signToken,
  unsignedToken,
  userToken,
} from './helpers-auth'

const BODY = { text: 'Checkout button is grey' }

let srv: TestServer
/** Org A: its App is private (user token required). */
let a: Tenant
/** A second App of Org A, public, with its own secret. */
let a2: { id: string; publicKey: string; signingSecret: string }
/** Org B: a private App. */
let b: Tenant
const log = new ReplyLog()

beforeAll(async () => {
  srv = await startTestServer({ FIXLOOP_RATE_LIMIT_MULTIPLIER: '100' })
  a = await seedTenant(srv.admin, { publicSubmissionEnabled: false }, 'Alpha')
  a2 = await srv.admin.createApp(a.orgId, { name: 'Alpha Public' })
  b = await seedTenant(srv.admin, { publicSubmissionEnabled: false }, 'Beta')
})

afterAll(async () => {
  log.expectNoLeak([a.key, b.key, ...secretForms(a.secret), ...secretForms(a2.signingSecret), ...secretForms(b.secret)])
  log.expectNo5xx()
  log.expectRequestIds()
  await srv.close()
})

function submit(pub: string, token: string | undefined, body: unknown = BODY) {
  return log.call(srv.url, 'POST', '/v1/feedback', { auth: pub, headers: token === undefined ? {} : { 'x-service-user-token': token }, body })
}

function mint(key: string, appId: string, body: unknown) {
  return log.call(srv.url, 'POST', `/v1/tokens/mint?appId=${appId}`, { auth: key, body })
}

describe('user token rejections: all 401 invalid_user_token', () => {
  const without = (claims: Record<string, unknown>, name: string) => {
    const c = { ...claims }
    delete c[name]
    return c
  }

  /** Each row: a name and a token that must be refused on App A's public key. */
  async function rejected(): Promise<{ name: string; token: string; pub?: string }[]> {
    const key = keyOf(a.secret)
    const base = claimsFor(a.appId)
    const now = nowS()
    const rsa = await generateKeyPair('RS256')
    const ec = await generateKeyPair('ES256')
    const valid = await signToken(key, base)
    const [h, p, sig] = valid.split('.')
    const tamperedPayload = Buffer.from(JSON.stringify({ ...base, sub: 'admin' })).toString('base64url')
    return [
      { name: 'alg none', token: unsignedToken(base) },
      { name: 'alg none with a signature part copied from a valid token', token: unsignedToken(base) + sig },
      { name: 'HS512 with the right secret', token: await signToken(key, base, { alg: 'HS512', typ: 'JWT' }) },
      { name: 'HS384 with the right secret', token: await signToken(key, base, { alg: 'HS384', typ: 'JWT' }) },
      { name: 'RS256 (real RSA signature)', token: await signToken(rsa.privateKey, base, { alg: 'RS256', typ: 'JWT' }) },
      { name: 'ES256 (real ECDSA signature)', token: await signToken(ec.privateKey, base, { alg: 'ES256', typ: 'JWT' }) },
      { name: 'bad signature: signed with another secret', token: await signToken(new Uint8Array(32).fill(7), base) },
      { name: 'bad signature: payload changed after signing', token: `${h}.${tamperedPayload}.${sig}` },
      { name: 'bad signature: signature removed', token: `${h}.${p}.` },
      { name: 'signed with the hex text as the key instead of the decoded bytes', token: await signToken(new TextEncoder().encode(a.secret), base) },
      { name: 'signed with the base64 text as the key', token: await signToken(new TextEncoder().encode(Buffer.from(a.secret, 'hex').toString('base64')), base) },
      { name: 'signed with another App\'s secret of the same Org', token: await signToken(keyOf(a2.signingSecret), base) },
      { name: 'signed with another Org\'s secret', token: await signToken(keyOf(b.secret), base) },
      { name: 'expired an hour ago', token: await signToken(key, { ...base, iat: now - 7200, exp: now - 3600 }) },
      { name: 'expired a few seconds ago', token: await signToken(key, { ...base, iat: now - 600, exp: now - 5 }) },
      { name: 'exp equal to iat in the past', token: await signToken(key, { ...base, iat: now - 10, exp: now - 10 }) },
      { name: 'iat one hour in the future', token: await signToken(key, { ...base, iat: now + 3600, exp: now + 7200 }) },
      { name: 'iat one minute in the future', token: await signToken(key, { ...base, iat: now + 60, exp: now + 660 }) },
      { name: 'lifetime 24 h + 1 s', token: await signToken(key, { ...base, iat: now, exp: now + 86401 }) },
      { name: 'lifetime of a year', token: await signToken(key, { ...base, iat: now - 10, exp: now + 365 * 86400 }) },
      { name: 'missing sub', token: await signToken(key, without(base, 'sub')) },
      { name: 'empty sub', token: await signToken(key, { ...base, sub: '' }) },
      { name: 'sub not a string', token: await signToken(key, { ...base, sub: 42 }) },
      { name: 'missing app', token: await signToken(key, without(base, 'app')) },
      { name: 'missing iat', token: await signToken(key, without(base, 'iat')) },
      { name: 'missing exp', token: await signToken(key, without(base, 'exp')) },
      { name: 'iat as a string', token: await signToken(key, { ...base, iat: String(now) }) },
      { name: 'exp as a string', token: await signToken(key, { ...base, exp: String(now + 600) }) },
      { name: 'app claim names another App of the same Org', token: await signToken(key, { ...base, app: a2.id }) },
      { name: 'app claim names another Org\'s App', token: await signToken(key, { ...base, app: b.appId }) },
      { name: 'app claim in upper case', token: await signToken(key, { ...base, app: a.appId.toUpperCase() }) },
      { name: 'token for App A2 (its own secret) used with App A\'s key', token: await userToken(a2.signingSecret, a2.id) },
      { name: 'token for Org B\'s App (its own secret) used with Org A\'s key', token: await userToken(b.secret, b.appId) },
      { name: 'token for App A used with App A2\'s key', token: valid, pub: a2.publicKey },
      { name: 'token for App A used with Org B\'s key', token: valid, pub: b.pub },
      { name: 'ctx over 2 KB', token: await signToken(key, { ...base, ctx: { pad: 'x'.repeat(2039) } }) },
      { name: 'ctx over 2 KB in bytes but not in characters', token: await signToken(key, { ...base, ctx: { pad: 'é'.repeat(1100) } }) },
      { name: 'ctx a string', token: await signToken(key, { ...base, ctx: 'email=u@example.com' }) },
      { name: 'ctx an array', token: await signToken(key, { ...base, ctx: [{ email: 'u@example.com' }] }) },
      { name: 'ctx null', token: await signToken(key, { ...base, ctx: null }) },
      { name: 'ctx a number', token: await signToken(key, { ...base, ctx: 5 }) },
      { name: 'not a JWT at all', token: 'not-a-token' },
      { name: 'two parts only', token: `${h}.${p}` },
      { name: 'garbage base64 parts', token: '!!!.@@@.###' },
    ]
  }

  test('scenario table', async () => {
    const rows = await rejected()
    for (const row of rows) {
      const r = await submit(row.pub ?? a.pub, row.token)
      expect({ name: row.name, status: r.status, code: r.body?.error?.code }).toEqual({ name: row.name, status: 401, code: 'invalid_user_token' })
      expectEnvelope(r, 'invalid_user_token')
      for (const s of secretForms(a.secret)) expect(r.text).not.toContain(s)
    }
  })

  test('sub: 256 characters are taken, 257 refused with a reason that names the limit', async () => {
    const key = keyOf(a.secret)
    const at = (sub: string) => signToken(key, { ...claimsFor(a.appId), sub })
    expect((await submit(a.pub, await at('u'.repeat(256)))).status).toBe(201)
    const r = await submit(a.pub, await at('u'.repeat(257)))
    expect(r.status).toBe(401)
    expectEnvelope(r, 'invalid_user_token')
    expect(r.body.error.details.reason).toBe('sub must be at most 256 characters')
    // An empty one is still told it must not be empty, not that it is too long.
    expect((await submit(a.pub, await at(''))).body.error.details.reason).toBe('sub must be a non-empty string')
  })

  test('a bad token on a public App is refused, not silently treated as a public submission', async () => {
    for (const token of [unsignedToken(claimsFor(a2.id)), await signToken(keyOf(a.secret), claimsFor(a2.id)), 'garbage']) {
      const r = await submit(a2.publicKey, token)
      expect(r.status).toBe(401)
      expectEnvelope(r, 'invalid_user_token')
    }
  })

  test('rotating the secret invalidates outstanding tokens at once; tokens under the new secret work', async () => {
    const app = await srv.admin.createApp(a.orgId, { name: 'Rotating', publicSubmissionEnabled: false })
    const minted = await mint(a.key, app.id, { sub: 'rot-user' })
    expect(minted.status).toBe(200)
    const local = await userToken(app.signingSecret, app.id, 'rot-local')
    expect((await submit(app.publicKey, minted.body.token)).status).toBe(201)
    expect((await submit(app.publicKey, local)).status).toBe(201)

    const { signingSecret } = await srv.admin.rotateSecret(a.orgId, app.id)
    expect(signingSecret).not.toBe(app.signingSecret)
    for (const old of [minted.body.token, local]) {
      const r = await submit(app.publicKey, old)
      expect(r.status).toBe(401)
      expectEnvelope(r, 'invalid_user_token')
    }
    expect((await submit(app.publicKey, await userToken(signingSecret, app.id, 'rot-new'))).status).toBe(201)
    const reminted = await mint(a.key, app.id, { sub: 'rot-user' })
    expect(reminted.status).toBe(200)
    expect((await submit(app.publicKey, reminted.body.token)).status).toBe(201)
    log.expectNoLeak(secretForms(signingSecret))
  })
})

describe('accepted user tokens and the identity they carry', () => {
  async function readItem(id: string) {
    const g = await log.call(srv.url, 'GET', `/v1/feedback/${id}`, { auth: a.key })
    expect(g.status).toBe(200)
    return g.body
  }

  test('a token minted by POST /v1/tokens/mint is accepted; identity comes from sub and ctx, body identity is ignored', async () => {
    const m = await mint(a.key, a.appId, { sub: 'cust-42', ctx: { email: 'jo@example.com', plan: 'pro' } })
    expect(m.status).toBe(200)
    const r = await submit(a.pub, m.body.token, { ...BODY, identity: { email: 'spoof@evil.example', externalUserId: 'spoofed', name: 'Mallory' } })
    expect(r.status).toBe(201)
    expect(r.body.status).toBe('received')
    const item = await readItem(r.body.id)
    expect(item.submittedBy.mode).toBe('private')
    expect(item.submittedBy.externalUserId).toBe('cust-42')
    expect(item.submittedBy.email).toBe('jo@example.com')
    expect(JSON.stringify(item.submittedBy)).not.toContain('spoof')
    expect(JSON.stringify(item.submittedBy)).not.toContain('Mallory')
  })

  test('a token signed locally with the decoded secret (as a customer backend would) is accepted', async () => {
    const r = await submit(a.pub, await userToken(a.secret, a.appId, 'local-7', { ctx: { email: 'seven@example.com' } }))
    expect(r.status).toBe(201)
    const item = await readItem(r.body.id)
    expect(item.submittedBy).toMatchObject({ mode: 'private', externalUserId: 'local-7', email: 'seven@example.com' })
  })

  test('private mode without ctx: email is null', async () => {
    const r = await submit(a.pub, await userToken(a.secret, a.appId, 'no-ctx'))
    expect(r.status).toBe(201)
    const item = await readItem(r.body.id)
    expect(item.submittedBy).toMatchObject({ mode: 'private', externalUserId: 'no-ctx', email: null })
  })

  test('boundaries that are accepted: lifetime exactly 24 h, ctx exactly 2048 bytes, HS256 without typ', async () => {
    const key = keyOf(a.secret)
    const now = nowS()
    const accepted = [
      { name: 'lifetime exactly 86400 s', token: await signToken(key, { ...claimsFor(a.appId), iat: now, exp: now + 86400 }) },
      // '{"pad":""}' is 10 bytes: 2038 more make 2048.
      { name: 'ctx of exactly 2048 bytes of JSON', token: await signToken(key, { ...claimsFor(a.appId), ctx: { pad: 'x'.repeat(2038) } }) },
      { name: 'issued an hour ago, valid for two', token: await signToken(key, { ...claimsFor(a.appId), iat: now - 3600, exp: now + 3600 }) },
      { name: 'HS256 with no typ header', token: await signToken(key, claimsFor(a.appId), { alg: 'HS256' }) },
    ]
    for (const row of accepted) {
      const r = await submit(a.pub, row.token)
      expect({ name: row.name, status: r.status }).toEqual({ name: row.name, status: 201 })
    }
  })

  test('a public App with a valid token records a private submission', async () => {
    const r = await submit(a2.publicKey, await userToken(a2.signingSecret, a2.id, 'pub-app-user', { ctx: { email: 'p@example.com' } }), {
      ...BODY,
      identity: { email: 'ignored@example.com', externalUserId: 'ignored' },
    })
    expect(r.status).toBe(201)
    const item = await readItem(r.body.id)
    expect(item.submittedBy).toMatchObject({ mode: 'private', externalUserId: 'pub-app-user', email: 'p@example.com' })
  })

  test('public mode takes identity from the body', async () => {
    const r = await submit(a2.publicKey, undefined, { ...BODY, identity: { email: 'anon@example.com', externalUserId: 'ext-1', name: 'Ann' } })
    expect(r.status).toBe(201)
    const item = await readItem(r.body.id)
    expect(item.submittedBy).toMatchObject({ mode: 'public', externalUserId: 'ext-1', email: 'anon@example.com' })
    const bare = await submit(a2.publicKey, undefined)
    expect(bare.status).toBe(201)
    expect((await readItem(bare.body.id)).submittedBy).toMatchObject({ mode: 'public', externalUserId: null, email: null })
  })

  test('list entries carry the same submittedBy', async () => {
    const r = await submit(a.pub, await userToken(a.secret, a.appId, 'listed', { ctx: { email: 'listed@example.com' } }))
    expect(r.status).toBe(201)
    const list = await log.call(srv.url, 'GET', `/v1/feedback?appId=${a.appId}&limit=100&includeDuplicates=true`, { auth: a.key })
    expect(list.status).toBe(200)
    const entry = list.body.data.find((x: { id: string }) => x.id === r.body.id)
    expect(entry.submittedBy).toMatchObject({ mode: 'private', externalUserId: 'listed', email: 'listed@example.com' })
  })
})

describe('signing secret encodings (decodeSecret)', () => {
  test('hex and base64 forms of the same bytes decode to the same key', () => {
    const bytes = Buffer.from(a.secret, 'hex')
    const fromHex = decodeSecret(a.secret)
    expect(Buffer.from(fromHex).equals(bytes)).toBe(true)
    expect(Buffer.from(decodeSecret(a.secret.toUpperCase())).equals(bytes)).toBe(true)
    expect(Buffer.from(decodeSecret(bytes.toString('base64'))).equals(bytes)).toBe(true)
    expect(Buffer.from(decodeSecret(bytes.toString('base64url'))).equals(bytes)).toBe(true)
    expect(Buffer.from(decodeSecret(`  ${a.secret}\n`)).equals(bytes)).toBe(true)
    expect(fromHex.length).toBe(32)
  })

  test('base64 that is not hex decodes as base64', () => {
    const bytes = Buffer.from('fixloop signing secret, 32 bytes')
    expect(bytes.length).toBe(32)
    expect(Buffer.from(decodeSecret(bytes.toString('base64'))).equals(bytes)).toBe(true)
  })

  test('text that is neither hex nor base64 is refused', () => {
    expect(() => decodeSecret('not a secret!')).toThrow()
    expect(() => decodeSecret('')).toThrow()
  })

  test('a token signed with the base64 form decoded is accepted by the server', async () => {
    const key = decodeSecret(Buffer.from(a.secret, 'hex').toString('base64'))
    const r = await submit(a.pub, await signToken(key, claimsFor(a.appId, 'b64-user')))
    expect(r.status).toBe(201)
  })
})

describe('POST /v1/tokens/mint', () => {
  test('404 app_not_found for another Org\'s App, an unknown App and a deleted App', async () => {
    const gone = await srv.admin.createApp(a.orgId, { name: 'Gone' })
    await srv.admin.deleteApp(a.orgId, gone.id)
    const rows = [
      { name: 'another Org\'s App', appId: b.appId },
      { name: 'unknown App', appId: 'abcdefabcdefabcdefabcdef' },
      { name: 'deleted App', appId: gone.id },
    ]
    for (const row of rows) {
      const r = await mint(a.key, row.appId, { sub: 'u' })
      expect({ name: row.name, status: r.status, code: r.body?.error?.code }).toEqual({ name: row.name, status: 404, code: 'app_not_found' })
      expectEnvelope(r, 'app_not_found')
      expect(r.text).not.toContain('token')
      for (const s of [...secretForms(b.secret), ...secretForms(gone.signingSecret)]) expect(r.text).not.toContain(s)
    }
    // Org B can mint for its own App.
    expect((await mint(b.key, b.appId, { sub: 'u' })).status).toBe(200)
  })

  test('validation of the query and body', async () => {
    const rows: { name: string; path: string; body: unknown }[] = [
      { name: 'expiresInSeconds 59', path: `/v1/tokens/mint?appId=${a.appId}`, body: { sub: 'u', expiresInSeconds: 59 } },
      { name: 'expiresInSeconds 86401', path: `/v1/tokens/mint?appId=${a.appId}`, body: { sub: 'u', expiresInSeconds: 86401 } },
      { name: 'expiresInSeconds 0', path: `/v1/tokens/mint?appId=${a.appId}`, body: { sub: 'u', expiresInSeconds: 0 } },
      { name: 'expiresInSeconds negative', path: `/v1/tokens/mint?appId=${a.appId}`, body: { sub: 'u', expiresInSeconds: -3600 } },
      { name: 'expiresInSeconds fractional', path: `/v1/tokens/mint?appId=${a.appId}`, body: { sub: 'u', expiresInSeconds: 60.5 } },
      { name: 'unknown body field', path: `/v1/tokens/mint?appId=${a.appId}`, body: { sub: 'u', admin: true } },
      { name: 'unknown body field exp (instead of expiresInSeconds)', path: `/v1/tokens/mint?appId=${a.appId}`, body: { sub: 'u', exp: 9999999999 } },
      { name: 'missing sub', path: `/v1/tokens/mint?appId=${a.appId}`, body: { ctx: {} } },
      { name: 'empty sub', path: `/v1/tokens/mint?appId=${a.appId}`, body: { sub: '' } },
      { name: 'sub a number', path: `/v1/tokens/mint?appId=${a.appId}`, body: { sub: 42 } },
      { name: 'ctx over 2 KB', path: `/v1/tokens/mint?appId=${a.appId}`, body: { sub: 'u', ctx: { pad: 'x'.repeat(2039) } } },
      { name: 'ctx an array', path: `/v1/tokens/mint?appId=${a.appId}`, body: { sub: 'u', ctx: ['x'] } },
      { name: 'ctx a string', path: `/v1/tokens/mint?appId=${a.appId}`, body: { sub: 'u', ctx: 'x' } },
      { name: 'missing appId', path: '/v1/tokens/mint', body: { sub: 'u' } },
      { name: 'appId not hex', path: '/v1/tokens/mint?appId=not-an-app', body: { sub: 'u' } },
      { name: 'unknown query parameter', path: `/v1/tokens/mint?appId=${a.appId}&alg=none`, body: { sub: 'u' } },
      { name: 'body not an object', path: `/v1/tokens/mint?appId=${a.appId}`, body: ['u'] },
    ]
    for (const row of rows) {
      const r = await log.call(srv.url, 'POST', row.path, { auth: a.key, body: row.body })
      expect({ name: row.name, status: r.status, code: r.body?.error?.code }).toEqual({ name: row.name, status: 400, code: 'invalid_body' })
      expectInvalidBody(r)
    }
  })

  test('lifetimes 60, 3600 (default) and 86400: exp - iat equals expiresInSeconds and the token works', async () => {
    const rows: { name: string; body: Record<string, unknown>; expected: number }[] = [
      { name: 'minimum', body: { sub: 'life', expiresInSeconds: 60 }, expected: 60 },
      { name: 'default', body: { sub: 'life' }, expected: 3600 },
      { name: 'explicit 3600', body: { sub: 'life', expiresInSeconds: 3600 }, expected: 3600 },
      { name: 'maximum', body: { sub: 'life', expiresInSeconds: 86400 }, expected: 86400 },
    ]
    for (const row of rows) {
      const before = nowS()
      const r = await mint(a.key, a.appId, row.body)
      expect({ name: row.name, status: r.status }).toEqual({ name: row.name, status: 200 })
      expect(Object.keys(r.body).sort()).toEqual(['expiresInSeconds', 'token'])
      expect(r.body.expiresInSeconds).toBe(row.expected)
      const { header, payload } = decodeJwt(r.body.token)
      expect(header.alg).toBe('HS256')
      expect(header.typ).toBe('JWT')
      expect(payload.sub).toBe('life')
      expect(payload.app).toBe(a.appId)
      expect(payload.exp as number - (payload.iat as number)).toBe(row.expected)
      expect(payload.iat as number).toBeGreaterThanOrEqual(before - 1)
      expect(payload.iat as number).toBeLessThanOrEqual(nowS() + 1)
      expect((await submit(a.pub, r.body.token)).status).toBe(201)
    }
  })

  test('the minted token is an HS256 JWT keyed with the decoded secret, carrying ctx as given', async () => {
    const ctx = { email: 'k@example.com', plan: 'team', seats: 3, nested: { a: [1, 2] } }
    const r = await mint(a.key, a.appId, { sub: 'verify-me', ctx, expiresInSeconds: 120 })
    expect(r.status).toBe(200)
    const { payload, protectedHeader } = await jwtVerify(r.body.token, keyOf(a.secret), { algorithms: ['HS256'] })
    expect(protectedHeader.alg).toBe('HS256')
    expect(payload).toMatchObject({ sub: 'verify-me', app: a.appId, ctx })
    // Not keyed with the hex text.
    await expect(jwtVerify(r.body.token, new TextEncoder().encode(a.secret), { algorithms: ['HS256'] })).rejects.toThrow()
    // And not valid for another App.
    const elsewhere = await submit(a2.publicKey, r.body.token)
    expect(elsewhere.status).toBe(401)
    expectEnvelope(elsewhere, 'invalid_user_token')
  })

  test('ctx of exactly 2048 bytes can be minted and submitted', async () => {
    const r = await mint(a.key, a.appId, { sub: 'edge', ctx: { pad: 'x'.repeat(2038) } })
    expect(r.status).toBe(200)
    expect((await submit(a.pub, r.body.token)).status).toBe(201)
  })

  test('no mint reply contains the signing secret or the sk_ key', () => {
    const mints = log.replies.filter((x) => x.label.includes('/v1/tokens/mint'))
    expect(mints.length).toBeGreaterThan(10)
    for (const { reply } of mints) {
      for (const s of [a.key, b.key, ...secretForms(a.secret), ...secretForms(b.secret)]) expect(reply.text).not.toContain(s)
    }
  })
})

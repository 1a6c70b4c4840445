/**
 * What keeps sending the Org's data somewhere after the session that set it up — a webhook endpoint, an
 * App's SMTP server, a Slack channel, an issue tracker — or lets a Slack user act for the Org, asks a dashboard session to prove again who it is
 * (docs/security.md "Which actions ask"), while an sk_ key's call stays exactly as documented. Per route:
 * without a confirmation 401 reauthRequired and nothing made; a confirmation for another action does not
 * count; a wrong password is audited and throttled; the right one (POST /admin/api/me/reauth/password)
 * lets one call through within 5 minutes, then it is used up; the change is audited as before.
 * In-process server with a hand-moved clock; both dialects (scripts/test-pg.sh).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, seedTenant, startTestServer, type Reply, type Tenant, type TestServer } from './harness'
import { ManualClock } from '../src/core/clock'
import { createAdminsService } from '../src/modules/admins/service'
import { passwordHasher } from '../src/modules/admins/password-hash'
import { REAUTH_TTL_MS } from '../src/modules/admins/sessions'
import { REENTRY_BACKOFF } from '../src/modules/admin-api/password-reentry'
import { startTrackerStub, STUB_PROJECT, type TrackerStub } from './tracker-stub'
import { dbRows } from './sqlite-of'

const PASSWORD = 'owner password 1'
const CONFIRM = '/admin/api/me/reauth/password'

let server: TestServer
let clock: ManualClock
let tenant: Tenant
let stub: TrackerStub
let owner: { id: string; cookie: string; csrf: string }

async function signIn(email: string, password: string) {
  const r = await call(server.url, 'POST', '/admin/api/session', { body: { email, password } })
  expect(r.status).toBe(200)
  return { id: r.body.id as string, cookie: r.headers.get('set-cookie')!.split(';')[0], csrf: r.body.csrfToken as string }
}

/** A call with the dashboard session, as the dashboard makes it (cookie, CSRF token, the Org for /v1). */
function asOwner(method: string, path: string, body?: unknown, who = owner): Promise<Reply> {
  return call(server.url, method, path, { body, headers: { cookie: who.cookie, 'x-csrf-token': who.csrf, ...(path.startsWith('/v1/') ? { 'x-fixloop-org': tenant.orgId } : {}) } })
}

const confirm = (purpose: string, password = PASSWORD, who = owner) => asOwner('POST', CONFIRM, { purpose, password }, who)

const orgAudit = async (action: string) =>
  (await call(server.url, 'GET', `/v1/audit?limit=100`, { auth: tenant.key })).body.data.filter((e: { action: string }) => e.action === action)

const instanceAudit = (action: string) => dbRows<{ actor: string; data: string | Record<string, unknown>; ip: string }>(server.ctx, 'SELECT actor, data, ip FROM audit_log WHERE action = ? AND org_id IS NULL ORDER BY id', [action])
const dataOf = (d: string | Record<string, unknown>) => (typeof d === 'string' ? JSON.parse(d) : d)

beforeAll(async () => {
  stub = startTrackerStub('github')
  clock = new ManualClock(Date.now())
  server = await startTestServer(
    { FIXLOOP_WEBHOOK_ALLOW_PRIVATE: '1', FIXLOOP_SMTP_ALLOW_PRIVATE: '1', FIXLOOP_TRACKER_ALLOW_PRIVATE: '1', FIXLOOP_TRACKER_POLL_MINUTES: '0' },
    { clock },
  )
  tenant = await seedTenant(server.admin, {}, 'Acme')
  const admins = createAdminsService(server.ctx.store.admins, server.ctx.box, clock, passwordHasher(server.ctx.config.passwordHashMib))
  await admins.create('owner@example.com', PASSWORD, [tenant.orgId], 'owner')
  await admins.create('guesser@example.com', 'guesser password 1', [tenant.orgId], 'owner')
  owner = await signIn('owner@example.com', PASSWORD)
})

afterAll(async () => {
  await server?.close()
  stub?.stop()
})

interface Outbound {
  purpose: string
  method: string
  path: () => string
  /** The documented body, as an sk_ key sends it. */
  body: () => Record<string, unknown>
  /** A second body that points the thing elsewhere again (so it asks again). */
  again: () => Record<string, unknown>
  status: number
  /** How many exist now (what a refused call must not change). */
  count: () => Promise<number>
  audited: string
  undo: () => Promise<unknown>
}

const ROUTES: Outbound[] = [
  {
    purpose: 'webhook_create',
    method: 'POST',
    path: () => '/v1/webhooks',
    body: () => ({ url: 'http://127.0.0.1:9/attacker' }),
    again: () => ({ url: 'http://127.0.0.1:9/attacker-2' }),
    status: 201,
    count: async () => (await call(server.url, 'GET', '/v1/webhooks', { auth: tenant.key })).body.data.length,
    audited: 'webhook.created',
    undo: async () => {
      for (const h of (await call(server.url, 'GET', '/v1/webhooks', { auth: tenant.key })).body.data) await call(server.url, 'DELETE', `/v1/webhooks/${h.id}`, { auth: tenant.key })
    },
  },
  {
    purpose: 'smtp_change',
    method: 'PUT',
    path: () => `/v1/apps/${tenant.appId}/smtp`,
    body: () => ({ host: '127.0.0.1', port: 2525, tls: 'none', user: 'mailer', password: 'smtp secret', from: 'noreply@example.com' }),
    again: () => ({ host: 'localhost', port: 2525, tls: 'none', user: 'mailer', password: 'smtp secret', from: 'noreply@example.com' }),
    status: 200,
    count: async () => ((await call(server.url, 'GET', `/v1/apps/${tenant.appId}/smtp`, { auth: tenant.key })).status === 200 ? 1 : 0),
    audited: 'app.smtp_set',
    undo: () => call(server.url, 'DELETE', `/v1/apps/${tenant.appId}/smtp`, { auth: tenant.key }),
  },
  {
    purpose: 'slack_connect',
    method: 'POST',
    path: () => '/v1/chatops/slack',
    body: () => ({ botToken: 'xoxb-1234567890-abcdefghij', signingSecret: 'a'.repeat(32), channel: 'C0ATTACKER' }),
    again: () => ({ botToken: 'xoxb-1234567890-abcdefghij', signingSecret: 'b'.repeat(32), channel: 'C0ATTACKR2' }),
    status: 201,
    count: async () => (await call(server.url, 'GET', '/v1/chatops/slack', { auth: tenant.key })).body.data.length,
    audited: 'slack.connected',
    undo: async () => {
      for (const c of (await call(server.url, 'GET', '/v1/chatops/slack', { auth: tenant.key })).body.data) await call(server.url, 'DELETE', `/v1/chatops/slack/${c.id}`, { auth: tenant.key })
    },
  },
  {
    // Not data going out but a Slack account let in: it queues reports for the coding agent after the session.
    purpose: 'slack_allow_user',
    method: 'POST',
    path: () => '/v1/chatops/slack/users',
    body: () => ({ teamId: 'T0ATTACKER', userId: 'U0ATTACKER' }),
    again: () => ({ teamId: 'T0ATTACKER', userId: 'U0ATTACKR2' }),
    status: 200,
    count: async () => (await call(server.url, 'GET', '/v1/chatops/slack/users', { auth: tenant.key })).body.data.length,
    audited: 'slack.user_allowed',
    undo: async () => {
      for (const u of (await call(server.url, 'GET', '/v1/chatops/slack/users', { auth: tenant.key })).body.data) await call(server.url, 'DELETE', `/v1/chatops/slack/users/${u.teamId}/${u.userId}`, { auth: tenant.key })
    },
  },
  {
    purpose: 'tracker_connect',
    method: 'PUT',
    path: () => `/v1/apps/${tenant.appId}/tracker`,
    body: () => ({ kind: 'github', apiUrl: stub.apiUrl, project: STUB_PROJECT, token: stub.token }),
    again: () => ({ kind: 'github', apiUrl: stub.apiUrl, project: STUB_PROJECT, token: stub.token }),
    status: 200,
    count: async () => ((await call(server.url, 'GET', `/v1/apps/${tenant.appId}/tracker`, { auth: tenant.key })).body.tracker ? 1 : 0),
    audited: 'app.tracker_connected',
    undo: () => call(server.url, 'DELETE', `/v1/apps/${tenant.appId}/tracker`, { auth: tenant.key }),
  },
]

describe('a dashboard session proves again who it is before data starts going somewhere; an sk_ key does not', () => {
  for (const r of ROUTES) {
    test(`${r.method} ${r.purpose}: refused without a confirmation, once with one, unchanged for an sk_ key`, async () => {
      const before = await r.count()
      const auditedBefore = (await orgAudit(r.audited)).length

      const without = await asOwner(r.method, r.path(), r.body())
      expect([without.status, without.body.error.code]).toEqual([401, 'invalid_credentials'])
      expect(without.body.error.details).toMatchObject({ reauthRequired: true, passwordReauth: CONFIRM, purpose: r.purpose })
      expect(without.body.error.message).toContain(CONFIRM)
      // A confirmation for another action lets nothing through (and is not used up by this one).
      expect((await confirm('key_create')).status).toBe(200)
      expect((await asOwner(r.method, r.path(), r.body())).status).toBe(401)
      // A wrong password records nothing and is audited with what was attempted.
      const wrong = await confirm(r.purpose, 'not the password')
      expect([wrong.status, wrong.body.error.code]).toEqual([401, 'invalid_credentials'])
      expect((await asOwner(r.method, r.path(), r.body())).status).toBe(401)
      expect(await r.count()).toBe(before)
      expect((await orgAudit(r.audited)).length).toBe(auditedBefore)
      const failed = await instanceAudit('admin.password_reentry_failed')
      expect(dataOf(failed.at(-1)!.data)).toEqual({ purpose: r.purpose })
      expect(JSON.stringify(failed)).not.toContain('not the password')

      const ok = await confirm(r.purpose)
      expect(ok.status).toBe(200)
      expect(ok.body).toMatchObject({ purpose: r.purpose })
      expect(Date.parse(ok.body.expiresAt) - Date.parse(ok.body.at)).toBe(REAUTH_TTL_MS)
      const confirmed = await instanceAudit('admin.reauthenticated')
      expect([confirmed.at(-1)!.actor, dataOf(confirmed.at(-1)!.data)]).toEqual([`admin:${owner.id}`, { method: 'password', purpose: r.purpose }])
      expect(JSON.stringify(confirmed)).not.toContain(PASSWORD)

      const done = await asOwner(r.method, r.path(), r.body())
      expect(done.status).toBe(r.status)
      expect(await r.count()).toBe(1)
      // Audited as before, as the admin.
      expect((await orgAudit(r.audited)).at(-1)).toMatchObject({ actor: `admin:${owner.id}` })
      // Used up: the next change asks again.
      const usedUp = await asOwner(r.method, r.path(), r.again())
      expect([usedUp.status, usedUp.body.error.details?.reauthRequired]).toEqual([401, true])
      expect((await asOwner('GET', CONFIRM.replace('/password', ''))).body.reauthenticated).toBeNull()
      await r.undo()
      expect(await r.count()).toBe(0)

      // The sk_ key's call, body as documented, needs nothing more.
      const byKey = await call(server.url, r.method, r.path(), { auth: tenant.key, body: r.body() })
      expect(byKey.status).toBe(r.status)
      expect((await orgAudit(r.audited)).at(-1)).toMatchObject({ actor: `key:${tenant.keyId}` })
      await r.undo()
    })
  }

  test('rotating a webhook or tracker webhook secret hands one out that signs what is believed after the session: asked like creating', async () => {
    expect((await call(server.url, 'PUT', `/v1/apps/${tenant.appId}/tracker`, { auth: tenant.key, body: ROUTES.find((r) => r.purpose === 'tracker_connect')!.body() })).status).toBe(200)
    const hook = (await call(server.url, 'POST', '/v1/webhooks', { auth: tenant.key, body: { url: 'http://127.0.0.1:9/receiver' } })).body
    for (const [purpose, path] of [
      ['webhook_secret_rotate', `/v1/webhooks/${hook.id}/rotate-secret`],
      ['tracker_connect', `/v1/apps/${tenant.appId}/tracker/rotate-webhook-secret`],
    ]) {
      const refused = await asOwner('POST', path)
      expect([path, refused.status, refused.body.error.details]).toEqual([path, 401, expect.objectContaining({ reauthRequired: true, purpose })])
      expect(JSON.stringify(refused.body)).not.toMatch(/whsec_|"webhookSecret"/)
      expect((await confirm(purpose)).status).toBe(200)
      expect([path, (await asOwner('POST', path)).status]).toEqual([path, 200])
      expect((await asOwner('POST', path)).status).toBe(401) // used up
      expect((await call(server.url, 'POST', path, { auth: tenant.key })).status).toBe(200) // an sk_ key: as documented
    }
    // The webhook secret was rotated twice in all (the session once, the key once); nothing else.
    expect((await orgAudit('webhook.secret_rotated')).map((e: { actor: string }) => e.actor)).toEqual([`admin:${owner.id}`, `key:${tenant.keyId}`])
    await ROUTES[0].undo()
    await ROUTES.find((r) => r.purpose === 'tracker_connect')!.undo()
  })

  test('a confirmation lasts 5 minutes', async () => {
    expect((await confirm('webhook_create')).status).toBe(200)
    clock.advance(REAUTH_TTL_MS + 1000)
    expect((await asOwner('POST', '/v1/webhooks', { url: 'http://127.0.0.1:9/late' })).status).toBe(401)
    expect((await confirm('webhook_create')).status).toBe(200)
    clock.advance(REAUTH_TTL_MS - 1000)
    expect((await asOwner('POST', '/v1/webhooks', { url: 'http://127.0.0.1:9/in-time' })).status).toBe(201)
    await ROUTES[0].undo()
  })

  test('a refused URL costs no confirmation: it is checked first, and the confirmation is used by the change only', async () => {
    expect((await confirm('webhook_create')).status).toBe(200)
    const bad = await asOwner('POST', '/v1/webhooks', { url: 'ftp://127.0.0.1/x' })
    expect(bad.status).toBeGreaterThanOrEqual(400)
    expect(bad.status).not.toBe(401)
    expect((await asOwner('POST', '/v1/webhooks', { url: 'http://127.0.0.1:9/fixed' })).status).toBe(201)
    await ROUTES[0].undo()
  })

  test('SMTP: the From address alone is no new destination; host, port, TLS, user or password are', async () => {
    const path = `/v1/apps/${tenant.appId}/smtp`
    const settings = { host: '127.0.0.1', port: 2525, tls: 'none', user: 'mailer', password: 'smtp secret', from: 'noreply@example.com' }
    expect((await confirm('smtp_change')).status).toBe(200)
    expect((await asOwner('PUT', path, settings)).status).toBe(200)
    const { password: _kept, ...withoutPassword } = settings
    expect((await asOwner('PUT', path, { ...withoutPassword, from: 'Acme <noreply@example.com>' })).status).toBe(200)
    for (const change of [{ port: 2526, password: 'smtp secret' }, { tls: 'starttls', password: 'smtp secret' }, { user: 'other' }, { password: 'another' }, { password: null }]) {
      const r = await asOwner('PUT', path, { ...withoutPassword, ...change })
      expect([JSON.stringify(change), r.status, r.body.error?.details?.purpose]).toEqual([JSON.stringify(change), 401, 'smtp_change'])
    }
    expect((await call(server.url, 'GET', path, { auth: tenant.key })).body).toMatchObject({ port: 2525, tls: 'none', user: 'mailer', passwordSet: true, from: 'Acme <noreply@example.com>' })
    await ROUTES[1].undo()
  })

  test('tracker: the state map and push rules alone are no new destination; the token or project are', async () => {
    const path = `/v1/apps/${tenant.appId}/tracker`
    const body = { kind: 'github', apiUrl: stub.apiUrl, project: STUB_PROJECT, token: stub.token }
    expect((await confirm('tracker_connect')).status).toBe(200)
    expect((await asOwner('PUT', path, body)).status).toBe(200)
    const { token: _kept, ...keep } = body
    expect((await asOwner('PUT', path, { ...keep, stateMap: { "won't fix": 'ignore' }, rules: { minDuplicates: 3, onAwaitingManual: [] } })).status).toBe(200)
    for (const change of [{ token: stub.token }, { project: 'attacker/repo' }, { webhookSecret: 'x'.repeat(32) }]) {
      const r = await asOwner('PUT', path, { ...keep, ...change })
      expect([JSON.stringify(change), r.status, r.body.error?.details?.purpose]).toEqual([JSON.stringify(change), 401, 'tracker_connect'])
    }
    await ROUTES.find((r) => r.purpose === 'tracker_connect')!.undo()
  })

  test('wrong passwords at the confirmation are throttled per admin like every re-entry; CSRF and the purpose are checked', async () => {
    const guesser = await signIn('guesser@example.com', 'guesser password 1')
    for (let i = 0; i < REENTRY_BACKOFF.freeFailures; i++) expect((await confirm('webhook_create', `guess ${i}`, guesser)).status).toBe(401)
    const blocked = await confirm('webhook_create', 'guesser password 1', guesser)
    expect([blocked.status, blocked.body.error.code]).toEqual([429, 'rate_limited'])
    clock.advance(Number(blocked.headers.get('retry-after')) * 1000)
    expect((await confirm('webhook_create', 'guesser password 1', guesser)).status).toBe(200)

    const noCsrf = await call(server.url, 'POST', CONFIRM, { body: { purpose: 'webhook_create', password: PASSWORD }, headers: { cookie: owner.cookie } })
    expect([noCsrf.status, noCsrf.body.error.code]).toEqual([403, 'csrf_failed'])
    expect((await call(server.url, 'POST', CONFIRM, { body: { purpose: 'webhook_create', password: PASSWORD } })).status).toBe(401)
    for (const body of [{ purpose: 'everything', password: PASSWORD }, { purpose: 'webhook_create' }, { purpose: 'webhook_create', password: PASSWORD, extra: 1 }, { purpose: 'webhook_create', password: '' }]) {
      const r = await asOwner('POST', CONFIRM, body)
      expect([JSON.stringify(body), r.status, r.body.error.code]).toEqual([JSON.stringify(body), 400, 'invalid_body'])
    }
    // Fuzz: deep nesting, huge values, other JSON types, junk query parameters: a 4xx envelope, never a 5xx.
    let deep: unknown = 'x'
    for (let i = 0; i < 5_000; i++) deep = [deep]
    const junk: unknown[] = [deep, { purpose: deep, password: PASSWORD }, { purpose: 'webhook_create', password: 'p'.repeat(200_000) }, { purpose: 'x'.repeat(100_000), password: PASSWORD }, null, 7, 'text', [], { purpose: ['webhook_create'], password: [PASSWORD] }]
    for (const body of junk) {
      const r = await asOwner('POST', CONFIRM, body)
      expect(r.status, JSON.stringify(body).slice(0, 80)).toBeGreaterThanOrEqual(400)
      expect(r.status).toBeLessThan(500)
      expect(typeof r.body.error.code).toBe('string')
    }
    const queried = await asOwner('POST', `${CONFIRM}?purpose=key_create&password=x&a[b][c]=1&${'z'.repeat(3000)}=1`, { purpose: 'webhook_create', password: 'not the password' })
    expect([queried.status, queried.body.error.code]).toEqual([401, 'invalid_credentials'])
    // None of it confirmed anything.
    expect((await asOwner('GET', CONFIRM.replace('/password', ''))).body.reauthenticated).toBeNull()
  })
})

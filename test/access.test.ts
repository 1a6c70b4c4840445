/**
 * The role matrix, route by route: every /v1 and /admin/api route is listed here with who may call it
 * (a new route fails the coverage test until it is added), and each permission-checked route is called
 * by every kind of caller — an Org member's, an Org owner's and the instance owner's dashboard session,
 * an sk_ key, and another Org's owner — expecting 403 forbidden (before the body is judged), 404 for
 * another Org, or the route's own answer. Then the audit rows of the changes a member used to be able
 * to make: webhooks, Slack, user tokens; written in the change's own transaction.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Elysia } from 'elysia'
import { call, seedTenant, startTestServer, type Tenant, type TestServer } from './harness'
import { createAdminsService } from '../src/modules/admins/service'
import { passwordHasher } from '../src/modules/admins/password-hash'
import { accessGuard, assertEveryRouteDeclaresAccess } from '../src/http/access-guard'
import type { Grant } from '../src/core/access'
import { dbRun } from './sqlite-of'
import { erasureDigestKey, identityDigest } from '../src/modules/reporters/service'

let server: TestServer
let acme: Tenant
let other: Tenant
const admin: Record<string, { id: string; cookie: string; csrf: string }> = {}

async function signIn(email: string, password: string) {
  const r = await call(server.url, 'POST', '/admin/api/session', { body: { email, password } })
  expect(r.status).toBe(200)
  return { id: r.body.id as string, cookie: r.headers.get('set-cookie')!.split(';')[0], csrf: r.body.csrfToken as string }
}

beforeAll(async () => {
  // Some 300 calls per caller below: a higher ceiling than the default per-key bucket.
  server = await startTestServer({ FIXLOOP_RATE_LIMIT_MULTIPLIER: '20', FIXLOOP_WEBHOOK_ALLOW_PRIVATE: '1' })
  acme = await seedTenant(server.admin, {}, 'Acme')
  other = await seedTenant(server.admin, {}, 'Other')
  const admins = createAdminsService(server.ctx.store.admins, server.ctx.box, server.ctx.clock, passwordHasher(server.ctx.config.passwordHashMib))
  await admins.create('root@example.com', 'root password 1')
  await admins.create('owner@example.com', 'owner password 1', [acme.orgId], 'owner')
  await admins.create('member@example.com', 'member password 1', [acme.orgId], 'member')
  await admins.create('stranger@example.com', 'stranger password 1', [other.orgId], 'owner')
  admin.instance_owner = await signIn('root@example.com', 'root password 1')
  admin.owner = await signIn('owner@example.com', 'owner password 1')
  admin.member = await signIn('member@example.com', 'member password 1')
  admin.stranger = await signIn('stranger@example.com', 'stranger password 1')
})

afterAll(async () => {
  await server?.close()
})

const ALL: Grant[] = ['member', 'owner', 'instance_owner', 'api_key']
const OWNERS_AND_KEYS: Grant[] = ['owner', 'instance_owner', 'api_key']
const OWNERS: Grant[] = ['owner', 'instance_owner']
const INSTANCE: Grant[] = ['instance_owner']

/**
 * Every route of the guarded surface: its declared access and, for permission-checked routes, who may
 * call it. This is the role matrix of docs/dashboard.md, written out independently of src/core/access.ts.
 */
const MATRIX: Record<string, { access: string; allowed?: Grant[] }> = {
  'POST /v1/feedback': { access: 'widget' },
  'POST /v1/feedback/upload-url': { access: 'widget' },
  'PUT /v1/uploads/{appId}/{name}': { access: 'signed_url' },
  'GET /v1/uploads/{appId}/{name}': { access: 'signed_url' },
  'POST /v1/chatops/slack/{id}/commands': { access: 'slack_signature' },
  'POST /v1/git-hooks/{appId}': { access: 'git_host_signature' },
  'POST /v1/tracker-hooks/{appId}': { access: 'tracker_signature' },
  'GET /v1/apps/{id}/tracker': { access: 'trackers.manage', allowed: OWNERS_AND_KEYS },
  'PUT /v1/apps/{id}/tracker': { access: 'trackers.manage', allowed: OWNERS_AND_KEYS },
  'DELETE /v1/apps/{id}/tracker': { access: 'trackers.manage', allowed: OWNERS_AND_KEYS },
  'POST /v1/apps/{id}/tracker/rotate-webhook-secret': { access: 'trackers.manage', allowed: OWNERS_AND_KEYS },
  'POST /v1/feedback/{id}/tracker-issue': { access: 'reports.triage', allowed: ALL },
  'GET /v1/me/feedback': { access: 'widget' },
  'GET /v1/widget/challenge': { access: 'widget' },
  'GET /v1/widget/config': { access: 'widget' },
  'GET /v1/mail/unsubscribe': { access: 'anyone' },
  'POST /v1/mail/unsubscribe': { access: 'anyone' },
  'GET /v1/mail/confirm': { access: 'anyone' },
  'POST /v1/mail/confirm': { access: 'anyone' },
  'GET /v1/feedback/{id}/notification': { access: 'org.read', allowed: ALL },
  'GET /v1/apps/{id}/smtp': { access: 'mail.manage', allowed: OWNERS_AND_KEYS },
  'PUT /v1/apps/{id}/smtp': { access: 'mail.manage', allowed: OWNERS_AND_KEYS },
  'DELETE /v1/apps/{id}/smtp': { access: 'mail.manage', allowed: OWNERS_AND_KEYS },
  'POST /v1/apps/{id}/smtp/test': { access: 'mail.manage', allowed: OWNERS_AND_KEYS },
  'GET /v1/feedback': { access: 'org.read', allowed: ALL },
  'GET /v1/feedback/{id}': { access: 'org.read', allowed: ALL },
  'PATCH /v1/feedback/{id}': { access: 'reports.triage', allowed: ALL },
  'GET /v1/feedback/{id}/similar': { access: 'org.read', allowed: ALL },
  'POST /v1/feedback/{id}/merge': { access: 'reports.triage', allowed: ALL },
  'POST /v1/feedback/{id}/unmerge': { access: 'reports.triage', allowed: ALL },
  'POST /v1/feedback/{id}/resolve': { access: 'reports.triage', allowed: ALL },
  'POST /v1/feedback/{id}/reject-suggestion': { access: 'reports.triage', allowed: ALL },
  'GET /v1/apps/{id}/triage': { access: 'org.read', allowed: ALL },
  'POST /v1/apps/{id}/triage/reset': { access: 'reports.triage', allowed: ALL },
  'GET /v1/agent-runs/{id}': { access: 'org.read', allowed: ALL },
  'GET /v1/feedback/{id}/agent-runs': { access: 'org.read', allowed: ALL },
  'GET /v1/apps': { access: 'org.read', allowed: ALL },
  'GET /v1/events': { access: 'org.read', allowed: ALL },
  'GET /v1/events/stream': { access: 'org.read', allowed: ALL },
  'GET /v1/audit': { access: 'audit.export', allowed: OWNERS_AND_KEYS },
  'GET /v1/reporters/feedback': { access: 'reporters.manage', allowed: OWNERS_AND_KEYS },
  'POST /v1/reporters/erase': { access: 'reporters.manage', allowed: OWNERS_AND_KEYS },
  'POST /v1/tokens/mint': { access: 'tokens.mint', allowed: OWNERS_AND_KEYS },
  'POST /v1/webhooks': { access: 'webhooks.manage', allowed: OWNERS_AND_KEYS },
  'GET /v1/webhooks': { access: 'webhooks.manage', allowed: OWNERS_AND_KEYS },
  'GET /v1/webhooks/{id}': { access: 'webhooks.manage', allowed: OWNERS_AND_KEYS },
  'DELETE /v1/webhooks/{id}': { access: 'webhooks.manage', allowed: OWNERS_AND_KEYS },
  'POST /v1/webhooks/{id}/rotate-secret': { access: 'webhooks.manage', allowed: OWNERS_AND_KEYS },
  'POST /v1/webhooks/{id}/enable': { access: 'webhooks.manage', allowed: OWNERS_AND_KEYS },
  'POST /v1/webhooks/{id}/test': { access: 'webhooks.manage', allowed: OWNERS_AND_KEYS },
  'GET /v1/webhooks/{id}/deliveries': { access: 'webhooks.manage', allowed: OWNERS_AND_KEYS },
  'POST /v1/webhooks/{id}/redeliver-failed': { access: 'webhooks.manage', allowed: OWNERS_AND_KEYS },
  'POST /v1/webhooks/deliveries/{id}/redeliver': { access: 'webhooks.manage', allowed: OWNERS_AND_KEYS },
  'POST /v1/chatops/slack': { access: 'chatops.manage', allowed: OWNERS_AND_KEYS },
  'GET /v1/chatops/slack': { access: 'chatops.manage', allowed: OWNERS_AND_KEYS },
  'DELETE /v1/chatops/slack/{id}': { access: 'chatops.manage', allowed: OWNERS_AND_KEYS },
  'GET /v1/chatops/slack/users': { access: 'chatops.manage', allowed: OWNERS_AND_KEYS },
  'POST /v1/chatops/slack/users': { access: 'chatops.manage', allowed: OWNERS_AND_KEYS },
  'DELETE /v1/chatops/slack/users/{teamId}/{userId}': { access: 'chatops.manage', allowed: OWNERS_AND_KEYS },
  'GET /admin/api/sign-in-methods': { access: 'anyone' },
  'POST /admin/api/setup': { access: 'anyone' },
  'POST /admin/api/session': { access: 'anyone' },
  'GET /admin/api/session': { access: 'signed_in' },
  'DELETE /admin/api/session': { access: 'signed_in' },
  'GET /admin/api/sessions': { access: 'signed_in' },
  'DELETE /admin/api/sessions/{id}': { access: 'signed_in' },
  'POST /admin/api/me/totp/secret': { access: 'signed_in' },
  'PUT /admin/api/me/totp': { access: 'signed_in' },
  'DELETE /admin/api/me/totp': { access: 'signed_in' },
  'GET /admin/api/me/reauth': { access: 'signed_in' },
  'POST /admin/api/me/reauth': { access: 'signed_in' },
  'POST /admin/api/me/reauth/password': { access: 'signed_in' },
  'GET /admin/api/orgs': { access: 'signed_in' },
  'POST /admin/api/orgs': { access: 'orgs.create', allowed: INSTANCE },
  'GET /admin/api/orgs/{orgId}/apps': { access: 'org.read', allowed: OWNERS.concat('member') },
  'POST /admin/api/orgs/{orgId}/apps': { access: 'apps.manage', allowed: OWNERS },
  'PATCH /admin/api/orgs/{orgId}/apps/{appId}': { access: 'apps.manage', allowed: OWNERS },
  'DELETE /admin/api/orgs/{orgId}/apps/{appId}': { access: 'apps.manage', allowed: OWNERS },
  'POST /admin/api/orgs/{orgId}/apps/{appId}/secret/reveal': { access: 'apps.manage', allowed: OWNERS },
  'POST /admin/api/orgs/{orgId}/apps/{appId}/secret/rotate': { access: 'apps.manage', allowed: OWNERS },
  'GET /admin/api/orgs/{orgId}/apps/{appId}/repo': { access: 'apps.manage', allowed: OWNERS },
  'PUT /admin/api/orgs/{orgId}/apps/{appId}/repo': { access: 'repos.manage', allowed: INSTANCE },
  'DELETE /admin/api/orgs/{orgId}/apps/{appId}/repo': { access: 'repos.manage', allowed: INSTANCE },
  'GET /admin/api/orgs/{orgId}/keys': { access: 'keys.manage', allowed: OWNERS },
  'POST /admin/api/orgs/{orgId}/keys': { access: 'keys.manage', allowed: OWNERS },
  'DELETE /admin/api/orgs/{orgId}/keys/{keyId}': { access: 'keys.manage', allowed: OWNERS },
  'GET /admin/api/orgs/{orgId}/costs': { access: 'org.read', allowed: OWNERS.concat('member') },
  'GET /admin/api/orgs/{orgId}/audit': { access: 'audit.read', allowed: OWNERS },
  'GET /admin/api/orgs/{orgId}/inbox': { access: 'org.read', allowed: OWNERS.concat('member') },
  'GET /admin/api/orgs/{orgId}/inbox/counts': { access: 'org.read', allowed: OWNERS.concat('member') },
  'POST /admin/api/orgs/{orgId}/reads': { access: 'org.read', allowed: OWNERS.concat('member') },
  'GET /admin/api/orgs/{orgId}/feedback/{id}/history': { access: 'org.read', allowed: OWNERS.concat('member') },
}

/** A well-formed id nothing has: an allowed caller gets the route's own 404, never a change. */
const NOBODY = 'ffffffffffffffffffffffff'

function concretePath(template: string, orgId: string): string {
  return template
    .replace('{orgId}', orgId)
    .replace('{teamId}', 'T0123')
    .replace('{userId}', 'U0123')
    .replace(/\{[a-zA-Z]+\}/g, NOBODY)
}

type Caller = Grant | 'stranger'

/** One call with no body, as `who`; only the status and the JSON error are read (a stream is cancelled). */
async function probe(who: Caller, method: string, template: string): Promise<{ status: number; code?: string; body: any }> {
  const isAdminApi = template.startsWith('/admin/api/')
  const headers: Record<string, string> = {}
  if (who === 'api_key') headers.authorization = `Bearer ${acme.key}`
  else {
    headers.cookie = admin[who === 'stranger' ? 'stranger' : who].cookie
    if (method !== 'GET') headers['x-csrf-token'] = admin[who === 'stranger' ? 'stranger' : who].csrf
    if (!isAdminApi) headers['x-fixloop-org'] = acme.orgId
  }
  const res = await fetch(server.url + concretePath(template, acme.orgId), { method, headers })
  if ((res.headers.get('content-type') ?? '').includes('text/event-stream')) {
    await res.body?.cancel()
    return { status: res.status, body: undefined }
  }
  const text = await res.text()
  const body = text ? JSON.parse(text) : undefined
  return { status: res.status, code: body?.error?.code, body }
}

describe('every route declares who may call it', () => {
  test('the matrix above covers exactly the /v1 and /admin/api routes of /openapi.json, with the same access', async () => {
    const doc = (await call(server.url, 'GET', '/openapi.json')).body
    const declared: Record<string, string> = {}
    for (const [path, ops] of Object.entries<Record<string, any>>(doc.paths)) {
      if (!path.startsWith('/v1/') && !path.startsWith('/admin/api/')) continue
      for (const [method, op] of Object.entries<any>(ops)) declared[`${method.toUpperCase()} ${path}`] = op['x-fixloop-access']
    }
    // With S3 (always so in PostgreSQL mode) the embedded store's own upload routes are not mounted.
    const expected = Object.entries(MATRIX).filter(([route]) => !(server.ctx.config.s3 && route.includes(' /v1/uploads/')))
    expect(Object.keys(declared).sort()).toEqual(expected.map(([route]) => route).sort())
    for (const [route, { access }] of expected) expect(`${route}: ${declared[route]}`).toBe(`${route}: ${access}`)
  })

  test('an app with a route that declares nothing is refused when built; one that declares is not', () => {
    const planted = new Elysia().use(accessGuard()).get('/v1/ok', () => 'ok', { access: 'org.read' }).get('/v1/forgot', () => 'oops').get('/healthz2', () => 'ok')
    expect(() => assertEveryRouteDeclaresAccess(planted.routes)).toThrow('GET /v1/forgot')
    expect(() => assertEveryRouteDeclaresAccess(planted.routes)).not.toThrow('/v1/ok')
    expect(() => assertEveryRouteDeclaresAccess(new Elysia().use(accessGuard()).post('/admin/api/x', () => 'ok', { access: 'signed_in' }).routes)).not.toThrow()
  })
})

describe('route × role', () => {
  const checked = Object.entries(MATRIX).filter(([, m]) => m.allowed)
  for (const [route, { allowed }] of checked) {
    const [method, template] = route.split(' ')
    const isAdminApi = template.startsWith('/admin/api/')
    for (const who of ALL) {
      // sk_ keys are not a credential of the dashboard's own routes at all.
      if (isAdminApi && who === 'api_key') continue
      const may = allowed!.includes(who)
      test(`${route} as ${who}: ${may ? 'allowed' : '403 forbidden'}`, async () => {
        const r = await probe(who, method, template)
        if (may) {
          expect([401, 403], JSON.stringify(r.body)).not.toContain(r.status)
        } else {
          expect([r.status, r.code]).toEqual([403, 'forbidden'])
          expect(Object.keys(r.body)).toEqual(['error'])
          expect(r.body.error.message).toBeString()
        }
      })
    }
    // An Org the caller does not belong to is 404, whatever the route, never 403 (no existence leak).
    if (template.includes('{orgId}') || !isAdminApi) {
      test(`${route} as another Org's owner: 404 not_found`, async () => {
        const r = await probe('stranger', method, template)
        expect([r.status, r.code]).toEqual([404, 'not_found'])
      })
    }
  }

  test('the role is judged before the body: a member posting junk to an owner route is 403, not 400', async () => {
    const r = await call(server.url, 'POST', '/v1/webhooks', {
      rawBody: '{"url": 12, "junk": true}',
      headers: { cookie: admin.member.cookie, 'x-csrf-token': admin.member.csrf, 'x-fixloop-org': acme.orgId, 'content-type': 'application/json' },
    })
    expect([r.status, r.body.error.code]).toEqual([403, 'forbidden'])
  })

  test('signed_in routes refuse no session (401) and serve any admin', async () => {
    expect((await call(server.url, 'GET', '/admin/api/sessions')).status).toBe(401)
    expect((await call(server.url, 'GET', '/admin/api/sessions', { headers: { cookie: admin.member.cookie } })).status).toBe(200)
  })
})

/** The Org's audit rows for `action`, newest first, as the dashboard lists them. */
async function auditRows(action: string): Promise<any[]> {
  const r = await call(server.url, 'GET', `/admin/api/orgs/${acme.orgId}/audit?limit=200`, { headers: { cookie: admin.owner.cookie } })
  expect(r.status).toBe(200)
  return r.body.data.filter((e: any) => e.action === action)
}

function asSession(who: 'owner' | 'member', method: string, path: string, body?: unknown) {
  return call(server.url, method, path, { body, headers: { cookie: admin[who].cookie, 'x-csrf-token': admin[who].csrf, 'x-fixloop-org': acme.orgId } })
}

/** The password confirmation a session gives before an action that outlives it (test/reauth-outbound.test.ts). */
async function confirmAs(who: 'owner', purpose: string) {
  expect((await call(server.url, 'POST', '/admin/api/me/reauth/password', { body: { purpose, password: 'owner password 1' }, headers: { cookie: admin[who].cookie, 'x-csrf-token': admin[who].csrf } })).status).toBe(200)
}

describe('what a member could do before is audited when an owner or a key does it', () => {
  test('webhooks: create, rotate, test, delete by an owner session; create by an sk_ key', async () => {
    await confirmAs('owner', 'webhook_create')
    const created = await asSession('owner', 'POST', '/v1/webhooks', { url: 'http://127.0.0.1:9/hook/secret-path?token=abc' })
    expect(created.status).toBe(201)
    const id = created.body.id
    await confirmAs('owner', 'webhook_secret_rotate')
    expect((await asSession('owner', 'POST', `/v1/webhooks/${id}/rotate-secret`)).status).toBe(200)
    expect((await asSession('owner', 'POST', `/v1/webhooks/${id}/test`)).status).toBe(202)
    expect((await asSession('owner', 'DELETE', `/v1/webhooks/${id}`)).status).toBe(200)
    const byKey = await call(server.url, 'POST', '/v1/webhooks', { auth: acme.key, body: { url: 'http://127.0.0.1:9/other' } })
    expect(byKey.status).toBe(201)

    const [fromKey, fromOwner] = await auditRows('webhook.created')
    expect(fromOwner).toMatchObject({ actor: `admin:${admin.owner.id}`, targetId: id, orgId: acme.orgId, ip: '127.0.0.1', data: { host: '127.0.0.1:9' } })
    expect(fromKey).toMatchObject({ actor: `key:${acme.keyId}`, targetId: byKey.body.id })
    for (const action of ['webhook.secret_rotated', 'webhook.tested', 'webhook.deleted']) {
      expect((await auditRows(action)).map((e) => [e.actor, e.targetId]), action).toEqual([[`admin:${admin.owner.id}`, id]])
    }
    // Never the URL's path or query (a receiver's token may be there), never a secret.
    const all = JSON.stringify((await call(server.url, 'GET', `/admin/api/orgs/${acme.orgId}/audit?limit=200`, { headers: { cookie: admin.owner.cookie } })).body)
    expect(all).not.toContain('secret-path')
    expect(all).not.toContain('token=abc')
    expect(all).not.toContain(created.body.secret)
  })

  test('Slack: connect, allow and withdraw a user, disconnect; the bot token and signing secret are not logged', async () => {
    const botToken = 'xoxb-1234567890-abcdefghij'
    const signingSecret = 'a'.repeat(32)
    await confirmAs('owner', 'slack_connect')
    const c = await asSession('owner', 'POST', '/v1/chatops/slack', { botToken, signingSecret, channel: 'C0123ABCD' })
    expect(c.status).toBe(201)
    await confirmAs('owner', 'slack_allow_user')
    expect((await asSession('owner', 'POST', '/v1/chatops/slack/users', { teamId: 'T0123', userId: 'U0456' })).status).toBe(200)
    expect((await asSession('owner', 'DELETE', '/v1/chatops/slack/users/T0123/U0456')).status).toBe(200)
    expect((await asSession('owner', 'DELETE', `/v1/chatops/slack/${c.body.id}`)).status).toBe(200)
    const me = `admin:${admin.owner.id}`
    expect((await auditRows('slack.connected')).map((e) => [e.actor, e.targetId, e.data.channel])).toEqual([[me, c.body.id, 'C0123ABCD']])
    expect((await auditRows('slack.user_allowed')).map((e) => [e.actor, e.data])).toEqual([[me, { teamId: 'T0123', userId: 'U0456' }]])
    expect((await auditRows('slack.user_denied')).map((e) => e.actor)).toEqual([me])
    expect((await auditRows('slack.disconnected')).map((e) => [e.actor, e.targetId])).toEqual([[me, c.body.id]])
    const all = JSON.stringify(await auditRows('slack.connected'))
    expect(all).not.toContain(botToken)
    expect(all).not.toContain(signingSecret)
  })

  test('a user token minted by a session is audited with the end user it speaks for; an sk_ key mint is not', async () => {
    const minted = await asSession('owner', 'POST', `/v1/tokens/mint?appId=${acme.appId}`, { sub: 'end-user-42' })
    expect(minted.status).toBe(200)
    expect((await call(server.url, 'POST', `/v1/tokens/mint?appId=${acme.appId}`, { auth: acme.key, body: { sub: 'backend-user' } })).status).toBe(200)
    const rows = await auditRows('token.minted')
    // The end user by their keyed digest (what `fixloop audit digest --external-user-id` prints), never in clear.
    const digest = identityDigest({ externalUserId: 'end-user-42' }, erasureDigestKey(server.ctx.urlSigningKey))
    expect(rows.map((e) => [e.actor, e.targetId, e.data.identityDigest])).toEqual([[`admin:${admin.owner.id}`, acme.appId, digest]])
    expect(JSON.stringify(rows)).not.toContain('end-user-42')
    expect(JSON.stringify(rows)).not.toContain(minted.body.token)
  })

  test('a member is refused each of these, and nothing is created or logged for it', async () => {
    const before = (await auditRows('webhook.created')).length
    const tries = [
      await asSession('member', 'POST', '/v1/webhooks', { url: 'http://127.0.0.1:9/m' }),
      await asSession('member', 'POST', `/v1/tokens/mint?appId=${acme.appId}`, { sub: 'anyone' }),
      await asSession('member', 'POST', '/v1/chatops/slack/users', { teamId: 'T0123', userId: 'U0999' }),
    ]
    expect(tries.map((r) => [r.status, r.body.error.code])).toEqual(Array(3).fill([403, 'forbidden']))
    expect((await auditRows('webhook.created')).length).toBe(before)
    const users = await call(server.url, 'GET', '/v1/chatops/slack/users', { auth: acme.key })
    expect(users.body.data).toEqual([])
  })

  test('the audit row is in the change’s transaction: when it cannot be written, the change is not made', async () => {
    const pg = server.ctx.storage.dialect === 'pg'
    if (pg) {
      await dbRun(server.ctx, `CREATE FUNCTION refuse_audit() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN IF NEW.action = 'webhook.created' THEN RAISE EXCEPTION 'audit refused'; END IF; RETURN NEW; END $$`)
      await dbRun(server.ctx, 'CREATE TRIGGER refuse_audit BEFORE INSERT ON audit_log FOR EACH ROW EXECUTE FUNCTION refuse_audit()')
    } else {
      await dbRun(server.ctx, `CREATE TEMP TRIGGER refuse_audit BEFORE INSERT ON audit_log WHEN NEW.action = 'webhook.created' BEGIN SELECT RAISE(ABORT, 'audit refused'); END`)
    }
    try {
      const r = await call(server.url, 'POST', '/v1/webhooks', { auth: acme.key, body: { url: 'http://127.0.0.1:9/atomic' } })
      expect(r.status).toBe(500)
      const list = await call(server.url, 'GET', '/v1/webhooks', { auth: acme.key })
      expect(list.body.data.map((w: any) => w.url)).not.toContain('http://127.0.0.1:9/atomic')
    } finally {
      if (pg) {
        await dbRun(server.ctx, 'DROP TRIGGER refuse_audit ON audit_log')
        await dbRun(server.ctx, 'DROP FUNCTION refuse_audit()')
      } else await dbRun(server.ctx, 'DROP TRIGGER refuse_audit')
    }
  })
})

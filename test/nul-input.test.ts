/**
 * NUL (U+0000) in anything a client sends: PostgreSQL's `text` refuses the byte where SQLite stores it,
 * so the same request used to be a 500 on one store and a 201 on the other. The rule (docs/api.md "NUL"):
 * every string a client sends — JSON bodies (values and keys), query strings, the headers that are
 * stored, a user token's claims — is refused at the HTTP edge with 400 invalid_body (a user token with
 * 401 invalid_user_token, its route's code) on BOTH stores; a third party's delivery (git host, tracker)
 * has NUL stripped instead, so it is answered 2xx and not retried forever. Run on SQLite and, with
 * FIXLOOP_TEST_DIALECT=pg, on PostgreSQL (scripts/test-pg.sh).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { call, runBinary, seedTenant, startTestServer, tempDir, type Reply, type Tenant, type TestServer } from './harness'
import { createAdminsService } from '../src/modules/admins/service'
import { passwordHasher } from '../src/modules/admins/password-hash'
import { delivery, send } from './git-host-webhooks'
import { TEST_DIALECT } from './cluster-env'
import { userToken } from './helpers-auth'
import { issueHook, startTrackerStub, type TrackerStub } from './tracker-stub'

const NUL = '\u0000'
let server: TestServer
let t: Tenant
let cookie: string
let csrf: string
let stub: TrackerStub

beforeAll(async () => {
  stub = startTrackerStub('github')
  server = await startTestServer({ FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000', FIXLOOP_TRACKER_ALLOW_PRIVATE: '1', FIXLOOP_SMTP_ALLOW_PRIVATE: '1', FIXLOOP_TRACKER_POLL_MINUTES: '0' })
  t = await seedTenant(server.admin, {}, 'Nul')
  await createAdminsService(server.ctx.store.admins, server.ctx.box, server.ctx.clock, passwordHasher(server.ctx.config.passwordHashMib)).create('root@example.com', 'root password 1')
  const r = await call(server.url, 'POST', '/admin/api/session', { body: { email: 'root@example.com', password: 'root password 1' } })
  expect(r.status).toBe(200)
  cookie = r.headers.get('set-cookie')!.split(';')[0]
  csrf = r.body.csrfToken
})
afterAll(async () => {
  await server?.close()
  stub?.stop()
})

const admin = (method: string, path: string, body?: unknown) => call(server.url, method, path, { body, headers: { cookie, ...(method === 'GET' ? {} : { 'x-csrf-token': csrf }) } })

function expectRefused(r: Reply, code = 'invalid_body', status = 400) {
  expect({ status: r.status, code: r.body?.error?.code }).toEqual({ status, code })
  if (code === 'invalid_body') expect(JSON.stringify(r.body.error.details)).toContain('NUL')
}

/** [name, request] where the request carries a NUL in the named field. */
const BODY_CASES: [string, () => Promise<Reply>][] = [
  ['feedback text', () => call(server.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: `a${NUL}b` } })],
  ['feedback url', () => call(server.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: 'hello', url: `https://a.example/${NUL}` } })],
  ['feedback userAgent', () => call(server.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: 'hello', userAgent: `UA${NUL}` } })],
  ['feedback identity.email', () => call(server.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: 'hello', identity: { email: `a${NUL}@b.example` } } })],
  ['feedback identity.name', () => call(server.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: 'hello', identity: { name: `N${NUL}` } } })],
  ['feedback identity.externalUserId', () => call(server.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: 'hello', identity: { externalUserId: `u${NUL}` } } })],
  ['feedback metadata value', () => call(server.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: 'hello', metadata: { a: [`x${NUL}`] } } })],
  ['feedback metadata key', () => call(server.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: 'hello', metadata: { [`k${NUL}`]: 1 } } })],
  ['feedback componentTarget.name', () => call(server.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: 'hello', componentTarget: { name: `b${NUL}` } } })],
  ['feedback consoleLogs', () => call(server.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: 'hello', consoleLogs: [{ level: 'error', message: `m${NUL}`, ts: 1 }] } })],
  ['mint sub', () => call(server.url, 'POST', `/v1/tokens/mint?appId=${t.appId}`, { auth: t.key, body: { sub: `u${NUL}` } })],
  ['mint ctx', () => call(server.url, 'POST', `/v1/tokens/mint?appId=${t.appId}`, { auth: t.key, body: { sub: 'u', ctx: { email: `a${NUL}@b.example` } } })],
  ['upload filename', () => call(server.url, 'POST', '/v1/feedback/upload-url', { auth: t.pub, body: { contentType: 'image/png', byteSize: 10, kind: 'screenshot', filename: `a${NUL}.png` } })],
  ['PATCH feedback', () => call(server.url, 'PATCH', `/v1/feedback/${'0'.repeat(24)}`, { auth: t.key, body: { status: `resolved${NUL}` } })],
  ['sign-in email', () => call(server.url, 'POST', '/admin/api/session', { body: { email: `root${NUL}@example.com`, password: 'root password 1' } })],
  ['sign-in password', () => call(server.url, 'POST', '/admin/api/session', { body: { email: 'root@example.com', password: `root password 1${NUL}` } })],
  ['App name (create)', () => admin('POST', `/admin/api/orgs/${t.orgId}/apps`, { name: `App${NUL}` })],
  ['App name (update)', () => admin('PATCH', `/admin/api/orgs/${t.orgId}/apps/${t.appId}`, { name: `App${NUL}` })],
  ['Org name', () => admin('POST', '/admin/api/orgs', { name: `Org${NUL}` })],
  ['SMTP host', () => call(server.url, 'PUT', `/v1/apps/${t.appId}/smtp`, { auth: t.key, body: { host: `mail${NUL}.example`, port: 25, tls: 'none', from: 'a@b.example' } })],
  ['SMTP user', () => call(server.url, 'PUT', `/v1/apps/${t.appId}/smtp`, { auth: t.key, body: { host: '127.0.0.1', port: 25, tls: 'none', user: `u${NUL}`, password: 'p', from: 'a@b.example' } })],
  ['SMTP password', () => call(server.url, 'PUT', `/v1/apps/${t.appId}/smtp`, { auth: t.key, body: { host: '127.0.0.1', port: 25, tls: 'none', user: 'u', password: `p${NUL}`, from: 'a@b.example' } })],
  ['SMTP from', () => call(server.url, 'PUT', `/v1/apps/${t.appId}/smtp`, { auth: t.key, body: { host: '127.0.0.1', port: 25, tls: 'none', from: `N${NUL} <a@b.example>` } })],
  ['tracker project', () => call(server.url, 'PUT', `/v1/apps/${t.appId}/tracker`, { auth: t.key, body: { kind: 'github', apiUrl: stub.apiUrl, project: `acme/sh${NUL}op`, token: stub.token } })],
  ['tracker token', () => call(server.url, 'PUT', `/v1/apps/${t.appId}/tracker`, { auth: t.key, body: { kind: 'github', apiUrl: stub.apiUrl, project: 'acme/shop', token: `${stub.token}${NUL}` } })],
  ['tracker stateMap', () => call(server.url, 'PUT', `/v1/apps/${t.appId}/tracker`, { auth: t.key, body: { kind: 'github', apiUrl: stub.apiUrl, project: 'acme/shop', token: stub.token, stateMap: { [`done${NUL}`]: 'resolved' } } })],
  ['webhook url', () => call(server.url, 'POST', '/v1/webhooks', { auth: t.key, body: { url: `https://hooks.example/${NUL}`, events: ['feedback.created'] } })],
]

const QUERY_CASES: [string, () => Promise<Reply>][] = [
  ['inbox q', () => admin('GET', `/admin/api/orgs/${t.orgId}/inbox?q=a%00b`)],
  ['inbox urlContains', () => admin('GET', `/admin/api/orgs/${t.orgId}/inbox?urlContains=%00`)],
  ['feedback list status', () => call(server.url, 'GET', '/v1/feedback?status=new%00', { auth: t.key })],
  ['inbox q repeated', () => admin('GET', `/admin/api/orgs/${t.orgId}/inbox?q=a&q=%00`)],
  ['audit cursor', () => admin('GET', `/admin/api/orgs/${t.orgId}/audit?cursor=%00`)],
]

describe('NUL in a client\'s JSON body or query string: 400 invalid_body on every store', () => {
  for (const [name, send] of [...BODY_CASES, ...QUERY_CASES]) {
    test(name, async () => expectRefused(await send()))
  }

  // The embedded upload store's route exists only without S3 (PostgreSQL mode runs with S3: no route, 404).
  const uploads = TEST_DIALECT === 'pg' ? [] : [['GET', '/v1/uploads/APP/a%00.png']]
  for (const [method, path] of [...uploads, ['POST', '/v1/git-hooks/a%00'], ['POST', '/v1/tracker-hooks/a%00'], ['DELETE', '/v1/chatops/slack/users/T%00/U1'], ['GET', '/v1/feedback/a%00']]) {
    test(`NUL in the path: ${method} ${path} → 400 invalid_id`, async () => {
      const r = await call(server.url, method, path.replace('APP', t.appId), { auth: t.key })
      expect({ status: r.status, code: r.body?.error?.code }).toEqual({ status: 400, code: 'invalid_id' })
    })
  }

  test('a query parameter the route does not read is ignored, NUL or not (docs/api.md)', async () => {
    expect((await call(server.url, 'GET', '/v1/apps?junk=%00&%00=1', { auth: t.key })).status).toBe(200)
    expect((await call(server.url, 'GET', '/v1/widget/challenge?junk=%00', { auth: t.pub })).status).toBe(200)
    const r = await admin('GET', `/admin/api/orgs/${t.orgId}/inbox?junk=%00&q=a%00b`)
    expect(r.body.error.details.issues[0].path).toBe('/q')
  })

  test('the refusal names the field by its JSON pointer', async () => {
    const r = await call(server.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: 'hello', identity: { name: `N${NUL}` } } })
    expect(r.body.error.details.issues[0].path).toBe('/identity/name')
  })

  test('an escaped backslash before "u0000" is not a NUL; the neighbours of NUL are fine', async () => {
    const r = await call(server.url, 'POST', '/v1/feedback', { auth: t.pub, rawBody: '{"text":"C:\\\\u0000 \\u0001 \\u007f \\uFFFD"}', headers: { 'content-type': 'application/json' } })
    expect(r.status).toBe(201)
  })

  test('a User-Agent the server would store cannot carry a NUL either', async () => {
    // Bun's HTTP parser refuses a raw NUL in a header; the JSON userAgent field is the other way in (above).
    const r = await call(server.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: 'hello' }, headers: { 'user-agent': 'UA ok' } })
    expect(r.status).toBe(201)
  })
})

describe('a user token with NUL in its claims: 401 invalid_user_token, never stored', () => {
  const sign = ({ sub, ...extra }: { sub: string; ctx?: Record<string, unknown> }) => userToken(t.secret, t.appId, sub, extra)
  for (const [name, claims] of [['sub', { sub: `u${NUL}` }], ['ctx', { sub: 'u', ctx: { email: `a${NUL}@b.example` } }], ['ctx key', { sub: 'u', ctx: { [`k${NUL}`]: 1 } }]] as const) {
    test(name, async () => {
      const token = await sign(claims)
      const r = await call(server.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: 'hello' }, headers: { 'x-service-user-token': token } })
      expectRefused(r, 'invalid_user_token', 401)
    })
  }
})

describe('a third party\'s delivery with NUL is stripped and answered 2xx (no retry storm)', () => {
  test('git host: a merged-PR delivery whose PR URL carries a NUL', async () => {
    const tenant = await seedTenant(server.admin, {}, 'NulHooks')
    const connected = await server.services.connections.connect(tenant.orgId, tenant.appId, { gitUrl: 'https://git.example/acme/shop.git', host: 'github', hostToken: 'host-token', hostApiUrl: 'http://127.0.0.1:9' })
    const secret = (connected as { webhookSecret?: string }).webhookSecret!
    const d = delivery('github', 'merged', { url: `https://git.example/acme/shop/pull/7${NUL}`, number: 7, head: `fix${NUL}` }, secret)
    const r = await send(server.url, tenant.appId, d)
    expect(r.status).toBe(200)
    expect(r.body.received).toBe(true)
  })

  test('tracker: an issue delivery whose fields carry a NUL', async () => {
    const tenant = await seedTenant(server.admin, {}, 'NulTracker')
    const c = await call(server.url, 'PUT', `/v1/apps/${tenant.appId}/tracker`, { auth: tenant.key, body: { kind: 'github', apiUrl: stub.apiUrl, project: 'acme/shop', token: stub.token } })
    expect(c.status).toBe(200)
    const d = issueHook(stub, 'closed', { number: 9, title: `t${NUL}`, body: `b${NUL}`, labels: null, state: 'closed', stateReason: null, comments: [], deleted: false }, c.body.webhookSecret, `maint${NUL}ainer`, `acme/sh${NUL}op`)
    const r = await call(server.url, 'POST', `/v1/tracker-hooks/${tenant.appId}`, { rawBody: d.body, headers: d.headers })
    expect(r.status).toBe(200)
  })
})

describe('the good requests of a batch are never failed by a poisoned one', () => {
  test('50 good and 50 NUL submissions at once: every good one 201, every NUL one 400', async () => {
    const replies = await Promise.all(
      Array.from({ length: 100 }, (_, i) => call(server.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: i % 2 ? `poisoned ${i} ${NUL}` : `good report number ${i}` } })),
    )
    expect(replies.map((r) => r.status)).toEqual(Array.from({ length: 100 }, (_, i) => (i % 2 ? 400 : 201)))
  })
})

describe('the CLI refuses a file input holding NUL with exit 2, naming the flag', () => {
  test('tracker --token-file (a file and stdin), app smtp --password-file, connect-repo --host-token-file, chatops secrets', async () => {
    const dir = tempDir()
    const data = join(dir, 'data')
    const file = join(dir, 'secret')
    writeFileSync(file, `tok${NUL}en\n`)
    const json = async (args: string[]) => JSON.parse((await runBinary([...args, '--data-dir', data, '--json'])).stdout)
    const org = await json(['org', 'create', '--name', 'Cli'])
    const app = await json(['app', 'create', '--org', org.id, '--name', 'Cli App'])
    const cases: [string[], string][] = [
      [['tracker', 'connect', '--app', app.id, '--kind', 'github', '--project', 'a/b', '--token-file', file], '--token-file'],
      [['app', 'smtp', app.id, '--host', 'mail.example', '--port', '25', '--tls', 'none', '--from', 'a@b.example', '--user', 'u', '--password-file', file], '--password-file'],
      [['app', 'connect-repo', app.id, '--git-url', 'https://x.example/a/b.git', '--host', 'github', '--host-token-file', file], '--host-token-file'],
      [['chatops', 'slack', 'connect', '--org', org.id, '--bot-token-file', file, '--signing-secret-file', file, '--channel', 'C1'], '--bot-token-file'],
    ]
    for (const [args, flag] of cases) {
      const r = await runBinary([...args, '--data-dir', data])
      expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 2, stderr: expect.stringContaining(`${flag}: ${file} must not contain NUL`) })
    }
    const proc = Bun.spawn([join(import.meta.dir, '..', 'dist', 'fixloop'), 'tracker', 'connect', '--app', app.id, '--kind', 'github', '--project', 'a/b', '--token-file', '-', '--data-dir', data], { stdin: new TextEncoder().encode(`tok${NUL}\n`), stderr: 'pipe', stdout: 'pipe' })
    expect([await proc.exited, await new Response(proc.stderr).text()]).toEqual([2, expect.stringContaining('--token-file: - must not contain NUL')])
  })
})

/**
 * Issue 10 item 8 and 17.9, through the running server and the services the CLI calls: the host API's
 * owner/repo is the last two segments of the git URL's path (GitHub, Gitea) or the whole path (GitLab);
 * a deleted App's reports stay listable by appId; PATCH's validation error names the allowed values.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, seedTenant, startTestServer, type Tenant, type TestServer } from './harness'
import { hostRepoOf } from '../src/modules/connections/service'

let srv: TestServer
let t: Tenant

beforeAll(async () => {
  srv = await startTestServer({ FIXLOOP_RATE_LIMIT_MULTIPLIER: '100' })
  t = await seedTenant(srv.admin)
})
afterAll(() => srv.close())

describe('owner/repo for the host API (CONTRACT)', () => {
  const CASES: [string, string, string][] = [
    ['https://github.com/acme/shop.git', 'github', 'acme/shop'],
    ['https://git.example/mirror/github/acme/shop.git', 'github', 'acme/shop'],
    ['ssh://git@proxy.example:2222/prefix/a/b/acme/shop.git', 'gitea', 'acme/shop'],
    ['git@git.example:mirrors/acme/shop.git', 'gitea', 'acme/shop'],
    ['/srv/git/mirrors/acme/shop.git', 'github', 'acme/shop'],
    ['file:///srv/git/acme/shop.git/', 'github', 'acme/shop'],
    ['https://gitlab.example/group/sub/shop.git', 'gitlab', 'group/sub/shop'],
  ]
  for (const [url, kind, want] of CASES) test(`${kind} ${url} → ${want}`, () => expect(hostRepoOf(url, kind)).toBe(want))

  test('the stored connection the runner reads uses it; --host-repo still wins', async () => {
    const connections = srv.services.connections
    await connections.connect(t.orgId, t.appId, { gitUrl: 'https://git.example/mirror/github/acme/shop.git', host: 'github', hostToken: 'ghp_' + 'x9'.repeat(18) })
    expect(await connections.get(t.orgId, t.appId)).toMatchObject({ hostRepo: 'acme/shop' })
    expect(await connections.load(t.appId)).toMatchObject({ hostRepo: 'acme/shop' })
    await connections.connect(t.orgId, t.appId, { gitUrl: 'https://git.example/mirror/github/acme/shop.git', host: 'github', hostToken: 'ghp_' + 'x9'.repeat(18), hostRepo: 'other/name' })
    expect(await connections.load(t.appId)).toMatchObject({ hostRepo: 'other/name' })
  })
})

describe("a deleted App's reports", () => {
  test('GET /v1/feedback?appId=<deleted App> lists them; an App never in the Org is 404', async () => {
    const app = await srv.admin.createApp(t.orgId, { name: 'Soon gone' })
    const posted = await call(srv.url, 'POST', '/v1/feedback', { auth: app.publicKey, body: { text: 'report of an App about to be deleted' } })
    expect(posted.status).toBe(201)
    await srv.admin.deleteApp(t.orgId, app.id)
    const one = await call(srv.url, 'GET', `/v1/feedback/${posted.body.id}`, { auth: t.key })
    expect(one.status).toBe(200)
    const list = await call(srv.url, 'GET', `/v1/feedback?appId=${app.id}`, { auth: t.key })
    expect(list.status).toBe(200)
    expect(list.body.data.map((i: { id: string }) => i.id)).toEqual([posted.body.id])
    const other = await seedTenant(srv.admin, {}, 'Other')
    expect((await call(srv.url, 'GET', `/v1/feedback?appId=${other.appId}`, { auth: t.key })).status).toBe(404)
  })
})

describe('validation errors name the allowed values (17.9)', () => {
  test('PATCH status and the status filter', async () => {
    const posted = await call(srv.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: 'patch me' } })
    for (const status of ['bogus', 'received', 5]) {
      const r = await call(srv.url, 'PATCH', `/v1/feedback/${posted.body.id}`, { auth: t.key, body: { status } })
      expect(r.status).toBe(400)
      expect(r.body.error.details.issues).toEqual([{ path: '/status', message: 'status must be one of: "queued", "archived"' }])
    }
    const q = await call(srv.url, 'GET', '/v1/feedback?status=bogus', { auth: t.key })
    expect(q.status).toBe(400)
    expect(q.body.error.details.issues[0].message).toContain('"awaiting_manual"')
  })
})

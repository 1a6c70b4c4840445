/**
 * POST /v1/git-hooks/:appId on a real server, for each git host: real-shaped deliveries (test/git-host-webhooks.ts)
 * signed with the App's webhook secret move the report fixloop opened the PR for; attacks change nothing:
 * forged or missing signature (401), a replayed delivery (2xx, ignored), a PR fixloop did not open (2xx,
 * ignored), junk bodies (4xx, never 5xx).
 */
import { randomBytes, randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, eventually, seedTenant, startTestServer, type Tenant, type TestServer } from './harness'
import { delivery, send, type Delivery, type HookHost } from './git-host-webhooks'
import { sql } from './repos/store-fixtures'
import type { FreshStore } from './dialects'
import { SseClient } from './events-helpers'
import { Receiver } from './webhook-receiver'

let server: TestServer
const q = (text: string, params: unknown[] = []) => sql<any>({ storage: server.ctx.storage } as FreshStore, text, params)

/** An App connected to `host` with its webhook secret, and reports: `lead` in pr_opened with the PR its run opened, duplicates. */
async function setUp(host: HookHost) {
  const tenant: Tenant = await seedTenant(server.admin)
  const connected = await server.services.connections.connect(tenant.orgId, tenant.appId, { gitUrl: 'https://git.example/acme/shop.git', host, hostToken: 'host-token', hostApiUrl: 'http://127.0.0.1:9' })
  const secret = (connected as { webhookSecret?: string }).webhookSecret!
  expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/)
  const n = Math.floor(Math.random() * 1e6)
  const url = host === 'gitlab' ? `https://git.example/acme/shop/-/merge_requests/${n}` : host === 'gitea' ? `https://git.example/acme/shop/pulls/${n}` : `https://git.example/acme/shop/pull/${n}`
  const id = () => randomBytes(12).toString('hex')
  const [lead, dup, other, run] = [id(), id(), id(), id()]
  const insert = (fid: string, status: string, extra = '') =>
    q(`INSERT INTO feedback (id, org_id, app_id, status, text, submitted_mode, external_user_id, created_at, updated_at${extra ? ', duplicate_of_id' : ''}) VALUES (?, ?, ?, ?, 'my password is hunter2', ?, ?, 1, 1${extra ? ', ?' : ''})`, [fid, tenant.orgId, tenant.appId, status, 'private', `sub-${fid}`, ...(extra ? [extra] : [])])
  await insert(lead, 'pr_opened')
  await insert(dup, 'sanitized', lead)
  await insert(other, 'pr_opened')
  await q('UPDATE feedback SET merge_request_url = ? WHERE id IN (?, ?)', [url, lead, dup])
  await q("INSERT INTO agent_runs (id, org_id, app_id, feedback_id, provider, status, branch, timings, pr_url, created_at) VALUES (?, ?, ?, ?, 'command', 'succeeded', ?, '{}', ?, 1)", [run, tenant.orgId, tenant.appId, lead, `fixloop/${lead}`, url])
  return { tenant, secret, pr: { url, number: n, head: `fixloop/${lead}` }, lead, dup, other }
}
/** The same delivery (the same signed body) under a fresh delivery id: the id headers are not signed. */
const withNewId = (d: Delivery): Delivery => ({
  ...d,
  id: randomUUID(),
  headers: Object.fromEntries(Object.entries(d.headers).map(([k, v]) => [k, /-delivery$|^x-gitlab-event-uuid$/.test(k) ? randomUUID() : v])),
})
const status = async (id: string) => (await q('SELECT status FROM feedback WHERE id = ?', [id]))[0].status
const eventTypes = async (orgId: string) => (await q('SELECT type, data FROM events WHERE org_id = ? ORDER BY seq', [orgId])).map((e: any) => [e.type, JSON.parse(e.data)])

let rx: Receiver
beforeAll(async () => {
  // The customer's webhook receiver listens on loopback.
  server = await startTestServer({ FIXLOOP_WEBHOOK_ALLOW_PRIVATE: '1' })
  rx = new Receiver()
})
afterAll(async () => {
  await server?.close()
  rx?.stop()
})

for (const host of ['github', 'gitea', 'gitlab'] as const) {
  describe(`${host} webhooks`, () => {
    test('merged: the lead and its duplicate are resolved, feedback.resolved for each (pull feed), a replay changes nothing', async () => {
      const s = await setUp(host)
      const d = delivery(host, 'merged', s.pr, s.secret)
      const r = await send(server.url, s.tenant.appId, d)
      expect(r).toEqual({ status: 200, body: { received: true, outcome: 'moved' } })
      expect(await status(s.lead)).toBe('resolved')
      expect(await status(s.dup)).toBe('resolved')
      expect(await status(s.other)).toBe('pr_opened')
      const feed = await call(server.url, 'GET', '/v1/events?limit=100', { auth: s.tenant.key })
      const resolved = feed.body.data.filter((e: any) => e.type === 'feedback.resolved').map((e: any) => e.data)
      expect(resolved).toEqual([
        { feedbackId: s.lead, leadFeedbackId: s.lead, prUrl: s.pr.url, externalUserId: `sub-${s.lead}` },
        { feedbackId: s.dup, leadFeedbackId: s.lead, prUrl: s.pr.url, externalUserId: `sub-${s.dup}` },
      ])
      expect(feed.text).not.toContain('hunter2')
      const before = (await eventTypes(s.tenant.orgId)).length
      // The same delivery again (a replay, or the host's redelivery): acknowledged, ignored.
      expect(await send(server.url, s.tenant.appId, d)).toEqual({ status: 200, body: { received: true, outcome: 'replayed' } })
      // The same signed body under a new delivery id (the id is an unsigned header): a replay too.
      expect((await send(server.url, s.tenant.appId, withNewId(d))).body.outcome).toBe('replayed')
      // Another merge delivery (another body) for a report already resolved: nothing changes.
      expect((await send(server.url, s.tenant.appId, delivery(host, 'merged', { ...s.pr, base: 'release' }, s.secret))).body.outcome).toBe('unchanged')
      expect((await eventTypes(s.tenant.orgId)).length).toBe(before)
    })

    test('closed without merge → awaiting_manual keeping the URL; reopened → pr_opened', async () => {
      const s = await setUp(host)
      const close = delivery(host, 'closed', s.pr, s.secret)
      expect((await send(server.url, s.tenant.appId, close)).body.outcome).toBe('moved')
      expect((await q('SELECT status, merge_request_url FROM feedback WHERE id = ?', [s.lead]))[0]).toEqual({ status: 'awaiting_manual', merge_request_url: s.pr.url })
      expect(await status(s.dup)).toBe('sanitized')
      expect((await send(server.url, s.tenant.appId, delivery(host, 'reopened', s.pr, s.secret))).body.outcome).toBe('moved')
      expect(await status(s.lead)).toBe('pr_opened')
      // The captured close replayed under a fresh delivery id: recognised by its body, the reopened PR stays open.
      expect((await send(server.url, s.tenant.appId, withNewId(close))).body).toEqual({ received: true, outcome: 'replayed' })
      expect(await status(s.lead)).toBe('pr_opened')
    })

    test('attacks: forged, missing or another App\'s signature → 401 envelope; a PR fixloop did not open → 2xx, nothing changes', async () => {
      const s = await setUp(host)
      const other = await setUp(host)
      for (const d of [
        delivery(host, 'merged', s.pr, 'not-the-secret'),
        delivery(host, 'merged', s.pr, s.secret, { sign: false }),
        delivery(host, 'merged', s.pr, other.secret),
      ]) {
        const r = await send(server.url, s.tenant.appId, d)
        expect(r.status).toBe(401)
        expect(r.body.error.code).toBe('invalid_authorization')
      }
      // A body altered after signing.
      const d = delivery(host, 'merged', s.pr, s.secret)
      if (host !== 'gitlab') expect((await send(server.url, s.tenant.appId, { ...d, body: d.body.replace('"number"', '"numbeR"') })).status).toBe(401)
      // The other App's PR, signed by this App: not this App's PR.
      expect((await send(server.url, s.tenant.appId, delivery(host, 'merged', other.pr, s.secret))).body).toEqual({ received: true, outcome: 'ignored' })
      // A PR of the repository fixloop did not open.
      expect((await send(server.url, s.tenant.appId, delivery(host, 'merged', { ...s.pr, url: `${s.pr.url}1`, number: s.pr.number * 10 + 1 }, s.secret))).body).toEqual({ received: true, outcome: 'ignored' })
      expect(await status(s.lead)).toBe('pr_opened')
      expect(await status(other.lead)).toBe('pr_opened')
    })
  })
}

describe('feedback.resolved for the customer\'s backend', () => {
  test('a merge reaches the SSE stream and a webhook subscription too: one per report resolved, the sub, never the text', async () => {
    const s = await setUp('github')
    const path = `/ok/resolved-${s.tenant.appId}`
    const sub = await call(server.url, 'POST', '/v1/webhooks', { auth: s.tenant.key, body: { url: rx.url + path, events: ['feedback.resolved'] } })
    expect(sub.status).toBe(201)
    rx.secrets.set(path, sub.body.secret)
    const stream = await SseClient.open(`${server.url}/v1/events/stream?types=feedback.resolved`, s.tenant.key)
    try {
      expect(stream.status).toBe(200)
      expect((await send(server.url, s.tenant.appId, delivery('github', 'merged', s.pr, s.secret))).body.outcome).toBe('moved')
      const expected = [
        { feedbackId: s.lead, leadFeedbackId: s.lead, prUrl: s.pr.url, externalUserId: `sub-${s.lead}` },
        { feedbackId: s.dup, leadFeedbackId: s.lead, prUrl: s.pr.url, externalUserId: `sub-${s.dup}` },
      ]
      const streamed = await eventually(() => (stream.messages.filter((m) => m.event === 'feedback.resolved').length >= 2 ? stream.messages : undefined))
      expect(streamed.filter((m) => m.event === 'feedback.resolved').map((m) => JSON.parse(m.data!).data)).toEqual(expected)
      const posted = await eventually(() => (rx.at(path).length >= 2 ? rx.at(path) : undefined))
      expect(posted.every((r) => r.verified)).toBe(true)
      // Ordered by the events' seq (a delivery's arrival order is not the contract).
      expect(posted.map((r) => JSON.parse(r.body)).sort((a, b) => a.seq - b.seq).map((e) => [e.type, e.data])).toEqual(expected.map((d) => ['feedback.resolved', d]))
      for (const text of [JSON.stringify(streamed), JSON.stringify(posted)]) expect(text).not.toContain('hunter2')
    } finally {
      await stream.close()
    }
  })
})

describe('the route', () => {
  test('Forgejo header names are accepted', async () => {
    const s = await setUp('gitea')
    expect((await send(server.url, s.tenant.appId, delivery('gitea', 'merged', s.pr, s.secret, { forgejo: true }))).body.outcome).toBe('moved')
  })

  test('a rotated secret replaces the old one at once', async () => {
    const s = await setUp('github')
    const rotated = await server.services.connections.rotateWebhookSecret(s.tenant.orgId, s.tenant.appId)
    expect(rotated.webhookSecret).not.toBe(s.secret)
    expect(rotated.webhookPath).toBe(`/v1/git-hooks/${s.tenant.appId}`)
    expect((await send(server.url, s.tenant.appId, delivery('github', 'merged', s.pr, s.secret))).status).toBe(401)
    expect((await send(server.url, s.tenant.appId, delivery('github', 'merged', s.pr, rotated.webhookSecret))).body.outcome).toBe('moved')
    // Connecting again keeps the secret (the host goes on signing with it) and does not show it.
    const again = await server.services.connections.connect(s.tenant.orgId, s.tenant.appId, { gitUrl: 'https://git.example/acme/shop.git', host: 'github', hostToken: 't' })
    expect(again).not.toHaveProperty('webhookSecret')
    expect(again).toMatchObject({ hasWebhookSecret: true, webhookPath: `/v1/git-hooks/${s.tenant.appId}` })
    expect((await send(server.url, s.tenant.appId, delivery('github', 'reopened', s.pr, rotated.webhookSecret))).status).toBe(200)
  })

  test('fuzz: junk ids, unknown Apps, junk and oversized bodies, deep nesting, junk query: 4xx with the envelope, never 5xx', async () => {
    const s = await setUp('github')
    const signed = (raw: string) => {
      const d = delivery('github', 'merged', s.pr, s.secret)
      const mac = new Bun.CryptoHasher('sha256', s.secret).update(raw).digest('hex')
      return { ...d, body: raw, headers: { ...d.headers, 'x-hub-signature-256': `sha256=${mac}` } }
    }
    const cases: [string, string, Record<string, string>, string | Uint8Array, number, string][] = [
      ['bad id', '/v1/git-hooks/nope', {}, '{}', 400, 'invalid_id'],
      ['unknown App', '/v1/git-hooks/ffffffffffffffffffffffff', {}, '{}', 401, 'invalid_authorization'],
      ['junk query', `/v1/git-hooks/${s.tenant.appId}?x=${'%00'.repeat(50)}&a[b][c]=1`, {}, '{}', 401, 'invalid_authorization'],
      ['oversized', `/v1/git-hooks/${s.tenant.appId}`, {}, 'x'.repeat(1024 * 1024 + 1), 413, 'payload_too_large'],
      ['deep nesting', `/v1/git-hooks/${s.tenant.appId}`, {}, '['.repeat(5000) + ']'.repeat(5000), 400, 'invalid_body'],
    ]
    for (const [name, path, headers, body, code, err] of cases) {
      const res = await fetch(server.url + path, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body })
      const json = (await res.json()) as any
      expect([name, res.status, json.error?.code]).toEqual([name, code, err])
    }
    // Signed, but not JSON: 400; signed JSON that is not about a PR: acknowledged, ignored.
    for (const raw of ['not json', '\xff\xfe', '']) {
      const refused = await send(server.url, s.tenant.appId, signed(raw))
      // SPEC 7: invalid_body carries details.issues, here as everywhere.
      expect([refused.status, refused.body.error.code, refused.body.error.details]).toEqual([400, 'invalid_body', { issues: [{ path: '/', message: 'not JSON (or not UTF-8)' }] }])
    }
    for (const raw of ['null', '[]', '1', '{"action":"closed"}', '{"action":"closed","pull_request":{"html_url":{"x":1},"merged":true}}', `{"action":"closed","pull_request":{"html_url":"${'x'.repeat(5000)}"}}`]) {
      expect(await send(server.url, s.tenant.appId, signed(raw))).toEqual({ status: 200, body: { received: true, outcome: 'ignored' } })
    }
    expect(await status(s.lead)).toBe('pr_opened')
    // A GET on the route is not a webhook.
    expect((await call(server.url, 'GET', `/v1/git-hooks/${s.tenant.appId}`)).status).toBeGreaterThanOrEqual(400)
  })
})

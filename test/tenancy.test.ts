/**
 * Tenancy: an Org's key sees only its own Org. Cross-Org ids are 404 (never 403), Org B's lists never
 * contain Org A's items, GET /v1/apps lists only the caller's Apps, and no response anywhere carries a
 * signing secret (in any encoding), its encrypted form, or an `sk_` key.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eventually, seedTenant, startTestServer, type Tenant, type TestServer } from './harness'
import { ReplyLog, expectEnvelope, secretForms, userToken } from './helpers-auth'
import { dbRows } from './sqlite-of'

// Spec 2.1's fields, plus the additive settings (docs/api.md: proofOfWork, spamEvents, spamRetentionDays, retentionDays, replay).
const APP_FIELDS = ['allowedOrigins', 'batchEnabled', 'batchWindowHours', 'createdAt', 'description', 'id', 'name', 'processingMode', 'proofOfWork', 'publicKey', 'publicSubmissionEnabled', 'retentionDays', 'slug', 'spamEvents', 'spamRetentionDays', 'replay'].sort()

let srv: TestServer
let a: Tenant
let b: Tenant
let a2: { id: string; publicKey: string; signingSecret: string }
let b2: { id: string; publicKey: string; signingSecret: string }
const aItems: string[] = []
const bItems: string[] = []
const log = new ReplyLog()

async function submitTo(pub: string, text: string, headers: Record<string, string> = {}): Promise<string> {
  const r = await log.call(srv.url, 'POST', '/v1/feedback', { auth: pub, headers, body: { text } })
  expect(r.status).toBe(201)
  return r.body.id
}

beforeAll(async () => {
  srv = await startTestServer({ FIXLOOP_RATE_LIMIT_MULTIPLIER: '100' })
  a = await seedTenant(srv.admin, {}, 'Alpha')
  b = await seedTenant(srv.admin, {}, 'Beta')
  a2 = await srv.admin.createApp(a.orgId, { name: 'Alpha Members', publicSubmissionEnabled: false })
  b2 = await srv.admin.createApp(b.orgId, { name: 'Beta Two' })
  for (let i = 0; i < 3; i++) {
    aItems.push(await submitTo(a.pub, `alpha public ${i}`))
    bItems.push(await submitTo(b.pub, `beta ${i}`))
  }
  aItems.push(await submitTo(a2.publicKey, 'alpha private', { 'x-service-user-token': await userToken(a2.signingSecret, a2.id, 'alpha-user') }))
  bItems.push(await submitTo(b2.publicKey, 'beta two'))
  // Wait for processing so the status filters below see settled items.
  await eventually(async () => {
    const r = await log.call(srv.url, 'GET', '/v1/feedback?status=awaiting_manual&limit=100', { auth: a.key })
    return r.body.data.length === aItems.length
  })
})

/** Every stored ciphertext of a secret read so far: the final check runs after the file's database is gone. */
const encryptedSeen = new Set<string>()

/** Every encoding of every credential of both Orgs, plus the stored ciphertext of each secret. */
async function allSecrets(): Promise<string[]> {
  const encrypted = (await dbRows<{ enc: string }>(srv.ctx, 'SELECT signing_secret_enc AS enc FROM apps')).map((r) => r.enc)
  expect(encrypted.length).toBeGreaterThanOrEqual(4)
  for (const e of encrypted) encryptedSeen.add(e)
  return knownSecrets()
}

function knownSecrets(): string[] {
  return [a.key, b.key, ...[a.secret, b.secret, a2.signingSecret, b2.signingSecret].flatMap(secretForms), ...encryptedSeen]
}

afterAll(async () => {
  // PostgreSQL mode: the file's database server stops in an afterAll registered earlier (test/dialects.ts),
  // so this one uses the ciphertexts the tests read (the last test reads them after every App change).
  log.expectNoLeak(encryptedSeen.size > 0 ? knownSecrets() : await allSecrets())
  log.expectNo5xx()
  log.expectRequestIds()
  await srv.close()
})

describe('cross-Org access is 404, never 403', () => {
  test('scenario table: Org B\'s key on Org A\'s resources', async () => {
    const rows: { name: string; method: string; path: string; body?: unknown; status: number; code: string }[] = [
      ...aItems.flatMap((id) => [
        { name: `GET A's item ${id}`, method: 'GET', path: `/v1/feedback/${id}`, status: 404, code: 'not_found' },
        { name: `PATCH A's item ${id} to archived`, method: 'PATCH', path: `/v1/feedback/${id}`, body: { status: 'archived' }, status: 404, code: 'not_found' },
        { name: `PATCH A's item ${id} to queued`, method: 'PATCH', path: `/v1/feedback/${id}`, body: { status: 'queued' }, status: 404, code: 'not_found' },
      ]),
      { name: 'list filtered on A\'s App', method: 'GET', path: `/v1/feedback?appId=${a.appId}`, status: 404, code: 'app_not_found' },
      { name: 'list filtered on A\'s private App', method: 'GET', path: `/v1/feedback?appId=${a2.id}`, status: 404, code: 'app_not_found' },
      { name: 'list filtered on an unknown App', method: 'GET', path: '/v1/feedback?appId=abcdefabcdefabcdefabcdef', status: 404, code: 'app_not_found' },
      { name: 'mint for A\'s App', method: 'POST', path: `/v1/tokens/mint?appId=${a.appId}`, body: { sub: 'intruder' }, status: 404, code: 'app_not_found' },
      { name: 'mint for A\'s private App', method: 'POST', path: `/v1/tokens/mint?appId=${a2.id}`, body: { sub: 'intruder' }, status: 404, code: 'app_not_found' },
    ]
    for (const row of rows) {
      const r = await log.call(srv.url, row.method, row.path, { auth: b.key, body: row.body })
      expect({ name: row.name, status: r.status, code: r.body?.error?.code }).toEqual({ name: row.name, status: row.status, code: row.code })
      expectEnvelope(r, row.code)
      // Nothing of A's item leaks into the error.
      expect(r.text).not.toContain('alpha')
    }
  })

  test('the 404 for another Org\'s item is indistinguishable from an unknown id', async () => {
    const foreign = await log.call(srv.url, 'GET', `/v1/feedback/${aItems[0]}`, { auth: b.key })
    const unknown = await log.call(srv.url, 'GET', '/v1/feedback/abcdefabcdefabcdefabcdef', { auth: b.key })
    expect(foreign.status).toBe(unknown.status)
    expect(foreign.body).toEqual(unknown.body)
  })

  test('B\'s failed PATCH attempts changed nothing: A still reads its items unchanged', async () => {
    for (const id of aItems) {
      const r = await log.call(srv.url, 'GET', `/v1/feedback/${id}`, { auth: a.key })
      expect(r.status).toBe(200)
      expect(r.body.status).toBe('awaiting_manual')
      expect([a.appId, a2.id]).toContain(r.body.appId)
    }
  })

  test('the same key works on its own Org: B reads, filters and patches its own items', async () => {
    const g = await log.call(srv.url, 'GET', `/v1/feedback/${bItems[0]}`, { auth: b.key })
    expect(g.status).toBe(200)
    expect(g.body.appId).toBe(b.appId)
    const f = await log.call(srv.url, 'GET', `/v1/feedback?appId=${b2.id}`, { auth: b.key })
    expect(f.status).toBe(200)
    expect(f.body.data.map((x: { id: string }) => x.id)).toEqual([bItems[bItems.length - 1]])
    const p = await log.call(srv.url, 'PATCH', `/v1/feedback/${bItems[1]}`, { auth: b.key, body: { status: 'archived' } })
    expect(p.status).toBe(200)
    // And A cannot read that one.
    expect((await log.call(srv.url, 'GET', `/v1/feedback/${bItems[1]}`, { auth: a.key })).status).toBe(404)
  })
})

describe('lists are scoped to the caller\'s Org', () => {
  async function listAll(key: string, query: string): Promise<{ id: string; appId: string }[]> {
    const out: { id: string; appId: string }[] = []
    let cursor: string | null = null
    for (let guard = 0; guard < 50; guard++) {
      const r = await log.call(srv.url, 'GET', `/v1/feedback?limit=2${query}${cursor ? `&cursor=${cursor}` : ''}`, { auth: key })
      expect(r.status).toBe(200)
      out.push(...r.body.data)
      cursor = r.body.nextCursor
      if (!cursor) return out
    }
    throw new Error('paging did not end')
  }

  test('B\'s list never contains A\'s items, under any filter or page', async () => {
    for (const query of ['', '&includeDuplicates=true', '&status=awaiting_manual', '&status=archived', '&status=received', `&appId=${b.appId}`, `&appId=${b2.id}`]) {
      const items = await listAll(b.key, query)
      for (const item of items) {
        expect(aItems).not.toContain(item.id)
        expect([b.appId, b2.id]).toContain(item.appId)
      }
    }
    const everything = await listAll(b.key, '&includeDuplicates=true')
    expect(everything.map((x) => x.id).sort()).toEqual([...bItems].sort())
  })

  test('A\'s list holds exactly A\'s items, across both of its Apps', async () => {
    const items = await listAll(a.key, '')
    expect(items.map((x) => x.id).sort()).toEqual([...aItems].sort())
  })

  test('a cursor taken from another Org\'s id does not open its data', async () => {
    // B pages from just above A's newest id: it only ever sees B's own, older items.
    const newestA = [...aItems].sort().at(-1)!
    const r = await log.call(srv.url, 'GET', `/v1/feedback?cursor=${newestA}&limit=100`, { auth: b.key })
    expect(r.status).toBe(200)
    for (const item of r.body.data) expect(bItems).toContain(item.id)
  })
})

describe('GET /v1/apps', () => {
  test('lists only the caller\'s Apps, with exactly the fields of spec 2.1', async () => {
    for (const [tenant, expected] of [
      [a, [a.appId, a2.id]],
      [b, [b.appId, b2.id]],
    ] as const) {
      const r = await log.call(srv.url, 'GET', '/v1/apps', { auth: tenant.key })
      expect(r.status).toBe(200)
      expect(Object.keys(r.body)).toEqual(['data'])
      expect(r.body.data.map((x: { id: string }) => x.id).sort()).toEqual([...expected].sort())
      for (const app of r.body.data) {
        expect(Object.keys(app).sort()).toEqual(APP_FIELDS)
        expect(app.publicKey).toStartWith('pub_')
        expect(app.id).toMatch(/^[0-9a-f]{24}$/)
      }
      expect(r.text).not.toMatch(/signing_?secret/i)
      expect(r.text).not.toContain('signing_secret_enc')
      expect(r.text).not.toContain('orgId')
    }
  })

  test('a deleted App disappears from the list; a rotated secret never appears', async () => {
    const extra = await srv.admin.createApp(a.orgId, { name: 'Alpha Extra' })
    const rotated = await srv.admin.rotateSecret(a.orgId, extra.id)
    const before = await log.call(srv.url, 'GET', '/v1/apps', { auth: a.key })
    expect(before.body.data.map((x: { id: string }) => x.id)).toContain(extra.id)
    for (const s of [...secretForms(extra.signingSecret), ...secretForms(rotated.signingSecret)]) expect(before.text).not.toContain(s)
    await srv.admin.deleteApp(a.orgId, extra.id)
    const after = await log.call(srv.url, 'GET', '/v1/apps', { auth: a.key })
    expect(after.body.data.map((x: { id: string }) => x.id)).not.toContain(extra.id)
    log.expectNoLeak([...secretForms(extra.signingSecret), ...secretForms(rotated.signingSecret)])
  })
})

describe('no response anywhere carries a credential', () => {
  test('full items, documentation and health endpoints are clean', async () => {
    for (const id of [...aItems, ...bItems]) {
      const owner = aItems.includes(id) ? a : b
      const r = await log.call(srv.url, 'GET', `/v1/feedback/${id}`, { auth: owner.key })
      expect(r.status).toBe(200)
    }
    for (const path of ['/openapi.json', '/docs', '/healthz', '/readyz']) await log.call(srv.url, 'GET', path)
    // A token minted for A is a JWT, not the secret; it must not embed the secret either.
    const m = await log.call(srv.url, 'POST', `/v1/tokens/mint?appId=${a.appId}`, { auth: a.key, body: { sub: 'u', ctx: { email: 'u@example.com' } } })
    expect(m.status).toBe(200)
    log.expectNoLeak(await allSecrets())
  })

  test('the private submission recorded only the user token\'s identity, not the token', async () => {
    const token = await userToken(a2.signingSecret, a2.id, 'tok-owner')
    const id = await submitTo(a2.publicKey, 'token check', { 'x-service-user-token': token })
    const r = await log.call(srv.url, 'GET', `/v1/feedback/${id}`, { auth: a.key })
    expect(r.status).toBe(200)
    expect(r.text).not.toContain(token)
    expect(r.text).not.toContain(token.split('.')[2])
    expect(r.body.submittedBy).toMatchObject({ mode: 'private', externalUserId: 'tok-owner' })
  })
})

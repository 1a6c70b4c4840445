/**
 * The spec's routes (SPEC.md part 4, errors of part 7, limits of part 8) from outside, against the compiled
 * binary, the way a client sees them: tenants made with the CLI, every call over HTTP. The SQLite pass runs
 * it on a data dir; scripts/test-pg.sh runs it again with FIXLOOP_TEST_DIALECT=pg, where the CLI and
 * `serve` share one PostgreSQL database, redis-server and s3rver (test/cluster-env.ts) — the black-box
 * check of issue 22 ("the spec's routes against the compiled binary in PostgreSQL mode").
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { call, eventually, runBinary, spawnServer, tempDir } from './harness'
import { clusterEnv, TEST_DIALECT } from './cluster-env'

const HEX24 = /^[0-9a-f]{24}$/
let env: Record<string, string> = {}
let dir: string
let server: Awaited<ReturnType<typeof spawnServer>>
const a = { orgId: '', key: '', appId: '', pub: '' }
const priv = { appId: '', pub: '' }
const other = { orgId: '', key: '', appId: '' }
const fenced = { pub: '' }

async function cli(...args: string[]): Promise<any> {
  const r = await runBinary([...args, '--data-dir', dir, '--json'], env)
  if (r.code !== 0) throw new Error(`fixloop ${args.join(' ')}: exit ${r.code}: ${r.stderr}`)
  return JSON.parse(r.stdout)
}

beforeAll(async () => {
  dir = tempDir('fixloop-spec-binary-')
  if (TEST_DIALECT === 'pg') env = await clusterEnv()
  Object.assign(env, { FIXLOOP_WEBHOOK_ALLOW_PRIVATE: '1' })
  a.orgId = (await cli('org', 'create', '--name', 'Acme')).id
  a.key = (await cli('key', 'create', '--org', a.orgId, '--name', 'backend')).key
  const app = await cli('app', 'create', '--org', a.orgId, '--name', 'Shop')
  Object.assign(a, { appId: app.id, pub: app.publicKey })
  const p = await cli('app', 'create', '--org', a.orgId, '--name', 'Portal', '--public-submission', 'false')
  Object.assign(priv, { appId: p.id, pub: p.publicKey })
  fenced.pub = (await cli('app', 'create', '--org', a.orgId, '--name', 'Fenced', '--allowed-origins', 'https://shop.example')).publicKey
  other.orgId = (await cli('org', 'create', '--name', 'Globex')).id
  other.key = (await cli('key', 'create', '--org', other.orgId, '--name', 'theirs')).key
  other.appId = (await cli('app', 'create', '--org', other.orgId, '--name', 'Theirs')).id
  server = await spawnServer(dir, env)
}, 60_000)

afterAll(async () => {
  await server?.stop()
  rmSync(dir, { recursive: true, force: true })
})

const submit = (body: unknown, headers: Record<string, string> = {}, auth = a.pub) => call(server.url, 'POST', '/v1/feedback', { auth, body, headers })
const read = (path: string, auth = a.key) => call(server.url, 'GET', path, { auth })
const errorCode = (r: { body: any }) => r.body?.error?.code

describe(`the spec's routes against the compiled binary (${TEST_DIALECT})`, () => {
  test('4.1 a public submission is 201 {id, status: received}; identity and the optional members are accepted', async () => {
    const r = await submit({
      text: 'The checkout button does nothing on Safari, write to me at other.person@example.org',
      url: 'https://shop.example/cart',
      userAgent: 'Mozilla/5.0',
      metadata: { plan: 'pro' },
      consoleLogs: [{ level: 'error', message: 'TypeError: x is undefined', ts: Date.now() }], viewport: { w: 1280, h: 800, dpr: 2 }, severity: 'high',
      identity: { name: 'Jo', email: 'jo@example.com' },
    })
    expect(r.status).toBe(201)
    expect(Object.keys(r.body).sort()).toEqual(['id', 'status'])
    expect(r.body.id).toMatch(HEX24)
    expect(r.body.status).toBe('received')
    // It moves on by itself through sanitizing; the stored text is scrubbed, the submitter kept apart.
    const item = await eventually(async () => {
      const g = await read(`/v1/feedback/${r.body.id}`)
      return g.body.status === 'awaiting_manual' && g.body
    }, 20_000)
    expect(item.appId).toBe(a.appId)
    expect(item.text).not.toContain('other.person@example.org')
    expect(item.submittedBy).toMatchObject({ mode: 'public', email: 'jo@example.com' })
    expect(item.viewport).toEqual({ w: 1280, h: 800, dpr: 2 })
    expect(item.severity).toBe('high')
  })

  test('part 7: credentials — missing, malformed, unknown key; an sk_ key is not a public key', async () => {
    const body = { text: 'hello' }
    const none = await call(server.url, 'POST', '/v1/feedback', { body })
    expect([none.status, errorCode(none)]).toEqual([401, 'missing_authorization'])
    const malformed = await call(server.url, 'POST', '/v1/feedback', { body, headers: { authorization: 'Basic abc' } })
    expect([malformed.status, errorCode(malformed)]).toEqual([401, 'invalid_authorization'])
    const unknown = await submit(body, {}, 'pub_' + '0'.repeat(32))
    expect([unknown.status, errorCode(unknown)]).toEqual([401, 'unknown_app'])
    const list = await read('/v1/feedback', 'sk_nope')
    expect(list.status).toBe(401)
    expect(list.body.error.message).toBeString()
  })

  test('part 7 and 8: invalid bodies are 400 invalid_body with issues; the limits hold at their edges', async () => {
    const unknownField = await submit({ text: 'hi', frobnicate: 1 })
    expect([unknownField.status, errorCode(unknownField)]).toEqual([400, 'invalid_body'])
    expect(Array.isArray(unknownField.body.error.details.issues)).toBe(true)
    expect((await submit({ text: '' })).status).toBe(400)
    expect((await submit({ text: 'x'.repeat(8193) })).status).toBe(400)
    expect((await submit({ text: 'x'.repeat(8192) })).status).toBe(201)
    expect((await submit({ text: 'long url', url: 'https://a.example/' + 'p'.repeat(2048) })).status).toBe(400)
    expect((await submit({ text: 'many logs', consoleLogs: Array.from({ length: 501 }, () => ({ level: 'log', message: 'm', ts: 1 })) })).status).toBe(400)
    expect((await submit({ text: 'big metadata', metadata: { blob: 'm'.repeat(5000) } })).status).toBe(400)
    const notJson = await call(server.url, 'POST', '/v1/feedback', { auth: a.pub, rawBody: '{"text": ', headers: { 'content-type': 'application/json' } })
    expect([notJson.status, errorCode(notJson)]).toEqual([400, 'invalid_body'])
    const huge = await call(server.url, 'POST', '/v1/feedback', { auth: a.pub, rawBody: JSON.stringify({ text: 'x', metadata: { pad: 'y'.repeat(9 * 1024 * 1024) } }), headers: { 'content-type': 'application/json' } })
    expect([huge.status, errorCode(huge)]).toEqual([413, 'payload_too_large'])
  })

  test('4.1 Origin: an App with allowedOrigins refuses a missing or foreign Origin (403 origin_not_allowed) and takes its own', async () => {
    const missing = await submit({ text: 'from nowhere' }, {}, fenced.pub)
    expect([missing.status, errorCode(missing)]).toEqual([403, 'origin_not_allowed'])
    const foreign = await submit({ text: 'from elsewhere' }, { origin: 'https://evil.example' }, fenced.pub)
    expect([foreign.status, errorCode(foreign)]).toEqual([403, 'origin_not_allowed'])
    expect((await submit({ text: 'from the shop' }, { origin: 'https://shop.example' }, fenced.pub)).status).toBe(201)
  })

  test('4.8 and 5: mint a user token; private mode needs it; a token of another App or a forged one is 401 invalid_user_token', async () => {
    const noToken = await submit({ text: 'private without a token' }, {}, priv.pub)
    expect([noToken.status, errorCode(noToken)]).toEqual([403, 'public_disabled'])
    const mint = await call(server.url, 'POST', `/v1/tokens/mint?appId=${priv.appId}`, { auth: a.key, body: { sub: 'user-42', ctx: { email: 'u42@example.com' }, expiresInSeconds: 120 } })
    expect(mint.status).toBe(200)
    expect(mint.body.expiresInSeconds).toBe(120)
    const token = mint.body.token as string
    expect(token.split('.')).toHaveLength(3)
    const ok = await submit({ text: 'private with a token', identity: { name: 'Ignored' } }, { 'x-service-user-token': token }, priv.pub)
    expect([ok.status, ok.body.status]).toEqual([201, 'received'])
    const wrongApp = await submit({ text: 'token of another App' }, { 'x-service-user-token': token }, a.pub)
    expect([wrongApp.status, errorCode(wrongApp)]).toEqual([401, 'invalid_user_token'])
    const forged = token.slice(0, -4) + (token.endsWith('AAAA') ? 'BBBB' : 'AAAA')
    const bad = await submit({ text: 'forged' }, { 'x-service-user-token': forged }, priv.pub)
    expect([bad.status, errorCode(bad)]).toEqual([401, 'invalid_user_token'])
    // Mint's bounds and Org scope.
    expect((await call(server.url, 'POST', `/v1/tokens/mint?appId=${priv.appId}`, { auth: a.key, body: { sub: 'u', expiresInSeconds: 59 } })).status).toBe(400)
    expect((await call(server.url, 'POST', `/v1/tokens/mint?appId=${priv.appId}`, { auth: a.key, body: { sub: 'u', expiresInSeconds: 86401 } })).status).toBe(400)
    const foreign = await call(server.url, 'POST', `/v1/tokens/mint?appId=${other.appId}`, { auth: a.key, body: { sub: 'u' } })
    expect([foreign.status, errorCode(foreign)]).toEqual([404, 'app_not_found'])
  })

  test('4.3 GET /v1/apps lists the Org\'s Apps only, with the spec\'s fields', async () => {
    const r = await read('/v1/apps')
    expect(r.status).toBe(200)
    const ids = r.body.data.map((x: any) => x.id)
    expect(ids).toContain(a.appId)
    expect(ids).toContain(priv.appId)
    expect(ids).not.toContain(other.appId)
    const shop = r.body.data.find((x: any) => x.id === a.appId)
    expect(shop.publicSubmissionEnabled).toBe(true)
    expect(r.body.data.find((x: any) => x.id === priv.appId).publicSubmissionEnabled).toBe(false)
    expect(JSON.stringify(r.body)).not.toContain('signingSecret')
  })

  test('4.4 the list: newest first, cursor pages chain to a null nextCursor, filters and bad parameters', async () => {
    const mine: string[] = []
    for (let i = 0; i < 5; i++) mine.push((await submit({ text: `Paging report number ${i} about the search page` })).body.id)
    const seen: string[] = []
    let cursor: string | null = null
    for (let pages = 0; pages < 50; pages++) {
      const r = await read(`/v1/feedback?appId=${a.appId}&limit=2${cursor ? `&cursor=${cursor}` : ''}`)
      expect(r.status).toBe(200)
      seen.push(...r.body.data.map((x: any) => x.id))
      cursor = r.body.nextCursor
      if (r.body.data.length < 2) expect(cursor).toBeNull()
      if (!cursor) break
    }
    expect(cursor).toBeNull()
    expect([...seen].sort().reverse()).toEqual(seen)
    expect(new Set(seen).size).toBe(seen.length)
    for (const id of mine) expect(seen).toContain(id)
    // Another Org's list never shows these.
    expect((await read('/v1/feedback?limit=100', other.key)).body.data.map((x: any) => x.id)).not.toContain(mine[0])
    const archived = await read(`/v1/feedback?status=archived&appId=${a.appId}`)
    expect(archived.status).toBe(200)
    for (const x of archived.body.data) expect(x.status).toBe('archived')
    for (const q of ['limit=0', 'limit=101', 'limit=abc', 'cursor=xyz', 'appId=nothex', 'status=bogus', 'includeDuplicates=maybe']) {
      const r = await read(`/v1/feedback?${q}`)
      expect(r.status, q).toBe(400)
      expect(errorCode(r), q).toBeString()
    }
  })

  test('4.5 one item: 400 invalid_id, 404 for an unknown id and for another Org\'s report', async () => {
    const id = (await submit({ text: 'Readable by its own Org only' })).body.id
    expect((await read(`/v1/feedback/${id}`)).status).toBe(200)
    const cross = await read(`/v1/feedback/${id}`, other.key)
    expect([cross.status, errorCode(cross)]).toEqual([404, 'not_found'])
    const invalid = await read('/v1/feedback/not-an-id')
    expect([invalid.status, errorCode(invalid)]).toEqual([400, 'invalid_id'])
    const unknown = await read(`/v1/feedback/${'f'.repeat(24)}`)
    expect([unknown.status, errorCode(unknown)]).toEqual([404, 'not_found'])
  })

  test('4.6 PATCH: queued from awaiting_manual, archived, 409 invalid_transition with from/to, 400 no_op and invalid_body, cross-Org 404', async () => {
    const id = (await submit({ text: 'The invoice PDF has the wrong VAT number' })).body.id
    await eventually(async () => (await read(`/v1/feedback/${id}`)).body.status === 'awaiting_manual', 20_000)
    const patch = (body: unknown, key = a.key) => call(server.url, 'PATCH', `/v1/feedback/${id}`, { auth: key, body })
    expect((await patch({})).status).toBe(400)
    expect(errorCode(await patch({}))).toBe('no_op')
    expect(errorCode(await patch({ status: 'pr_opened' }))).toBe('invalid_body')
    expect((await patch({ status: 'archived' }, other.key)).status).toBe(404)
    const queued = await patch({ status: 'queued' })
    expect([queued.status, queued.body]).toEqual([200, { id, status: 'queued' }])
    const archived = await patch({ status: 'archived' })
    expect([archived.status, archived.body.status]).toEqual([200, 'archived'])
    const again = await patch({ status: 'queued' })
    expect([again.status, errorCode(again)]).toEqual([409, 'invalid_transition'])
    expect([again.body.error.details?.from ?? again.body.from, again.body.error.details?.to ?? again.body.to]).toEqual(['archived', 'queued'])
    expect((await call(server.url, 'PATCH', '/v1/feedback/zzz', { auth: a.key, body: { status: 'archived' } })).status).toBe(400)
  })

  test('1: unknown fields are invalid_body on routes that take no body too (unmerge, reject-suggestion, resolve)', async () => {
    const lead = (await submit({ text: 'The language menu lists Portuguese twice' })).body.id
    const dup = (await submit({ text: 'Shipping estimate shows yesterday as the delivery date' })).body.id
    for (const id of [lead, dup]) await eventually(async () => (await read(`/v1/feedback/${id}`)).body.status === 'awaiting_manual', 20_000)
    const post = (path: string, body?: unknown) => call(server.url, 'POST', path, { auth: a.key, body })
    expect((await post(`/v1/feedback/${dup}/merge`, { leadId: lead })).status).toBe(200)
    const unmerge = await post(`/v1/feedback/${dup}/unmerge`, { leadId: lead })
    expect([unmerge.status, errorCode(unmerge)]).toEqual([400, 'invalid_body'])
    expect(unmerge.body.error.details.issues).toEqual([{ path: '/leadId', message: expect.any(String) }])
    expect((await read(`/v1/feedback/${dup}`)).body.duplicateOfId).toBe(lead)
    expect(errorCode(await post(`/v1/feedback/${dup}/unmerge`, ['x']))).toBe('invalid_body')
    expect(errorCode(await post(`/v1/feedback/${lead}/reject-suggestion`, { frobnicate: 1 }))).toBe('invalid_body')
    expect(errorCode(await post(`/v1/feedback/${lead}/resolve`, { status: 'resolved' }))).toBe('invalid_body')
    expect((await read(`/v1/feedback/${lead}`)).body.status).toBe('awaiting_manual')
    // No body, or an empty object, carries no field.
    expect((await post(`/v1/feedback/${dup}/unmerge`, {})).status).toBe(200)
    expect((await post(`/v1/feedback/${lead}/reject-suggestion`)).status).toBe(200)
  })

  test('CONTRACT audit log: GET /v1/audit is oldest first by createdAt across pages, rows the CLI and the server wrote alike', async () => {
    // Several CLI processes within a second: each makes ids with random bytes of its own (core/ids.ts).
    const org = (await cli('org', 'create', '--name', 'Audited')).id
    const key = (await cli('key', 'create', '--org', org)).key
    await Promise.all(Array.from({ length: 6 }, (_, i) => cli('app', 'create', '--org', org, '--name', `Audited ${i}`)))
    const seen: { id: string; createdAt: string }[] = []
    let after: string | null = null
    for (let pages = 0; pages < 20; pages++) {
      const r = await read(`/v1/audit?limit=2${after ? `&after=${after}` : ''}`, key)
      expect(r.status).toBe(200)
      seen.push(...r.body.data)
      after = r.body.nextCursor
      if (!after) break
    }
    expect(seen.map((e) => e.id)).toHaveLength(8)
    expect(new Set(seen.map((e) => e.id)).size).toBe(8)
    const times = seen.map((e) => e.createdAt)
    expect(times).toEqual([...times].sort())
  })

  test('4.2 upload-url: a presigned PUT that stores the bytes; the key goes into a submission', async () => {
    const r = await call(server.url, 'POST', '/v1/feedback/upload-url', { auth: a.pub, body: { kind: 'screenshot', contentType: 'image/png', byteSize: 8, filename: 'shot.png' } })
    expect(r.status).toBe(200)
    expect(r.body.url).toMatch(/^https?:\/\//)
    expect(r.body.key).toBeString()
    const put = await fetch(r.body.url, { method: r.body.method, body: new Uint8Array([137, 80, 78, 71, 13, 10, 26, 10]), headers: r.body.headers })
    expect(put.status).toBeLessThan(300)
    const s = await submit({ text: 'With a screenshot', attachments: [{ key: r.body.key, kind: 'screenshot', contentType: 'image/png', byteSize: 8 }] })
    expect(s.status).toBe(201)
    const tooBig = await call(server.url, 'POST', '/v1/feedback/upload-url', { auth: a.pub, body: { kind: 'attachment', contentType: 'application/pdf', byteSize: 15 * 1024 * 1024 + 1, filename: 'a.pdf' } })
    expect([tooBig.status, errorCode(tooBig)]).toEqual([413, 'payload_too_large'])
  })

  test('4.7 agent runs: an unknown id is 404, a bad one 400; never a 5xx', async () => {
    expect((await read(`/v1/agent-runs/${'a'.repeat(24)}`)).status).toBe(404)
    expect((await read('/v1/agent-runs/nope')).status).toBe(400)
  })

  test('1: /openapi.json describes what the routes send — severity (2.2, 2.3: low, medium, high or null) takes null', async () => {
    const doc = (await call(server.url, 'GET', '/openapi.json')).body
    // A client or a checker validating against the document rejects any value a closed enum leaves out:
    // every nullable enum must list null, or a report without a severity (the usual case) fails it.
    const closedOut: string[] = []
    const walk = (v: any, path: string): void => {
      if (Array.isArray(v)) return v.forEach((x, i) => walk(x, `${path}/${i}`))
      if (!v || typeof v !== 'object') return
      const nullable = (Array.isArray(v.type) && v.type.includes('null')) || v.nullable === true
      if (Array.isArray(v.enum) && nullable && !v.enum.includes(null)) closedOut.push(path)
      for (const [k, x] of Object.entries(v)) walk(x, `${path}/${k}`)
    }
    walk(doc, '')
    expect(closedOut).toEqual([])
    // Just enough of JSON Schema for these: anyOf, const, enum and type.
    const typeOf = (value: unknown) => (value === null ? 'null' : typeof value)
    const accepts = (schema: any, value: unknown): boolean => {
      if (Array.isArray(schema.anyOf)) return schema.anyOf.some((s: any) => accepts(s, value))
      if ('const' in schema) return schema.const === value
      if (Array.isArray(schema.enum) && !schema.enum.includes(value)) return false
      return schema.type === undefined || [schema.type].flat().includes(typeOf(value))
    }
    const item = doc.paths['/v1/feedback/{id}'].get.responses['200'].content['application/json'].schema.properties.severity
    const body = doc.paths['/v1/feedback'].post.requestBody.content['application/json'].schema.properties.severity
    for (const schema of [item, body]) {
      for (const value of ['low', 'medium', 'high', null]) expect(accepts(schema, value), JSON.stringify(value)).toBe(true)
      expect(accepts(schema, 'critical')).toBe(false)
    }
  })

  test('8: the public bucket (60 a minute per address and App) ends in 429 rate_limited with Retry-After', async () => {
    const ratedApp = await cli('app', 'create', '--org', a.orgId, '--name', 'Rated')
    let limited: Awaited<ReturnType<typeof submit>> | undefined
    for (let i = 0; i < 90 && !limited; i++) {
      const r = await submit({ text: `burst ${i}` }, {}, ratedApp.publicKey)
      if (r.status === 429) limited = r
      else expect(r.status).toBe(201)
    }
    expect(limited).toBeDefined()
    expect(errorCode(limited!)).toBe('rate_limited')
    expect(Number(limited!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
  })
})

/**
 * What the cheaper submission path (bench/README.md, "HTTP thread cost") must still guarantee:
 * - the credential cache is emptied by every write to apps or api_keys, from this connection or another
 *   one (the CLI), and by nothing else: reports do not move the credential generation; the generation is
 *   read once per event-loop turn, and again within it after a write on this connection;
 * - a body with a Content-Length is judged by that length before a byte is read (413 at once), and is
 *   read whole even when it arrives in pieces; depth and Content-Type checks still apply on that path;
 * - events carry the report's id in their own column, and a report's history still finds the events
 *   stored before that column existed;
 * - OpenAPI still documents the submission's two optional headers.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { storeOf } from './dialects'
import { connect } from 'node:net'
import { join } from 'node:path'
import { call, seedTenant, startTestServer, type Tenant, type TestServer } from './harness'
import { expectEnvelope, userToken } from './helpers-auth'
import { openDatabase } from '../src/db/sqlite/client'
import { sqliteStorage } from '../src/db/sqlite/storage'
import { createTenantsService } from '../src/modules/tenants/service'
import { LIMITS } from '../src/core/limits'
import { CredentialDirectory } from '../src/auth/directory'
import { jsonDepthExceeds, MAX_JSON_DEPTH } from '../src/http/strict-json'
import { sqliteOf } from './sqlite-of'

const BODY = { text: 'The checkout button does nothing' }

let srv: TestServer
let t: Tenant

beforeAll(async () => {
  srv = await startTestServer({ FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000' })
  t = await seedTenant(srv.admin)
})
afterAll(async () => {
  await srv.close()
})

const generation = (): number => (sqliteOf(srv.ctx).query('SELECT generation FROM credential_generation WHERE id = 1').get() as { generation: number }).generation

/** Sends raw bytes and resolves with everything the server answered once it has a complete reply head. */
function rawRequest(head: string, pieces: { bytes: string; afterMs: number }[] = [], waitFor = '\r\n\r\n'): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(Number(new URL(srv.url).port), '127.0.0.1', async () => {
      socket.write(head)
      for (const p of pieces) {
        await Bun.sleep(p.afterMs)
        if (!socket.destroyed) socket.write(p.bytes)
      }
    })
    let reply = ''
    const timer = setTimeout(() => {
      socket.destroy()
      reject(new Error(`no complete reply; got ${JSON.stringify(reply.slice(0, 200))}`))
    }, 5000)
    socket.on('data', (d) => {
      reply += d
      const headEnd = reply.indexOf('\r\n\r\n')
      if (headEnd === -1) return
      const length = /content-length: (\d+)/i.exec(reply.slice(0, headEnd))
      if (length && reply.length - headEnd - 4 < Number(length[1])) return
      if (!reply.includes(waitFor)) return
      clearTimeout(timer)
      socket.destroy()
      resolve(reply)
    })
    socket.on('error', () => {})
  })
}

describe('credential cache', () => {
  test('reports do not move the credential generation; a key and an App written from another connection do, and are refused at once', async () => {
    const before = generation()
    for (let i = 0; i < 5; i++) expect((await call(srv.url, 'POST', '/v1/feedback', { auth: t.pub, body: BODY })).status).toBe(201)
    expect(generation()).toBe(before)

    // The admin CLI is another process with its own connection: a second connection stands in for it.
    const { sqlite, db } = openDatabase(join(srv.dataDir, 'fixloop.db'))
    try {
      const cli = createTenantsService({ ...srv.ctx, store: storeOf(sqliteStorage(sqlite, db), srv.ctx.clock) })
      const key = await cli.createKey(t.orgId, 'cli')
      expect(generation()).toBeGreaterThan(before)
      expect((await call(srv.url, 'GET', '/v1/apps', { auth: key.key })).status).toBe(200)
      await cli.revokeKey(t.orgId, key.id)
      expectEnvelope(await call(srv.url, 'GET', '/v1/apps', { auth: key.key }), 'invalid_authorization')

      // A private App's secret rotated elsewhere: a token signed with the old secret fails on the next request.
      const app = await cli.createApp(t.orgId, { name: 'Private', publicSubmissionEnabled: false })
      const oldToken = await userToken(app.signingSecret, app.id)
      const headers = { 'x-service-user-token': oldToken }
      expect((await call(srv.url, 'POST', '/v1/feedback', { auth: app.publicKey, body: BODY, headers })).status).toBe(201)
      const rotated = await cli.rotateSecret(t.orgId, app.id)
      expect((await call(srv.url, 'POST', '/v1/feedback', { auth: app.publicKey, body: BODY, headers })).status).toBe(401)
      const fresh = await userToken(rotated.signingSecret, app.id)
      expect((await call(srv.url, 'POST', '/v1/feedback', { auth: app.publicKey, body: BODY, headers: { 'x-service-user-token': fresh } })).status).toBe(201)
    } finally {
      sqlite.close()
    }
  })

  test('an App deleted through this server\'s own connection is unknown on the very next request', async () => {
    const app = await srv.admin.createApp(t.orgId, { name: 'Short-lived' })
    expect((await call(srv.url, 'POST', '/v1/feedback', { auth: app.publicKey, body: BODY })).status).toBe(201)
    await srv.admin.deleteApp(t.orgId, app.id)
    expectEnvelope(await call(srv.url, 'POST', '/v1/feedback', { auth: app.publicKey, body: BODY }), 'unknown_app')
  })
  test('the generation is read once per event-loop turn: a write on this connection is seen within the turn, another connection\'s from the next turn', async () => {
    const directory = new CredentialDirectory(srv.ctx.store.credentials, srv.ctx.box)
    const a = await srv.admin.createApp(t.orgId, { name: 'Turn A' })
    const b = await srv.admin.createApp(t.orgId, { name: 'Turn B' })
    await Bun.sleep(0)
    // One stretch of code whose awaits all settle in microtasks (SQLite answers at once) = one turn.
    // A write on this connection (the API, the dashboard) ...
    expect((await directory.appByPublicKey(a.publicKey))?.row.id).toBe(a.id)
    await srv.admin.deleteApp(t.orgId, a.id)
    // ... is seen by the very next lookup, in the same turn.
    expect(await directory.appByPublicKey(a.publicKey)).toBeNull()

    // Another connection's write (the CLI) within the turn belongs to requests read after it: the next turn.
    expect((await directory.appByPublicKey(b.publicKey))?.row.id).toBe(b.id)
    const { sqlite, db } = openDatabase(join(srv.dataDir, 'fixloop.db'))
    try {
      await createTenantsService({ ...srv.ctx, store: storeOf(sqliteStorage(sqlite, db), srv.ctx.clock) }).deleteApp(t.orgId, b.id)
    } finally {
      sqlite.close()
    }
    expect((await directory.appByPublicKey(b.publicKey))?.row.id).toBe(b.id)
    await new Promise((resolve) => setImmediate(resolve))
    expect(await directory.appByPublicKey(b.publicKey)).toBeNull()
  })

  test('without its generation row the cache is never trusted: a revocation still applies at once', async () => {
    const db = sqliteOf(srv.ctx)
    const key = await srv.admin.createKey(t.orgId, 'no generation row')
    expect((await call(srv.url, 'GET', '/v1/apps', { auth: key.key })).status).toBe(200)
    const saved = generation()
    db.run('DELETE FROM credential_generation')
    try {
      expect((await call(srv.url, 'GET', '/v1/apps', { auth: key.key })).status).toBe(200)
      // Revoked from another connection: the triggers have no row to raise, the cache must not be trusted anyway.
      const { sqlite, db: other } = openDatabase(join(srv.dataDir, 'fixloop.db'))
      try {
        await createTenantsService({ ...srv.ctx, store: storeOf(sqliteStorage(sqlite, other), srv.ctx.clock) }).revokeKey(t.orgId, key.id)
      } finally {
        sqlite.close()
      }
      expectEnvelope(await call(srv.url, 'GET', '/v1/apps', { auth: key.key }), 'invalid_authorization')
    } finally {
      db.query('INSERT INTO credential_generation (id, generation) VALUES (1, ?)').run(saved + 1)
    }
  })
})

describe('the depth check before JSON.parse', () => {
  const enc = (text: string) => new TextEncoder().encode(text)
  const nested = (levels: number) => '['.repeat(levels) + ']'.repeat(levels)

  test('counts only real nesting: 64 levels pass, 65 do not, whether or not brackets are few', () => {
    expect(jsonDepthExceeds(enc(nested(MAX_JSON_DEPTH)))).toBe(false)
    expect(jsonDepthExceeds(enc(nested(MAX_JSON_DEPTH + 1)))).toBe(true)
    // Many brackets, little depth (the exact scan decides): 500 sibling objects, brackets inside strings.
    const siblings = JSON.stringify({ logs: Array.from({ length: 500 }, (_, i) => ({ m: `[{ line ${i} \\" [[{{` })) })
    expect(jsonDepthExceeds(enc(siblings))).toBe(false)
    expect(jsonDepthExceeds(enc(`{"a":"${'['.repeat(200)}"}`))).toBe(false)
    // Deep after many shallow brackets.
    expect(jsonDepthExceeds(enc(`[${'{},'.repeat(100)}${nested(MAX_JSON_DEPTH)}]`))).toBe(true)
  })

  test('a deep body is still 400 over HTTP, a wide one with many brackets is accepted', async () => {
    const deep = `{"text":"x","metadata":{"a":${nested(MAX_JSON_DEPTH + 5)}}}`
    expectEnvelope(await call(srv.url, 'POST', '/v1/feedback', { auth: t.pub, rawBody: deep, headers: { 'content-type': 'application/json' } }), 'invalid_body')
    const wide = { text: 'x', consoleLogs: Array.from({ length: 80 }, (_, i) => ({ level: 'log', message: `[${i}] {ok}`, ts: i })) }
    expect((await call(srv.url, 'POST', '/v1/feedback', { auth: t.pub, body: wide })).status).toBe(201)
  })
})

describe('request body with a Content-Length', () => {
  const head = (length: number, extra = '') =>
    `POST /v1/feedback HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${t.pub}\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n${extra}\r\n`

  test('a declared length over the limit is 413 before a byte of the body is sent', async () => {
    // Nothing follows the head: the answer can only come from the declared length.
    const reply = await rawRequest(head(LIMITS.requestBodyMaxBytes + 1), [], '"payload_too_large"')
    expect(reply).toStartWith('HTTP/1.1 413')
  })

  test('a body that arrives in pieces is read whole', async () => {
    const body = JSON.stringify({ text: 'Arrives in three pieces, with pauses between them', metadata: { pad: 'x'.repeat(3000) } })
    const a = body.slice(0, 10)
    const b = body.slice(10, 2000)
    const c = body.slice(2000)
    const reply = await rawRequest(head(Buffer.byteLength(body)), [
      { bytes: a, afterMs: 30 },
      { bytes: b, afterMs: 30 },
      { bytes: c, afterMs: 30 },
    ], '"received"')
    expect(reply).toStartWith('HTTP/1.1 201')
  })

  test('deep nesting and a wrong Content-Type are still refused on that path', async () => {
    const deep = `{"text":"x","metadata":{"a":${'['.repeat(65)}${']'.repeat(65)}}}`
    const r1 = await rawRequest(head(deep.length), [{ bytes: deep, afterMs: 0 }], '"invalid_body"')
    expect(r1).toStartWith('HTTP/1.1 400')
    expect(r1).toContain('nested deeper than 64')
    const form = 'text=hello'
    const r2 = await rawRequest(head(form.length).replace('application/json', 'application/x-www-form-urlencoded'), [{ bytes: form, afterMs: 0 }], '"invalid_body"')
    expect(r2).toStartWith('HTTP/1.1 400')
  })
})

test("a report's history finds its events by feedback_id and the events stored before that column by their data", async () => {
  const created = (await call(srv.url, 'POST', '/v1/feedback', { auth: t.pub, body: BODY })).body as { id: string }
  const db = sqliteOf(srv.ctx)
  const stored = db.query("SELECT feedback_id AS feedbackId, seq FROM events WHERE type = 'feedback.received' AND json_extract(data, '$.feedbackId') = ?").get(created.id) as { feedbackId: string; seq: number }
  expect(stored.feedbackId).toBe(created.id)
  // An event as stored before migration 0013: the id only inside data (a later seq than the outbox's).
  const legacySeq = (db.query('SELECT MAX(seq) AS s FROM events WHERE org_id = ?').get(t.orgId) as { s: number }).s + 1000
  db.query("INSERT INTO events (id, org_id, app_id, seq, type, data, created_at) VALUES (?, ?, ?, ?, 'feedback.status_changed', ?, ?)").run(
    'f'.repeat(24), t.orgId, t.appId, legacySeq, JSON.stringify({ feedbackId: created.id, from: 'received', to: 'archived' }), Date.now(),
  )
  const history = (await srv.ctx.store.inbox.history(t.orgId, created.id)).map((e) => [e.seq, e.type] as const)
  // The worker may add its own moves meanwhile, after the legacy row too (its seq follows the Org's highest,
  // which the legacy row now is: a CI run saw feedback.duplicate_attached last): both of these are there,
  // the received one first, every entry in seq order.
  expect(history[0]).toEqual([stored.seq, 'feedback.received'])
  expect(history).toContainEqual([legacySeq, 'feedback.status_changed'])
  expect(history.map(([seq]) => seq)).toEqual(history.map(([seq]) => seq).sort((a, b) => a - b))
  // Another Org's id finds nothing.
  expect(await srv.ctx.store.inbox.history('0'.repeat(24), created.id)).toEqual([])
})

test('OpenAPI documents the Idempotency-Key, X-Service-User-Token and X-Fixloop-Proof-Of-Work headers of POST /v1/feedback', async () => {
  const spec = (await call(srv.url, 'GET', '/openapi.json')).body
  const params = spec.paths['/v1/feedback'].post.parameters as { name: string; in: string; required: boolean }[]
  expect(params.map((p) => [p.name, p.in, p.required])).toEqual([
    ['idempotency-key', 'header', false],
    ['x-service-user-token', 'header', false],
    ['x-fixloop-proof-of-work', 'header', false],
  ])
})

/**
 * Session replay, the server side (issue 39, CONTRACT "Session replay", docs/api.md): the App's replay
 * settings, GET /v1/widget/config, upload kind "replay" and its gating, and the scrub: a realistic rrweb
 * recording with an email, card numbers and a password comes back without them, still rrweb JSON with
 * the same events; a gzip bomb, junk, deep nesting and an oversized upload are refused or stored
 * unreadable, never a 5xx, and the report is still processed. Runs on PostgreSQL + Redis + S3 too
 * (scripts/test-pg.sh).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { gunzipSync, gzipSync } from 'node:zlib'
import { call, eventually, seedTenant, spawnServer, startTestServer, tempDir, type Tenant, type TestServer } from './harness'
import { cliTenant, ensureBinary } from './helpers-lifecycle'
import { rmSync } from 'node:fs'
import { dbRow, dbRun } from './sqlite-of'
import { TEST_DIALECT } from './cluster-env'

const EMAIL = 'jane.doe@example.com'
const CARD = '4111 1111 1111 1111'
const CARD_COMPACT = '4111111111111111'
const CARD2 = '5555 5555 5555 4444'
const PASSWORD = 'Hunter2-Secret!'
const API_TOKEN = 'sk_live_51HqZt2eZvKYlo2C0aBcDeFgHiJkLmNoPq'

/** A recording as rrweb 2 writes it: meta, a full snapshot, inputs, a mutation, a click, custom and plugin events. */
function realisticEvents(): unknown[] {
  const t0 = 1_767_000_000_000
  const text = (id: number, textContent: string, extra: Record<string, unknown> = {}) => ({ type: 3, textContent, id, ...extra })
  const el = (id: number, tagName: string, attributes: Record<string, unknown>, childNodes: unknown[] = []) => ({ type: 2, tagName, attributes, childNodes, id })
  return [
    { type: 4, data: { href: `https://shop.example/checkout?email=${encodeURIComponent(EMAIL)}&token=${API_TOKEN}`, width: 1280, height: 800 }, timestamp: t0 },
    {
      type: 2,
      data: {
        node: {
          type: 0,
          id: 1,
          childNodes: [
            { type: 1, name: 'html', publicId: '', systemId: '', id: 2 },
            el(3, 'html', { lang: 'en' }, [
              el(4, 'head', {}, [el(5, 'style', {}, [text(6, '.greeting { color: #2a6; }', { isStyle: true })])]),
              el(7, 'body', {}, [
                el(8, 'p', { class: 'greeting' }, [text(9, `Signed in as ${EMAIL}`)]),
                el(10, 'input', { type: 'text', name: 'card', value: CARD }),
                el(11, 'input', { type: 'password', name: 'pw', value: PASSWORD }),
                el(12, 'a', { href: `https://shop.example/account?email=${encodeURIComponent(EMAIL)}` }, [text(15, 'Your account')]),
              ]),
            ]),
          ],
        },
        initialOffset: { left: 0, top: 0 },
      },
      timestamp: t0 + 10,
    },
    { type: 3, data: { source: 5, id: 10, text: CARD, isChecked: false, userTriggered: true }, timestamp: t0 + 500 },
    { type: 3, data: { source: 5, id: 11, text: PASSWORD, isChecked: false, userTriggered: true }, timestamp: t0 + 900 },
    {
      type: 3,
      data: {
        source: 0,
        texts: [{ id: 9, value: `Card ${CARD2} saved for ${EMAIL}` }],
        attributes: [{ id: 8, attributes: { 'data-user': EMAIL } }],
        removes: [],
        adds: [{ parentId: 7, nextId: null, node: el(13, 'div', {}, [text(14, `Contact ${EMAIL}`)]) }],
      },
      timestamp: t0 + 1200,
    },
    { type: 3, data: { source: 2, type: 2, id: 12, x: 10, y: 20 }, timestamp: t0 + 1500 },
    { type: 5, data: { tag: 'checkout', payload: { email: EMAIL, note: `card ${CARD_COMPACT}` } }, timestamp: t0 + 1600 },
    { type: 6, data: { plugin: 'rrweb/console@1', payload: { level: 'error', trace: [], payload: [`"login failed for ${EMAIL} with ${API_TOKEN}"`] } }, timestamp: t0 + 1700 },
  ]
}

let srv: TestServer
let on: Tenant
let off: Tenant
let fenced: Tenant

beforeAll(async () => {
  srv = await startTestServer({ FIXLOOP_RATE_LIMIT_MULTIPLIER: '100' })
  on = await seedTenant(srv.admin, { replay: { mode: 'inputs', seconds: 30 } }, 'Recorded')
  off = await seedTenant(srv.admin, {}, 'Plain')
  fenced = await seedTenant(srv.admin, { replay: { mode: 'masked' }, allowedOrigins: ['https://shop.example'] }, 'Fenced')
})
afterAll(() => srv?.close())

/** The Fenced App takes its own origin only; the others any. */
const originOf = (t: Tenant): Record<string, string> => (t === fenced ? { origin: 'https://shop.example' } : {})
const presign = (t: Tenant, body: Record<string, unknown>) => call(srv.url, 'POST', '/v1/feedback/upload-url', { auth: t.pub, body, headers: originOf(t) })

/** Uploads bytes as a replay; the key. */
async function uploadReplay(t: Tenant, bytes: Uint8Array, contentType = 'application/gzip'): Promise<string> {
  const up = await presign(t, { contentType, byteSize: bytes.byteLength, kind: 'replay', filename: 'replay.json.gz' })
  expect(up.status).toBe(200)
  const put = await fetch(up.body.url, { method: 'PUT', headers: { ...up.body.headers, ...originOf(t) }, body: bytes })
  expect(put.status).toBeLessThan(300)
  return up.body.key
}

async function submitWithReplay(t: Tenant, key: string, bytes: Uint8Array, contentType = 'application/gzip'): Promise<string> {
  const r = await call(srv.url, 'POST', '/v1/feedback', {
    auth: t.pub,
    body: { text: 'Checkout button does nothing', attachments: [{ key, kind: 'replay', contentType, byteSize: bytes.byteLength }] },
  })
  expect(r.status).toBe(201)
  return r.body.id
}

const item = async (t: Tenant, id: string) => (await call(srv.url, 'GET', `/v1/feedback/${id}`, { auth: t.key })).body

/** The replay attachment once its scrub is settled (ready or unreadable). */
async function settledReplay(t: Tenant, id: string): Promise<any> {
  return eventually(async () => {
    const a = (await item(t, id)).attachments.find((x: any) => x.kind === 'replay')
    return a && a.replayState !== 'pending' ? a : undefined
  }, 20_000)
}

describe('the App setting', () => {
  test('replay {mode, seconds}: off and 60 by default, set on create and update, a part left out keeps its value', async () => {
    const apps = (await call(srv.url, 'GET', '/v1/apps', { auth: off.key })).body.data
    expect(apps[0].replay).toEqual({ mode: 'off', seconds: 60 })
    expect((await call(srv.url, 'GET', '/v1/apps', { auth: on.key })).body.data[0].replay).toEqual({ mode: 'inputs', seconds: 30 })
    expect((await srv.admin.updateApp(off.orgId, off.appId, { replay: { seconds: 120 } })).replay).toEqual({ mode: 'off', seconds: 120 })
    expect((await srv.admin.updateApp(off.orgId, off.appId, { replay: { mode: 'masked' } })).replay).toEqual({ mode: 'masked', seconds: 120 })
    expect((await srv.admin.updateApp(off.orgId, off.appId, { replay: { mode: 'off', seconds: 60 } })).replay).toEqual({ mode: 'off', seconds: 60 })
  })

  test('out of range or unknown values are refused with the flag named; the App stays as it was', async () => {
    for (const seconds of [9, 301, 1.5, Number.NaN]) await expect(srv.admin.updateApp(off.orgId, off.appId, { replay: { seconds } })).rejects.toThrow(/--replay-seconds must be an integer from 10 to 300/)
    await expect(srv.admin.updateApp(off.orgId, off.appId, { replay: { mode: 'all' as never } })).rejects.toThrow(/--replay must be one of off, masked, inputs/)
    await expect(srv.admin.createApp(off.orgId, { name: 'X', replay: { seconds: 5 } })).rejects.toThrow(/replay-seconds/)
    expect((await call(srv.url, 'GET', '/v1/apps', { auth: off.key })).body.data[0].replay).toEqual({ mode: 'off', seconds: 60 })
  })
})

describe('GET /v1/widget/config', () => {
  test("answers the App's replay settings with a short private cache, for the App's pub_ key only", async () => {
    const r = await call(srv.url, 'GET', '/v1/widget/config', { auth: on.pub })
    expect(r.status).toBe(200)
    expect(r.body).toEqual({ replay: { mode: 'inputs', seconds: 30 } })
    expect(r.headers.get('cache-control')).toBe('private, max-age=60')
    expect(r.headers.get('vary')).toContain('Authorization')
    expect((await call(srv.url, 'GET', '/v1/widget/config', { auth: off.pub })).body).toEqual({ replay: { mode: 'off', seconds: 60 } })
  })

  test('no key, an unknown or deleted key, an sk_ key: the 401 envelope', async () => {
    const doomed = await seedTenant(srv.admin, { replay: { mode: 'masked' } }, 'Doomed')
    await srv.admin.deleteApp(doomed.orgId, doomed.appId)
    for (const auth of [undefined, 'pub_' + 'x'.repeat(32), doomed.pub, on.key, 'garbage']) {
      const r = await call(srv.url, 'GET', '/v1/widget/config', { auth })
      expect(r.status).toBe(401)
      expect(typeof r.body.error.code).toBe('string')
      expect(r.body.error.requestId ?? r.headers.get('x-request-id')).toBeTruthy()
    }
  })

  test('CORS like the other widget routes: the App\'s origins get Access-Control-Allow-Origin, others 403', async () => {
    const ok = await call(srv.url, 'GET', '/v1/widget/config', { auth: fenced.pub, headers: { origin: 'https://shop.example' } })
    expect(ok.status).toBe(200)
    expect(ok.headers.get('access-control-allow-origin')).toBe('https://shop.example')
    expect(ok.body.replay.mode).toBe('masked')
    const other = await call(srv.url, 'GET', '/v1/widget/config', { auth: fenced.pub, headers: { origin: 'https://evil.example' } })
    expect(other.status).toBe(403)
    expect(other.body.error.code).toBe('origin_not_allowed')
    expect(other.headers.get('access-control-allow-origin')).toBeNull()
    const preflight = await fetch(srv.url + '/v1/widget/config', {
      method: 'OPTIONS',
      headers: { origin: 'https://shop.example', 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization' },
    })
    expect(preflight.status).toBe(204)
    expect(preflight.headers.get('access-control-allow-origin')).toBe('https://shop.example')
  })

  test('rate limited per App and address like the challenge: 429 with Retry-After once the bucket is empty', async () => {
    const limited = await startTestServer({ FIXLOOP_RATE_LIMIT_MULTIPLIER: '0.05' })
    try {
      const t = await seedTenant(limited.admin)
      const codes: number[] = []
      for (let i = 0; i < 12; i++) codes.push((await call(limited.url, 'GET', '/v1/widget/config', { auth: t.pub })).status)
      expect(codes.slice(0, 6).every((c) => c === 200)).toBe(true)
      expect(codes).toContain(429)
    } finally {
      await limited.close()
    }
  })

  test('fuzz: junk query, NUL bytes, huge and odd headers, other methods: a 4xx envelope or 200, never a 5xx', async () => {
    const cases: [string, string, Record<string, string>][] = [
      ['GET', '/v1/widget/config?x=%00&replay[mode]=masked&' + 'a=1&'.repeat(500), {}],
      ['GET', '/v1/widget/config?%ZZ', {}],
      ['GET', '/v1/widget/config', { authorization: 'Bearer pub_\u0000x' }],
      ['GET', '/v1/widget/config', { authorization: 'Bearer ' + 'pub_' + 'a'.repeat(8_000) }],
      ['GET', '/v1/widget/config', { authorization: 'Basic Zm9vOmJhcg==' }],
      ['GET', '/v1/widget/config', { 'x-service-user-token': 'not.a.jwt' }],
      ['POST', '/v1/widget/config', {}],
      ['GET', '/v1/widget/config/../config', {}],
    ]
    for (const [method, path, headers] of cases) {
      const h = { authorization: `Bearer ${on.pub}`, ...headers }
      let r: Response
      try {
        r = await fetch(srv.url + path, { method, headers: h })
      } catch {
        continue // a header the client itself refuses to send
      }
      expect(r.status).toBeLessThan(500)
      const text = await r.text()
      if (r.status >= 400) expect([method, path, r.status, JSON.parse(text || 'null')?.error?.code]).toEqual([method, path, r.status, expect.any(String)])
    }
    const token = await call(srv.url, 'GET', '/v1/widget/config', { auth: on.pub, headers: { 'x-service-user-token': 'a.b.c' } })
    expect(token.status).toBe(401)
  })
})

describe('upload kind "replay"', () => {
  test('refused while the App records no replays, naming /kind', async () => {
    const r = await presign(off, { contentType: 'application/gzip', byteSize: 100, kind: 'replay' })
    expect(r.status).toBe(400)
    expect(r.body.error.code).toBe('invalid_body')
    expect(JSON.stringify(r.body.error.details)).toContain('/kind')
    expect(JSON.stringify(r.body.error.details)).toContain('replay mode is off')
  })

  test('gzip or JSON only, gzip for replays only, at most 15 MB', async () => {
    expect((await presign(on, { contentType: 'application/gzip', byteSize: 100, kind: 'replay' })).status).toBe(200)
    expect((await presign(on, { contentType: 'application/json; charset=utf-8', byteSize: 100, kind: 'replay' })).status).toBe(200)
    const png = await presign(on, { contentType: 'image/png', byteSize: 100, kind: 'replay' })
    expect(png.status).toBe(400)
    expect(JSON.stringify(png.body.error.details)).toContain('/contentType')
    const gz = await presign(on, { contentType: 'application/gzip', byteSize: 100, kind: 'attachment' })
    expect(gz.status).toBe(400)
    expect(JSON.stringify(gz.body.error.details)).toContain('session replays only')
    const big = await presign(on, { contentType: 'application/gzip', byteSize: 15 * 1024 * 1024 + 1, kind: 'replay' })
    expect(big.status).toBe(413)
    expect(big.body.error.code).toBe('payload_too_large')
    expect((await presign(on, { contentType: 'application/gzip', byteSize: 15 * 1024 * 1024, kind: 'replay' })).status).toBe(200)
  })

  test('attached as kind "replay", at most one, and only an upload issued as one', async () => {
    const bytes = gzipSync(JSON.stringify({ v: 1, events: realisticEvents() }))
    const key = await uploadReplay(on, bytes)
    const key2 = await uploadReplay(on, bytes)
    const shot = await presign(on, { contentType: 'application/json', byteSize: 2, kind: 'attachment' })
    await fetch(shot.body.url, { method: 'PUT', headers: shot.body.headers, body: '{}' })
    const att = (k: string, kind: string, type = 'application/gzip', size = bytes.byteLength) => ({ key: k, kind, contentType: type, byteSize: size })
    const refused: [unknown[], string, RegExp][] = [
      [[att(key, 'replay'), att(key2, 'replay')], '/attachments/1/kind', /at most one replay/],
      [[att(key, 'attachment')], '/attachments/0/key', /attach it with kind "replay"/],
      [[att(shot.body.key, 'replay', 'application/json', 2)], '/attachments/0/key', /needs an upload issued with kind "replay"/],
    ]
    for (const [attachments, path, message] of refused) {
      const r = await call(srv.url, 'POST', '/v1/feedback', { auth: on.pub, body: { text: 'x', attachments } })
      expect(r.status).toBe(400)
      expect(r.body.error.code).toBe('invalid_body')
      expect(r.body.error.details.issues[0].path).toBe(path)
      expect(r.body.error.details.issues[0].message).toMatch(message)
    }
  })
})

describe('the scrub', () => {
  test('a realistic recording: no email, card number, token or password left; valid rrweb JSON with the same events', async () => {
    const events = realisticEvents()
    const bytes = gzipSync(JSON.stringify({ v: 1, events }))
    const key = await uploadReplay(on, bytes)
    const id = await submitWithReplay(on, key, bytes)
    const a = await settledReplay(on, id)
    expect(a.replayState).toBe('ready')
    expect(a.contentType).toBe('application/gzip')
    const dl = await fetch(a.url)
    expect(dl.status).toBe(200)
    const gz = new Uint8Array(await dl.arrayBuffer())
    expect(gz.byteLength).toBe(a.byteSize)
    const json = gunzipSync(gz).toString('utf8')
    for (const raw of [EMAIL, encodeURIComponent(EMAIL), CARD, CARD_COMPACT, CARD2, PASSWORD, API_TOKEN]) expect(json).not.toContain(raw)
    const out = JSON.parse(json)
    expect(out.v).toBe(1)
    expect(out.events).toHaveLength(events.length)
    expect(out.events.map((e: any) => [e.type, e.timestamp])).toEqual(events.map((e: any) => [e.type, e.timestamp]))
    // Page text is recorded in "inputs" mode, scrubbed by the rules; CSS and structure are untouched.
    expect(json).toContain('[REDACTED:email]')
    expect(json).toContain('.greeting { color: #2a6; }')
    expect(out.events[5]).toEqual(events[5])
    // The password field: no value attribute, and its input event's text is gone (the event kept its place).
    const body = out.events[1].data.node.childNodes[1].childNodes[1]
    expect(body.childNodes[2].attributes).toEqual({ type: 'password', name: 'pw' })
    expect(out.events[3].data).toMatchObject({ source: 5, id: 11, text: '' })
    // Input values are masked in every mode.
    expect(out.events[2].data.text).toMatch(/^[*\s]+$/)
    expect(new URL(out.events[0].data.href).hostname).toBe('shop.example')
    // The report itself went on through the worker.
    await eventually(async () => ((await item(on, id)).status !== 'received' && (await item(on, id)).status !== 'sanitizing' ? true : undefined), 20_000)
  })

  test('masked mode: the server masks all page text too, whatever the widget sent (a bare array is accepted)', async () => {
    const events = realisticEvents()
    const bytes = new TextEncoder().encode(JSON.stringify(events))
    const key = await uploadReplay(fenced, bytes, 'application/json')
    const r = await call(srv.url, 'POST', '/v1/feedback', {
      auth: fenced.pub,
      headers: { origin: 'https://shop.example' },
      body: { text: 'x', attachments: [{ key, kind: 'replay', contentType: 'application/json', byteSize: bytes.byteLength }] },
    })
    expect(r.status).toBe(201)
    const a = await settledReplay(fenced, r.body.id)
    expect(a.replayState).toBe('ready')
    const out = JSON.parse(gunzipSync(new Uint8Array(await (await fetch(a.url)).arrayBuffer())).toString('utf8'))
    expect(out.events).toHaveLength(events.length)
    const p = out.events[1].data.node.childNodes[1].childNodes[1].childNodes[0]
    expect(p.childNodes[0].textContent).toMatch(/^[*\s]+$/)
    expect(out.events[4].data.texts[0].value).toMatch(/^[*\s]+$/)
  })

  test('not downloadable until scrubbed: no URL while pending, the store answers 404 for it, fixloop reads nothing of it', async () => {
    const bytes = gzipSync(JSON.stringify({ v: 1, events: realisticEvents() }))
    const key = await uploadReplay(on, bytes)
    const id = await submitWithReplay(on, key, bytes)
    const ready = await settledReplay(on, id)
    await dbRun(srv.ctx, "UPDATE uploads SET replay_state = 'pending' WHERE key = ?", [key])
    const a = (await item(on, id)).attachments[0]
    expect(a).toMatchObject({ kind: 'replay', replayState: 'pending' })
    expect(a.url).toBeUndefined()
    // Nor does fixloop itself hand it on (the agent's attachments folder reads through readReferenced).
    expect(await srv.services.uploads.readReferenced(on.appId, key, 15 * 1024 * 1024)).toBeNull()
    if (TEST_DIALECT !== 'pg') {
      // The embedded store's own download route: a URL made while it was ready no longer serves it.
      const dl = await fetch(ready.url)
      expect(dl.status).toBe(404)
      expect(((await dl.json()) as any).error.code).toBe('not_found')
    }
    await dbRun(srv.ctx, "UPDATE uploads SET replay_state = 'ready' WHERE key = ?", [key])
    const read = await srv.services.uploads.readReferenced(on.appId, key, 15 * 1024 * 1024)
    expect(JSON.parse(gunzipSync(read!.bytes).toString()).v).toBe(1)
  })

  const hostile: [string, () => Uint8Array, string][] = [
    ['a gzip bomb (200 MB of zeros)', () => gzipSync(Buffer.alloc(200 * 1024 * 1024), { level: 9 }), 'application/gzip'],
    ['junk bytes', () => new Uint8Array(4096).map((_, i) => (i * 7919) % 251), 'application/json'],
    ['junk after a gzip header', () => new Uint8Array([0x1f, 0x8b, 8, 0, ...new Uint8Array(512).fill(0x41)]), 'application/gzip'],
    ['10,000 levels of nesting', () => gzipSync('{"v":1,"events":[' + '['.repeat(10_000) + ']'.repeat(10_000) + ']}'), 'application/gzip'],
    ['JSON that is not rrweb', () => gzipSync(JSON.stringify({ v: 1, events: [{ hello: 'world' }] })), 'application/gzip'],
    ['invalid UTF-8', () => new Uint8Array([0x5b, 0xff, 0xfe, 0x5d]), 'application/json'],
  ]
  test.each(hostile)('%s: stored unreadable (the object removed), never a 5xx; the report is processed', async (_name, make, type) => {
    const bytes = make()
    const key = await uploadReplay(on, bytes, type)
    const id = await submitWithReplay(on, key, bytes, type)
    const a = await settledReplay(on, id)
    expect(a.replayState).toBe('unreadable')
    expect(a.url).toBeUndefined()
    expect(await srv.services.blobs.stat(srv.services.blobs.sealedKey(key))).toBeNull()
    expect(await srv.services.blobs.stat(key)).toBeNull()
    await eventually(async () => (!['received', 'sanitizing'].includes((await item(on, id)).status) ? true : undefined), 20_000)
    expect((await call(srv.url, 'GET', `/v1/feedback/${id}`, { auth: on.key })).status).toBe(200)
  })

  test('a replay of 15 MB + 1 byte: refused at upload-url (413); PUT anyway under a smaller announcement, refused at the PUT or the submission', async () => {
    const big = 15 * 1024 * 1024 + 1
    expect((await presign(on, { contentType: 'application/gzip', byteSize: big, kind: 'replay' })).status).toBe(413)
    const up = await presign(on, { contentType: 'application/gzip', byteSize: 1024, kind: 'replay' })
    const put = await fetch(up.body.url, { method: 'PUT', headers: up.body.headers, body: new Uint8Array(big) })
    // The embedded store stops the PUT itself; S3 takes it, and the submission's check refuses the object.
    expect(put.status).toBeLessThan(500)
    const sub = await call(srv.url, 'POST', '/v1/feedback', {
      auth: on.pub,
      body: { text: 'x', attachments: [{ key: up.body.key, kind: 'replay', contentType: 'application/gzip', byteSize: 1024 }] },
    })
    expect([400, 413]).toContain(sub.status)
    expect(['invalid_body', 'payload_too_large']).toContain(sub.body.error.code)
  })

  test('an idempotent retry of a report with a replay answers the same report after the scrub replaced the object', async () => {
    const bytes = gzipSync(JSON.stringify({ v: 1, events: realisticEvents() }))
    const key = await uploadReplay(on, bytes)
    const body = { text: 'retry me', attachments: [{ key, kind: 'replay', contentType: 'application/gzip', byteSize: bytes.byteLength }] }
    const first = await call(srv.url, 'POST', '/v1/feedback', { auth: on.pub, body, headers: { 'idempotency-key': 'replay-retry-1' } })
    expect(first.status).toBe(201)
    expect((await settledReplay(on, first.body.id)).replayState).toBe('ready')
    const again = await call(srv.url, 'POST', '/v1/feedback', { auth: on.pub, body, headers: { 'idempotency-key': 'replay-retry-1' } })
    expect(again.status).toBe(201)
    expect(again.body.id).toBe(first.body.id)
    expect(await dbRow(srv.ctx, 'SELECT feedback_id FROM uploads WHERE key = ?', [key])).toEqual({ feedback_id: first.body.id })
  })
})

// The CLI writes the data dir's SQLite database: this case is for SQLite mode.
describe('the compiled binary', () => {
  test.skipIf(TEST_DIALECT === 'pg')('app create --replay inputs --replay-seconds 20, then the widget config and a scrubbed replay (the scrub thread is inside the binary)', async () => {
    ensureBinary()
    const dir = tempDir('fixloop-replay-bin-')
    try {
      const t = await cliTenant(dir, ['--replay', 'inputs', '--replay-seconds', '20'])
      const server = await spawnServer(dir, { FIXLOOP_RATE_LIMIT_MULTIPLIER: '100' })
      try {
        expect((await call(server.url, 'GET', '/v1/widget/config', { auth: t.pub })).body).toEqual({ replay: { mode: 'inputs', seconds: 20 } })
        const bytes = gzipSync(JSON.stringify({ v: 1, events: realisticEvents() }))
        const up = await call(server.url, 'POST', '/v1/feedback/upload-url', { auth: t.pub, body: { contentType: 'application/gzip', byteSize: bytes.byteLength, kind: 'replay' } })
        expect(up.status).toBe(200)
        expect((await fetch(up.body.url, { method: 'PUT', headers: up.body.headers, body: bytes })).status).toBeLessThan(300)
        const sub = await call(server.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: 'x', attachments: [{ key: up.body.key, kind: 'replay', contentType: 'application/gzip', byteSize: bytes.byteLength }] } })
        expect(sub.status).toBe(201)
        const a = await eventually(async () => {
          const att = (await call(server.url, 'GET', `/v1/feedback/${sub.body.id}`, { auth: t.key })).body.attachments[0]
          return att.replayState !== 'pending' ? att : undefined
        }, 30_000)
        expect(a.replayState).toBe('ready')
        const json = gunzipSync(new Uint8Array(await (await fetch(a.url)).arrayBuffer())).toString('utf8')
        for (const raw of [EMAIL, CARD, PASSWORD]) expect(json).not.toContain(raw)
        expect(JSON.parse(json).events).toHaveLength(realisticEvents().length)
      } finally {
        await server.stop()
      }
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

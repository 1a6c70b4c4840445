/**
 * Spec parts 7 and 8: every limit at its boundary, strict validation (unknown fields anywhere are
 * invalid_body with details.issues), body size (413 with and without Content-Length), list paging
 * limits, invalid ids, PATCH errors, the exact error envelope, X-Request-Id on every response, and
 * no 5xx anywhere.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, eventually, seedTenant, startTestServer, type Reply, type Tenant, type TestServer } from './harness'
import { ReplyLog, attachmentRefs, chunkedBody, expectEnvelope, expectInvalidBody, jsonOfSize, postStream, secretForms } from './helpers-auth'

const MB = 1024 * 1024
const UNKNOWN_ID = 'abcdefabcdefabcdefabcdef'
/** A character outside the Basic Multilingual Plane: one code point, two UTF-16 code units. */
const EMOJI = '\u{1F600}'

let srv: TestServer
let t: Tenant
const log = new ReplyLog()

beforeAll(async () => {
  srv = await startTestServer({ FIXLOOP_RATE_LIMIT_MULTIPLIER: '100' })
  t = await seedTenant(srv.admin)
})

afterAll(async () => {
  log.expectNo5xx()
  log.expectRequestIds()
  log.expectNoLeak([t.key, ...secretForms(t.secret)])
  await srv.close()
})

const submit = (body: unknown, headers: Record<string, string> = {}) => log.call(srv.url, 'POST', '/v1/feedback', { auth: t.pub, body, headers })
const sk = (method: string, path: string, body?: unknown) => log.call(srv.url, method, path, { auth: t.key, body })

/** A row of a limits table: the body sent and the outcome expected. */
interface LimitRow {
  name: string
  body: Record<string, unknown>
  status: number
  code?: string
  /** For invalid_body: some issue's path starts with this. */
  issueAt?: string
}

function checkRow(row: LimitRow, r: Reply): void {
  expect({ name: row.name, status: r.status, code: r.body?.error?.code }).toEqual({ name: row.name, status: row.status, code: row.code })
  if (row.status === 201) {
    expect(r.body.id).toMatch(/^[0-9a-f]{24}$/)
    expect(r.body.status).toBe('received')
  }
  if (row.code === 'invalid_body') {
    expectInvalidBody(r)
    if (row.issueAt) {
      const paths: string[] = r.body.error.details.issues.map((i: { path: string }) => String(i.path))
      expect({ name: row.name, match: paths.some((p) => p.startsWith(row.issueAt!)) }).toEqual({ name: row.name, match: true })
    }
  } else if (row.code) {
    expectEnvelope(r, row.code)
  }
}

const log1 = (message: string) => ({ level: 'error', message, ts: 1_700_000_000_000 })

describe('submission limits of spec part 8, at their boundaries', () => {
  test('scenario table', async () => {
    const urlOf = (len: number) => {
      const base = 'https://example.com/'
      return base + 'a'.repeat(len - base.length)
    }
    const rows: LimitRow[] = [
      { name: 'text missing', body: {}, status: 400, code: 'invalid_body', issueAt: '/text' },
      { name: 'text of 0 characters', body: { text: '' }, status: 400, code: 'invalid_body', issueAt: '/text' },
      { name: 'text of 1 character', body: { text: 'x' }, status: 201 },
      { name: 'text of 8192 characters', body: { text: 'x'.repeat(8192) }, status: 201 },
      { name: 'text of 8193 characters', body: { text: 'x'.repeat(8193) }, status: 400, code: 'invalid_body', issueAt: '/text' },
      // Characters are Unicode code points, as JSON Schema's maxLength counts them: an emoji is one
      // character (two UTF-16 code units, which TypeBox's own String would count).
      { name: 'text of 8192 emoji', body: { text: EMOJI.repeat(8192) }, status: 201 },
      { name: 'text of 8193 emoji', body: { text: EMOJI.repeat(8193) }, status: 400, code: 'invalid_body', issueAt: '/text' },
      { name: 'text of 8191 letters and one emoji', body: { text: 'x'.repeat(8191) + EMOJI }, status: 201 },
      { name: 'text not a string', body: { text: 42 }, status: 400, code: 'invalid_body', issueAt: '/text' },
      { name: 'text null', body: { text: null }, status: 400, code: 'invalid_body', issueAt: '/text' },
      { name: 'url of 2048 characters', body: { text: 'x', url: urlOf(2048) }, status: 201 },
      { name: 'url of 2049 characters', body: { text: 'x', url: urlOf(2049) }, status: 400, code: 'invalid_body', issueAt: '/url' },
      { name: 'url of 2048 characters, emoji in its path', body: { text: 'x', url: urlOf(20) + EMOJI.repeat(2028) }, status: 201 },
      { name: 'url of 2049 characters, emoji in its path', body: { text: 'x', url: urlOf(20) + EMOJI.repeat(2029) }, status: 400, code: 'invalid_body', issueAt: '/url' },
      { name: 'url not a URL', body: { text: 'x', url: 'not a url' }, status: 400, code: 'invalid_body', issueAt: '/url' },
      { name: 'url relative', body: { text: 'x', url: '/checkout' }, status: 400, code: 'invalid_body', issueAt: '/url' },
      { name: 'url not a string', body: { text: 'x', url: 7 }, status: 400, code: 'invalid_body', issueAt: '/url' },
      { name: 'userAgent of 512 characters', body: { text: 'x', userAgent: 'u'.repeat(512) }, status: 201 },
      { name: 'userAgent of 513 characters', body: { text: 'x', userAgent: 'u'.repeat(513) }, status: 400, code: 'invalid_body', issueAt: '/userAgent' },
      { name: 'userAgent of 512 emoji', body: { text: 'x', userAgent: EMOJI.repeat(512) }, status: 201 },
      { name: 'userAgent of 513 emoji', body: { text: 'x', userAgent: EMOJI.repeat(513) }, status: 400, code: 'invalid_body', issueAt: '/userAgent' },
      { name: '500 console entries', body: { text: 'x', consoleLogs: Array.from({ length: 500 }, (_, i) => log1(`m${i}`)) }, status: 201 },
      {
        name: '501 console entries',
        body: { text: 'x', consoleLogs: Array.from({ length: 501 }, (_, i) => log1(`m${i}`)) },
        status: 400,
        code: 'invalid_body',
        issueAt: '/consoleLogs',
      },
      { name: 'console message of 1000 characters', body: { text: 'x', consoleLogs: [log1('m'.repeat(1000))] }, status: 201 },
      { name: 'console message of 1001 characters', body: { text: 'x', consoleLogs: [log1('m'.repeat(1001))] }, status: 400, code: 'invalid_body', issueAt: '/consoleLogs' },
      { name: 'console message of 1000 emoji', body: { text: 'x', consoleLogs: [log1(EMOJI.repeat(1000))] }, status: 201 },
      { name: 'console message of 1001 emoji', body: { text: 'x', consoleLogs: [log1(EMOJI.repeat(1001))] }, status: 400, code: 'invalid_body', issueAt: '/consoleLogs' },
      { name: 'console entry without ts', body: { text: 'x', consoleLogs: [{ level: 'log', message: 'm' }] }, status: 400, code: 'invalid_body', issueAt: '/consoleLogs' },
      { name: 'consoleLogs not an array', body: { text: 'x', consoleLogs: { level: 'log' } }, status: 400, code: 'invalid_body', issueAt: '/consoleLogs' },
      // '{"k":""}' is 8 bytes: 4088 more make exactly 4096.
      { name: 'metadata of exactly 4096 bytes of JSON', body: { text: 'x', metadata: { k: 'v'.repeat(4088) } }, status: 201 },
      { name: 'metadata of 4097 bytes of JSON', body: { text: 'x', metadata: { k: 'v'.repeat(4089) } }, status: 400, code: 'invalid_body', issueAt: '/metadata' },
      // 'é' is 2 bytes of UTF-8: 2044 of them are 4088 bytes (4096 in all), 2045 are 4098 — the limit counts bytes.
      { name: 'metadata of 4096 bytes with 2-byte characters', body: { text: 'x', metadata: { k: 'é'.repeat(2044) } }, status: 201 },
      { name: 'metadata of 4098 bytes but 2053 characters', body: { text: 'x', metadata: { k: 'é'.repeat(2045) } }, status: 400, code: 'invalid_body', issueAt: '/metadata' },
      { name: 'metadata with arbitrary nested keys (free-form)', body: { text: 'x', metadata: { plan: 'pro', flags: { beta: true }, n: [1, 2] } }, status: 201 },
      { name: 'metadata an array', body: { text: 'x', metadata: [1, 2] }, status: 400, code: 'invalid_body', issueAt: '/metadata' },
      { name: 'metadata a string', body: { text: 'x', metadata: 'x' }, status: 400, code: 'invalid_body', issueAt: '/metadata' },
      { name: 'severity high', body: { text: 'x', severity: 'high' }, status: 201 },
      { name: 'severity null', body: { text: 'x', severity: null }, status: 201 },
      { name: 'severity not one of low/medium/high', body: { text: 'x', severity: 'urgent' }, status: 400, code: 'invalid_body', issueAt: '/severity' },
      { name: 'viewport missing dpr', body: { text: 'x', viewport: { w: 1, h: 1 } }, status: 400, code: 'invalid_body', issueAt: '/viewport' },
      { name: 'viewport with a string', body: { text: 'x', viewport: { w: '100', h: 1, dpr: 1 } }, status: 400, code: 'invalid_body', issueAt: '/viewport' },
      { name: 'identity email not a string', body: { text: 'x', identity: { email: 5 } }, status: 400, code: 'invalid_body', issueAt: '/identity' },
      { name: 'componentTarget without name', body: { text: 'x', componentTarget: { meta: {} } }, status: 400, code: 'invalid_body', issueAt: '/componentTarget' },
      { name: 'body an array', body: [{ text: 'x' }] as unknown as Record<string, unknown>, status: 400, code: 'invalid_body' },
    ]
    for (const row of rows) checkRow(row, await submit(row.body))
  })

  test('attachments: 10 accepted, 11 refused', async () => {
    const refs = await attachmentRefs(srv.url, t.pub, 11)
    const ten = await submit({ text: 'with ten', attachments: refs.slice(0, 10) })
    checkRow({ name: '10 attachments', body: {}, status: 201 }, ten)
    const eleven = await submit({ text: 'with eleven', attachments: refs })
    checkRow({ name: '11 attachments', body: {}, status: 400, code: 'invalid_body', issueAt: '/attachments' }, eleven)
    const g = await sk('GET', `/v1/feedback/${ten.body.id}`)
    expect(g.status).toBe(200)
    expect(g.body.attachments).toHaveLength(10)
  })

  test('attachment byteSize over 15 MB is 413 payload_too_large; exactly 15 MB is not', async () => {
    const [ref] = await attachmentRefs(srv.url, t.pub, 1)
    const over = await submit({ text: 'big', attachments: [{ ...ref, byteSize: 15 * MB + 1 }] })
    expect(over.status).toBe(413)
    expectEnvelope(over, 'payload_too_large')
    const huge = await submit({ text: 'huge', attachments: [{ ...ref, byteSize: 2 ** 40 }] })
    expect(huge.status).toBe(413)
    expectEnvelope(huge, 'payload_too_large')
    const atLimit = await submit({ text: 'at limit', attachments: [{ ...ref, byteSize: 15 * MB }] })
    expect(atLimit.status).not.toBe(413)
    expect(atLimit.status).toBeLessThan(500)
  })

  test('a full payload round-trips through GET /v1/feedback/:id', async () => {
    const [ref] = await attachmentRefs(srv.url, t.pub, 1)
    const body = {
      text: 'Full report',
      severity: 'medium',
      url: 'https://app.example.com/settings?tab=2',
      userAgent: 'Mozilla/5.0 test',
      viewport: { w: 1280, h: 800, dpr: 2 },
      consoleLogs: [log1('TypeError: x is undefined')],
      attachments: [{ ...ref, width: 10, height: 20 }],
      componentTarget: { name: 'SaveButton', meta: { testId: 'save' }, bbox: { x: 1, y: 2, w: 3, h: 4 } },
      metadata: { plan: 'pro', n: 3 },
      identity: { email: 'full@example.com', name: 'Full', externalUserId: 'full-1' },
    }
    const r = await submit(body)
    expect(r.status).toBe(201)
    const g = await sk('GET', `/v1/feedback/${r.body.id}`)
    expect(g.status).toBe(200)
    expect(g.body).toMatchObject({
      id: r.body.id,
      appId: t.appId,
      severity: 'medium',
      url: body.url,
      userAgent: body.userAgent,
      viewport: body.viewport,
      consoleLogs: body.consoleLogs,
      componentTarget: body.componentTarget,
      submissionMeta: body.metadata,
      submittedBy: { mode: 'public', externalUserId: 'full-1', email: 'full@example.com' },
    })
    expect(g.body.attachments[0]).toMatchObject({ key: ref.key, kind: ref.kind, contentType: ref.contentType, byteSize: ref.byteSize, width: 10, height: 20 })
    expect(g.body.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/)
  })

  test('a text of 8192 emoji is stored and returned whole; one more is refused saying the limit', async () => {
    const text = EMOJI.repeat(8192)
    const r = await submit({ text })
    expect(r.status).toBe(201)
    const g = await sk('GET', `/v1/feedback/${r.body.id}`)
    expect(g.body.text).toBe(text)
    const over = await submit({ text: text + EMOJI })
    expect(over.body.error.details.issues).toEqual([{ path: '/text', message: 'Expected string length less or equal to 8192' }])
  })

  test('userAgent falls back to the User-Agent header', async () => {
    const r = await submit({ text: 'ua' }, { 'user-agent': 'HeaderAgent/1.0' })
    expect(r.status).toBe(201)
    expect((await sk('GET', `/v1/feedback/${r.body.id}`)).body.userAgent).toBe('HeaderAgent/1.0')
  })
})

describe('strict validation: unknown fields are invalid_body with details.issues', () => {
  test('scenario table', async () => {
    const vp = { w: 1, h: 1, dpr: 1 }
    const rows: LimitRow[] = [
      { name: 'unknown top-level field', body: { text: 'x', admin: true }, status: 400, code: 'invalid_body', issueAt: '/admin' },
      { name: 'top-level status (not a submission field)', body: { text: 'x', status: 'pr_opened' }, status: 400, code: 'invalid_body' },
      { name: 'unknown field in viewport', body: { text: 'x', viewport: { ...vp, zoom: 2 } }, status: 400, code: 'invalid_body', issueAt: '/viewport' },
      { name: 'unknown field in a console entry', body: { text: 'x', consoleLogs: [{ ...log1('m'), stack: 's' }] }, status: 400, code: 'invalid_body', issueAt: '/consoleLogs' },
      {
        name: 'unknown field in an attachment',
        body: { text: 'x', attachments: [{ key: 'k', kind: 'screenshot', contentType: 'image/png', byteSize: 1, url: 'https://x' }] },
        status: 400,
        code: 'invalid_body',
        issueAt: '/attachments',
      },
      { name: 'unknown field in componentTarget', body: { text: 'x', componentTarget: { name: 'B', selector: '#b' } }, status: 400, code: 'invalid_body', issueAt: '/componentTarget' },
      {
        name: 'unknown field in componentTarget.bbox',
        body: { text: 'x', componentTarget: { name: 'B', bbox: { x: 0, y: 0, w: 1, h: 1, z: 1 } } },
        status: 400,
        code: 'invalid_body',
        issueAt: '/componentTarget',
      },
      { name: 'unknown field in identity', body: { text: 'x', identity: { email: 'a@b.c', role: 'admin' } }, status: 400, code: 'invalid_body', issueAt: '/identity' },
    ]
    for (const row of rows) checkRow(row, await submit(row.body))
  })

  test('malformed JSON and non-object bodies', async () => {
    const raws = ['{bad', '{"text": "a",}', '{"text": "a"', "{'text': 'a'}", '', 'null', '"text"', '42']
    for (const raw of raws) {
      const r = await log.call(srv.url, 'POST', '/v1/feedback', { auth: t.pub, rawBody: raw, headers: { 'content-type': 'application/json' } })
      expect({ raw, status: r.status, code: r.body?.error?.code }).toEqual({ raw, status: 400, code: 'invalid_body' })
      expectInvalidBody(r)
    }
  })

  test('a body that is not JSON is refused with a 4xx envelope, never stored', async () => {
    const r = await log.call(srv.url, 'POST', '/v1/feedback', { auth: t.pub, rawBody: 'text=hello', headers: { 'content-type': 'application/x-www-form-urlencoded' } })
    expect(r.status).toBeGreaterThanOrEqual(400)
    expect(r.status).toBeLessThan(500)
    expectEnvelope(r, r.body.error.code)
  })
})

describe('request body size: 8 MB', () => {
  test('with Content-Length: 8 MB + 1 byte is 413; exactly 8 MB passes the size gate', async () => {
    const over = await log.call(srv.url, 'POST', '/v1/feedback', { auth: t.pub, rawBody: jsonOfSize(8 * MB + 1), headers: { 'content-type': 'application/json' } })
    expect(over.status).toBe(413)
    expectEnvelope(over, 'payload_too_large')
    // Exactly 8 MB is allowed through; its 8 MB text is then too long for the schema.
    const at = await log.call(srv.url, 'POST', '/v1/feedback', { auth: t.pub, rawBody: jsonOfSize(8 * MB), headers: { 'content-type': 'application/json' } })
    expectInvalidBody(at)
  })

  test('the size gate runs before authentication is needed to read the body', async () => {
    const r = await log.call(srv.url, 'POST', '/v1/feedback', { rawBody: jsonOfSize(9 * MB), headers: { 'content-type': 'application/json' } })
    expect([401, 413]).toContain(r.status)
    expectEnvelope(r, r.body.error.code)
  })

  test('chunked, without Content-Length: 9 MB is 413 payload_too_large', async () => {
    const r = log.add('chunked 9 MB', await postStream(srv.url, '/v1/feedback', t.pub, chunkedBody(jsonOfSize(9 * MB))))
    expect(r.status).toBe(413)
    expectEnvelope(r, 'payload_too_large')
  })

  test('chunked: a body over 8 MB of UTF-8 but under 8 M characters is 413 (bytes are counted)', async () => {
    // 4.3 M two-byte characters: about 8.6 MB of UTF-8.
    const text = '{"text":"' + 'é'.repeat(4_300_000) + '"}'
    expect(Buffer.byteLength(text)).toBeGreaterThan(8 * MB)
    expect(text.length).toBeLessThan(8 * MB)
    const r = log.add('chunked 8.6 MB UTF-8', await postStream(srv.url, '/v1/feedback', t.pub, chunkedBody(text)))
    expect(r.status).toBe(413)
    expectEnvelope(r, 'payload_too_large')
  })

  test('chunked: exactly 8 MB passes the size gate (then fails the schema)', async () => {
    const r = log.add('chunked 8 MB', await postStream(srv.url, '/v1/feedback', t.pub, chunkedBody(jsonOfSize(8 * MB))))
    expectInvalidBody(r)
  })

  test('chunked: far over every limit (20 MB) is still 413, not a crash', async () => {
    const res = await fetch(srv.url + '/v1/feedback', {
      method: 'POST',
      headers: { authorization: `Bearer ${t.pub}`, 'content-type': 'application/json' },
      body: chunkedBody(jsonOfSize(20 * MB)),
    }).catch((e: Error) => e)
    // The connection may be cut once the server has answered; if a reply arrived it must be 413.
    if (!(res instanceof Error)) expect(res.status).toBe(413)
    // The server is still healthy afterwards.
    expect((await submit({ text: 'still alive' })).status).toBe(201)
  })
})

describe('GET /v1/feedback query limits and paging', () => {
  test('scenario table', async () => {
    const rows: { name: string; query: string; status: number; code?: string }[] = [
      { name: 'limit 0', query: 'limit=0', status: 400, code: 'invalid_body' },
      { name: 'limit 1', query: 'limit=1', status: 200 },
      { name: 'limit 100', query: 'limit=100', status: 200 },
      { name: 'limit 101', query: 'limit=101', status: 400, code: 'invalid_body' },
      { name: 'limit -1', query: 'limit=-1', status: 400, code: 'invalid_body' },
      { name: 'limit 1.5', query: 'limit=1.5', status: 400, code: 'invalid_body' },
      { name: 'limit not a number', query: 'limit=ten', status: 400, code: 'invalid_body' },
      { name: 'cursor not hex', query: 'cursor=zzzzzzzzzzzzzzzzzzzzzzzz', status: 400, code: 'invalid_body' },
      { name: 'cursor too short', query: 'cursor=abc', status: 400, code: 'invalid_body' },
      { name: 'cursor too long', query: `cursor=${UNKNOWN_ID}0`, status: 400, code: 'invalid_body' },
      { name: 'cursor unknown but well-formed', query: `cursor=${UNKNOWN_ID}`, status: 200 },
      { name: 'appId not hex', query: 'appId=nope', status: 400, code: 'invalid_body' },
      { name: 'status not a status', query: 'status=bogus', status: 400, code: 'invalid_body' },
      { name: 'status received', query: 'status=received', status: 200 },
      { name: 'includeDuplicates not a boolean', query: 'includeDuplicates=maybe', status: 400, code: 'invalid_body' },
      { name: 'includeDuplicates true', query: 'includeDuplicates=true', status: 200 },
      { name: 'unknown query parameter', query: 'orgId=abcdefabcdefabcdefabcdef', status: 400, code: 'invalid_body' },
    ]
    for (const row of rows) {
      const r = await sk('GET', `/v1/feedback?${row.query}`)
      expect({ name: row.name, status: r.status, code: r.body?.error?.code }).toEqual({ name: row.name, status: row.status, code: row.code })
      if (row.code) expectInvalidBody(r)
      else {
        expect(Array.isArray(r.body.data)).toBe(true)
        expect('nextCursor' in r.body).toBe(true)
      }
    }
  })

  test('limit bounds the page size; cursors walk newest first to a null nextCursor', async () => {
    const app = await srv.admin.createApp(t.orgId, { name: 'Paging' })
    const ids: string[] = []
    for (let i = 0; i < 5; i++) {
      const r = await log.call(srv.url, 'POST', '/v1/feedback', { auth: app.publicKey, body: { text: `page item ${i}` } })
      expect(r.status).toBe(201)
      ids.push(r.body.id)
    }
    const seen: string[] = []
    let cursor: string | null = null
    for (let guard = 0; guard < 10; guard++) {
      const q: string = `/v1/feedback?appId=${app.id}&limit=2${cursor ? `&cursor=${cursor}` : ''}`
      const r = await sk('GET', q)
      expect(r.status).toBe(200)
      expect(r.body.data.length).toBeLessThanOrEqual(2)
      seen.push(...r.body.data.map((x: { id: string }) => x.id))
      cursor = r.body.nextCursor
      if (cursor === null) break
      expect(cursor).toBe(r.body.data[r.body.data.length - 1].id)
    }
    expect(cursor).toBeNull()
    expect(seen).toEqual([...ids].reverse())
    const one = await sk('GET', `/v1/feedback?appId=${app.id}&limit=1`)
    expect(one.body.data).toHaveLength(1)
    expect(one.body.data[0].id).toBe(ids[4])
    // Default 50 and maximum 100 both hold all five.
    expect((await sk('GET', `/v1/feedback?appId=${app.id}`)).body).toMatchObject({ nextCursor: null })
    expect((await sk('GET', `/v1/feedback?appId=${app.id}&limit=100`)).body.data).toHaveLength(5)
  })
})

describe('ids and PATCH errors', () => {
  let itemId: string
  beforeAll(async () => {
    const r = await submit({ text: 'to be moved' })
    expect(r.status).toBe(201)
    itemId = r.body.id
    // Let the worker finish with it, so no system move races the customer moves below.
    await eventually(async () => (await call(srv.url, 'GET', `/v1/feedback/${itemId}`, { auth: t.key })).body.status === 'awaiting_manual')
  })

  test('invalid ids are 400 invalid_id; unknown ids are 404 not_found', async () => {
    const bad = ['not-hex', 'zzzzzzzzzzzzzzzzzzzzzzzz', 'abcdefabcdefabcdefabcde', 'abcdefabcdefabcdefabcdef0', '%20', '1']
    for (const id of bad) {
      for (const [method, body] of [['GET', undefined], ['PATCH', { status: 'archived' }]] as const) {
        const r = await sk(method, `/v1/feedback/${id}`, body)
        expect({ id, method, status: r.status, code: r.body?.error?.code }).toEqual({ id, method, status: 400, code: 'invalid_id' })
        expectEnvelope(r, 'invalid_id')
      }
    }
    for (const [method, body] of [['GET', undefined], ['PATCH', { status: 'archived' }]] as const) {
      const r = await sk(method, `/v1/feedback/${UNKNOWN_ID}`, body)
      expect({ method, status: r.status }).toEqual({ method, status: 404 })
      expectEnvelope(r, 'not_found')
    }
  })

  test('PATCH body errors', async () => {
    const rows: { name: string; body?: unknown; raw?: string; status: number; code: string }[] = [
      { name: 'empty patch', body: {}, status: 400, code: 'no_op' },
      { name: 'status bogus', body: { status: 'bogus' }, status: 400, code: 'invalid_body' },
      { name: 'status received (not a customer move)', body: { status: 'received' }, status: 400, code: 'invalid_body' },
      { name: 'status pr_opened (not a customer move)', body: { status: 'pr_opened' }, status: 400, code: 'invalid_body' },
      { name: 'status null', body: { status: null }, status: 400, code: 'invalid_body' },
      { name: 'unknown field', body: { status: 'archived', severity: 'high' }, status: 400, code: 'invalid_body' },
      { name: 'only an unknown field', body: { text: 'rewritten' }, status: 400, code: 'invalid_body' },
      { name: 'malformed JSON', raw: '{"status":', status: 400, code: 'invalid_body' },
    ]
    for (const row of rows) {
      const r = await log.call(srv.url, 'PATCH', `/v1/feedback/${itemId}`, { auth: t.key, body: row.body, rawBody: row.raw, headers: row.raw ? { 'content-type': 'application/json' } : {} })
      expect({ name: row.name, status: r.status, code: r.body?.error?.code }).toEqual({ name: row.name, status: row.status, code: row.code })
      if (row.code === 'invalid_body') expectInvalidBody(r)
      else expectEnvelope(r, row.code)
    }
    // None of them changed the item.
    expect((await sk('GET', `/v1/feedback/${itemId}`)).body.status).toBe('awaiting_manual')
  })

  test('archive, then queue: 409 invalid_transition with details.from and details.to', async () => {
    const archived = await sk('PATCH', `/v1/feedback/${itemId}`, { status: 'archived' })
    expect(archived.status).toBe(200)
    expect(archived.body).toEqual({ id: itemId, status: 'archived' })
    const requeue = await sk('PATCH', `/v1/feedback/${itemId}`, { status: 'queued' })
    expect(requeue.status).toBe(409)
    expectEnvelope(requeue, 'invalid_transition')
    expect(requeue.body.error.details).toMatchObject({ from: 'archived', to: 'queued' })
    const again = await sk('PATCH', `/v1/feedback/${itemId}`, { status: 'archived' })
    expect(again.status).toBe(409)
    expect(again.body.error.details).toMatchObject({ from: 'archived', to: 'archived' })
    expect((await sk('GET', `/v1/feedback/${itemId}`)).body.status).toBe('archived')
  })

  test('awaiting_manual → queued is allowed', async () => {
    const r = await submit({ text: 'queue me' })
    await eventually(async () => (await call(srv.url, 'GET', `/v1/feedback/${r.body.id}`, { auth: t.key })).body.status === 'awaiting_manual')
    const q = await sk('PATCH', `/v1/feedback/${r.body.id}`, { status: 'queued' })
    expect(q.status).toBe(200)
    expect(q.body).toEqual({ id: r.body.id, status: 'queued' })
  })
})

describe('envelope and X-Request-Id on every response', () => {
  test('unknown routes and methods get a 4xx envelope with X-Request-Id', async () => {
    for (const [method, path] of [
      ['GET', '/nope'],
      ['GET', '/v1'],
      ['GET', '/v2/feedback'],
      ['DELETE', '/v1/feedback'],
      ['PUT', '/v1/apps'],
      ['POST', '/v1/feedback/upload-url-typo'],
    ]) {
      const r = await log.call(srv.url, method, path, { auth: t.key })
      expect(r.status).toBeGreaterThanOrEqual(400)
      expect(r.status).toBeLessThan(500)
      expectEnvelope(r, r.body.error.code)
      expect(r.headers.get('x-request-id')).toBeTruthy()
    }
    const notFound = await log.call(srv.url, 'GET', '/definitely/not/here')
    expect(notFound.status).toBe(404)
  })

  test('success responses carry X-Request-Id, and each request gets its own', async () => {
    const replies = [await submit({ text: 'rid' }), await sk('GET', '/v1/apps'), await sk('GET', '/v1/feedback?limit=1'), await log.call(srv.url, 'GET', '/healthz')]
    const ids = replies.map((r) => r.headers.get('x-request-id'))
    for (const id of ids) expect(id).toBeTruthy()
    expect(new Set(ids).size).toBe(ids.length)
  })

  test('preflight and 413 responses carry X-Request-Id too', async () => {
    const pre = await log.call(srv.url, 'OPTIONS', '/v1/feedback', { headers: { origin: 'https://x.example', 'access-control-request-method': 'POST' } })
    expect(pre.headers.get('x-request-id')).toBeTruthy()
    const big = await log.call(srv.url, 'POST', '/v1/feedback', { auth: t.pub, rawBody: jsonOfSize(8 * MB + 100), headers: { 'content-type': 'application/json' } })
    expect(big.status).toBe(413)
    expect(big.headers.get('x-request-id')).toBeTruthy()
  })

  test('every reply this suite received was an exact envelope when it was an error', () => {
    expect(log.replies.length).toBeGreaterThan(100)
    for (const { label, reply } of log.replies) {
      if (reply.status < 400) continue
      expect({ label, isEnvelope: reply.body !== undefined && Object.keys(reply.body).join() === 'error' }).toEqual({ label, isEnvelope: true })
      expectEnvelope(reply, reply.body.error.code)
    }
  })
})

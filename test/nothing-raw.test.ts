/**
 * Nothing raw survives (issue 10.3), reproduced as reported: with a backlog (the worker not yet run), a
 * report full of secrets is archived and then merged into a lead. Merging, unmerging, /similar and
 * using it as a lead are refused with 409 not_yet_sanitized until the worker has scrubbed it; once it
 * has, the merge works and neither duplicates[].text, consolidatedText, /similar, the list, the task
 * input nor the database holds a raw value. Reads of a pending report make its preview once, not per
 * request, and only within a budget per request (issue 28.3): a heavy pending report is served pending,
 * and a list of many previews at most the budget's worth, so a read never sanitizes much on the HTTP thread.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, seedTenant, startTestServer, type Tenant, type TestServer } from './harness'
import { T } from './sanitize-fixtures'
import { previews } from '../src/modules/feedback/preview-cache'
import { PREVIEW_BUDGET_CHARS } from '../src/modules/feedback/present'
import { RULES, type Rule } from '../src/sanitize/sanitize'
import { sqliteOf } from './sqlite-of'

const SECRET_TEXT = `Checkout crashes on pay. My key ${T.ghp} and password: correct horse battery staple, mail jane.doe@example.com`
const RAW = [T.ghp, 'correct horse battery staple', 'horse', 'jane.doe@example.com']

let srv: TestServer
let t: Tenant
let raw: string
let lead: string

const post = async (text: string) => {
  const r = await call(srv.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text, url: 'https://shop.example/pay', consoleLogs: [{ level: 'error', message: text, ts: 1 }] } })
  expect(r.status).toBe(201)
  return r.body.id as string
}
const noRaw = (text: string) => RAW.filter((s) => text.includes(s))

beforeAll(async () => {
  srv = await startTestServer({ FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000' }, { worker: { autoStart: false } })
  t = await seedTenant(srv.admin)
  lead = await post('Checkout crashes on pay with a blank page')
  await srv.worker.tick() // the lead is processed; the report below waits in the backlog
  raw = await post(SECRET_TEXT)
  const archived = await call(srv.url, 'PATCH', `/v1/feedback/${raw}`, { auth: t.key, body: { status: 'archived' } })
  expect(archived.status).toBe(200)
})
afterAll(() => srv.close())

describe('a report the worker has not sanitized yet', () => {
  test('merge, unmerge, similar, and use as a lead: 409 not_yet_sanitized with Retry-After', async () => {
    const replies = [
      await call(srv.url, 'POST', `/v1/feedback/${raw}/merge`, { auth: t.key, body: { leadId: lead } }),
      await call(srv.url, 'POST', `/v1/feedback/${lead}/merge`, { auth: t.key, body: { leadId: raw } }),
      await call(srv.url, 'GET', `/v1/feedback/${raw}/similar`, { auth: t.key }),
      await call(srv.url, 'POST', `/v1/feedback/${raw}/unmerge`, { auth: t.key }),
    ]
    for (const r of replies) {
      expect(r.status).toBe(409)
      expect(r.body.error.code).toBe('not_yet_sanitized')
      expect(r.headers.get('retry-after')).toBe('1')
      expect(noRaw(r.text)).toEqual([])
    }
    const leadNow = await call(srv.url, 'GET', `/v1/feedback/${lead}`, { auth: t.key })
    expect(leadNow.body.duplicates).toEqual([])
  })

  test('a read serves a preview made once per version: a second read does not sanitize again', async () => {
    const first = await call(srv.url, 'GET', `/v1/feedback/${raw}`, { auth: t.key })
    expect(first.status).toBe(200)
    expect(noRaw(first.text)).toEqual([])
    const version = (sqliteOf(srv.ctx).query('SELECT version FROM feedback WHERE id = ?').get(raw) as { version: number }).version
    // Cached: asking again must not call the maker.
    expect(() => previews.get(`${raw}:${version}:full`, () => { throw new Error('sanitized again') })).not.toThrow()
    const second = await call(srv.url, 'GET', `/v1/feedback/${raw}`, { auth: t.key })
    expect(second.body).toEqual(first.body)
    const list = await call(srv.url, 'GET', '/v1/feedback?limit=50', { auth: t.key })
    expect(noRaw(list.text)).toEqual([])
    expect(() => previews.get(`${raw}:${version}:list`, () => { throw new Error('sanitized again') })).not.toThrow()
  })
})

describe('reads sanitize within a budget, never a heavy report', () => {
  /** Characters of the texts sanitized while `read` runs (the worker is paused: all of it is the read's). */
  async function sanitizedDuring(read: () => Promise<void>): Promise<number> {
    const probe = RULES[0] as Rule
    const precheck = probe.mayMatch!
    let chars = 0
    probe.mayMatch = (text) => {
      chars += text.length
      return precheck(text)
    }
    try {
      await read()
    } finally {
      probe.mayMatch = precheck
    }
    return chars
  }

  test('a report at every limit is served pending, and nothing of it is sanitized on the read', async () => {
    const consoleLogs = Array.from({ length: 500 }, (_, i) => ({ level: 'log', message: `${SECRET_TEXT} `.repeat(8).slice(0, 1000), ts: i }))
    const r = await call(srv.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: SECRET_TEXT, url: 'https://shop.example/pay', consoleLogs } })
    expect(r.status).toBe(201)
    let one!: Awaited<ReturnType<typeof call>>
    const chars = await sanitizedDuring(async () => {
      one = await call(srv.url, 'GET', `/v1/feedback/${r.body.id}`, { auth: t.key })
    })
    expect(one.status).toBe(200)
    expect(noRaw(one.text)).toEqual([])
    expect(one.body).toMatchObject({ status: 'received', text: '[REDACTED:pending]', url: null, userAgent: null, consoleLogs: [], submissionMeta: null, componentTarget: null, redactions: {} })
    expect(chars).toBe(0)
  })

  test('a list of many pending reports previews at most its budget, and serves the rest pending', async () => {
    const text = `${SECRET_TEXT} `.repeat(60).slice(0, 8000)
    for (let i = 0; i < 8; i++) expect((await call(srv.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: `${i} ${text}` } })).status).toBe(201)
    let list!: Awaited<ReturnType<typeof call>>
    const chars = await sanitizedDuring(async () => {
      list = await call(srv.url, 'GET', '/v1/feedback?limit=100', { auth: t.key })
    })
    expect(noRaw(list.text)).toEqual([])
    expect(chars).toBeLessThanOrEqual(PREVIEW_BUDGET_CHARS * 4) // every rule pass reads the text once: at most MAX_PASSES
    const texts = (list.body.data as { text: string }[]).map((f) => f.text)
    expect(texts.filter((x) => x === '[REDACTED:pending]').length).toBeGreaterThan(0)
    expect(texts.filter((x) => x.includes('[REDACTED:github_token]')).length).toBeGreaterThan(0)
  })
})

describe('once the worker has scrubbed it', () => {
  test('it can be merged, and no served text or stored column holds a raw value', async () => {
    await srv.worker.tick()
    expect((sqliteOf(srv.ctx).query('SELECT redactions FROM feedback WHERE id = ?').get(raw) as { redactions: string | null }).redactions).not.toBeNull()
    const merged = await call(srv.url, 'POST', `/v1/feedback/${raw}/merge`, { auth: t.key, body: { leadId: lead } })
    expect(merged.status).toBe(200)
    const leadNow = await call(srv.url, 'GET', `/v1/feedback/${lead}`, { auth: t.key })
    expect(leadNow.body.duplicates.map((d: { id: string }) => d.id)).toEqual([raw])
    expect(leadNow.body.duplicates[0].text).toContain('[REDACTED:')
    expect(leadNow.body.consolidatedText).toContain('[REDACTED:')
    const similar = await call(srv.url, 'GET', `/v1/feedback/${lead}/similar`, { auth: t.key })
    expect(similar.status).toBe(200)
    for (const text of [leadNow.text, similar.text, (await call(srv.url, 'GET', '/v1/feedback?includeDuplicates=true', { auth: t.key })).text]) expect(noRaw(text)).toEqual([])
    const rows = JSON.stringify(sqliteOf(srv.ctx).query('SELECT * FROM feedback').all())
    expect(noRaw(rows)).toEqual([])
  })
})

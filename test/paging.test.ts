/**
 * GET /v1/feedback cursor paging (spec 4.4) over a few hundred real submissions: no gaps, no repeats,
 * newest first, nextCursor null on the last page; filters by status and App; duplicates hidden by default.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, seedTenant, startTestServer, type Tenant, type TestServer } from './harness'
import { forceStatusIn, markDuplicateIn, submit } from './helpers-lifecycle'

let srv: TestServer
let t: Tenant
let appB: { id: string; publicKey: string }
let stranger: Tenant

interface Made {
  id: string
  appId: string
  status: string
  duplicate: boolean
}
/** In submission order (oldest first). */
const made: Made[] = []

beforeAll(async () => {
  srv = await startTestServer({ FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000' }, { worker: { autoStart: false } })
  t = await seedTenant(srv.admin)
  appB = await srv.admin.createApp(t.orgId, { name: 'Second App' })
  stranger = await seedTenant(srv.admin, {}, 'Stranger')
  await submit(srv.url, stranger.pub, { text: 'another Org' })

  // 237 reports, one after another so their order is known: every fifth goes to the second App.
  for (let i = 0; i < 237; i++) {
    const app = i % 5 === 4 ? { id: appB.id, pub: appB.publicKey } : { id: t.appId, pub: t.pub }
    const r = await submit(srv.url, app.pub, { text: `report number ${i}` })
    expect(r.status).toBe(201)
    made.push({ id: r.body.id, appId: app.id, status: 'received', duplicate: false })
  }
  // A mix of statuses, as the worker and customers would leave them.
  for (const [i, m] of made.entries()) {
    const status = i % 7 === 0 ? 'archived' : i % 3 === 0 ? 'awaiting_manual' : i % 11 === 0 ? 'failed' : null
    if (status) (await forceStatusIn(srv.ctx, m.id, status), (m.status = status))
  }
  // Twelve clustered duplicates, each pointing at the report before it.
  for (let i = 10; i < 130; i += 10) {
    await markDuplicateIn(srv.ctx, made[i].id, made[i - 1].id)
    made[i].duplicate = true
  }
})
afterAll(() => srv.close())

async function page(query: Record<string, string | number | boolean>, key = t.key) {
  const qs = new URLSearchParams(Object.entries(query).map(([k, v]): [string, string] => [k, String(v)])).toString()
  return call(srv.url, 'GET', `/v1/feedback${qs ? `?${qs}` : ''}`, { auth: key })
}

/** Follows cursors to the end, checking the shape of every page on the way. */
async function pageAll(query: Record<string, string | number | boolean>, limit: number): Promise<any[]> {
  const all: any[] = []
  let cursor: string | null = null
  for (let pages = 0; pages < 1000; pages++) {
    const r = await page({ ...query, limit, ...(cursor ? { cursor } : {}) })
    expect(r.status).toBe(200)
    const { data, nextCursor } = r.body
    expect(data.length).toBeLessThanOrEqual(limit)
    all.push(...data)
    if (nextCursor === null) return all
    // A cursor is only handed out on a full page, and it is that page's last id.
    expect(data.length).toBe(limit)
    expect(nextCursor).toBe(data[data.length - 1].id)
    cursor = nextCursor
  }
  throw new Error('paging did not end')
}

const newestFirst = (items: Made[]) => items.map((m) => m.id).reverse()

function expectNewestFirst(items: any[]): void {
  for (let i = 1; i < items.length; i++) {
    expect(items[i - 1].id > items[i].id).toBe(true)
    expect(Date.parse(items[i - 1].createdAt)).toBeGreaterThanOrEqual(Date.parse(items[i].createdAt))
  }
}

describe('cursor paging', () => {
  for (const limit of [50, 17, 100, 1]) {
    test(`limit ${limit}: every non-duplicate report exactly once, newest first`, async () => {
      const items = await pageAll({}, limit)
      const expected = newestFirst(made.filter((m) => !m.duplicate))
      expect(items.map((i) => i.id)).toEqual(expected)
      expect(new Set(items.map((i) => i.id)).size).toBe(items.length)
      expectNewestFirst(items)
      expect(items.every((i) => i.duplicateOfId === null)).toBe(true)
    })
  }

  test('default limit is 50; the first page carries a cursor', async () => {
    const r = await page({})
    expect(r.status).toBe(200)
    expect(r.body.data).toHaveLength(50)
    expect(r.body.data[0].id).toBe(made[made.length - 1].id)
    expect(r.body.nextCursor).toBe(r.body.data[49].id)
  })

  test('an exactly full last page has nextCursor null (no empty page after it)', async () => {
    const inB = made.filter((m) => m.appId === appB.id && !m.duplicate)
    const r = await page({ appId: appB.id, limit: inB.length })
    expect(r.body.data.map((i: any) => i.id)).toEqual(newestFirst(inB))
    expect(r.body.nextCursor).toBeNull()
  })

  test('reports arriving mid-paging neither repeat nor push older ones out', async () => {
    const first = await page({ limit: 40 })
    for (let i = 0; i < 5; i++) expect((await submit(srv.url, t.pub, { text: `late ${i}` })).status).toBe(201)
    const rest: any[] = []
    let cursor = first.body.nextCursor
    while (cursor) {
      const r = await page({ limit: 40, cursor })
      rest.push(...r.body.data)
      cursor = r.body.nextCursor
    }
    const ids = [...first.body.data, ...rest].map((i: any) => i.id)
    expect(ids).toEqual(newestFirst(made.filter((m) => !m.duplicate)))
    // The late ones show up on a fresh first page.
    const fresh = await page({ limit: 5 })
    expect(fresh.body.data.map((i: any) => i.text)).toEqual(['late 4', 'late 3', 'late 2', 'late 1', 'late 0'])
    // From here on they are part of the fixture.
    for (const i of [...fresh.body.data].reverse()) made.push({ id: i.id, appId: t.appId, status: 'received', duplicate: false })
  })
})

describe('filters', () => {
  for (const status of ['awaiting_manual', 'archived', 'received', 'failed']) {
    test(`status=${status} (limit 17)`, async () => {
      const items = await pageAll({ status }, 17)
      expect(items.length).toBeGreaterThan(0)
      expect(items.map((i) => i.id)).toEqual(newestFirst(made.filter((m) => m.status === status && !m.duplicate)))
      expect(items.every((i) => i.status === status)).toBe(true)
    })
  }

  test('a status no item has: empty page, nextCursor null', async () => {
    const r = await page({ status: 'pr_opened' })
    expect(r.body).toEqual({ data: [], nextCursor: null })
  })

  test('appId restricts to one App; with status too', async () => {
    const a = await pageAll({ appId: t.appId }, 50)
    expect(a.map((i) => i.id)).toEqual(newestFirst(made.filter((m) => m.appId === t.appId && !m.duplicate)))
    const b = await pageAll({ appId: appB.id }, 7)
    expect(b.map((i) => i.id)).toEqual(newestFirst(made.filter((m) => m.appId === appB.id && !m.duplicate)))
    expect(b.every((i) => i.appId === appB.id)).toBe(true)
    const bArchived = await pageAll({ appId: appB.id, status: 'archived' }, 3)
    expect(bArchived.map((i) => i.id)).toEqual(newestFirst(made.filter((m) => m.appId === appB.id && m.status === 'archived' && !m.duplicate)))
  })

  test('includeDuplicates=true shows the duplicate rows; the default and false hide them', async () => {
    const withDups = await pageAll({ includeDuplicates: true }, 100)
    const dupIds = made.filter((m) => m.duplicate).map((m) => m.id)
    expect(dupIds.length).toBe(12)
    const listed = withDups.map((i) => i.id).filter((id) => made.some((m) => m.id === id))
    expect(listed).toEqual(newestFirst(made))
    const shown = withDups.filter((i) => dupIds.includes(i.id))
    expect(shown).toHaveLength(12)
    expect(shown.every((i) => typeof i.duplicateOfId === 'string')).toBe(true)
    const hidden = await pageAll({ includeDuplicates: false }, 100)
    expect(hidden.some((i) => dupIds.includes(i.id))).toBe(false)
    expect(hidden.length).toBe(made.length - 12)
    // A lead counts its duplicates.
    const lead = withDups.find((i) => i.id === made[9].id)
    expect(lead.duplicateCount).toBe(1)
  })

  test('another Org sees none of these, and cannot filter on this Org\'s App', async () => {
    const mine = await pageAll({}, 100)
    const theirs = await page({ limit: 100 }, stranger.key)
    expect(theirs.body.data).toHaveLength(1)
    expect(mine.some((i) => i.id === theirs.body.data[0].id)).toBe(false)
    const cross = await page({ appId: t.appId }, stranger.key)
    expect(cross.status).toBe(404)
    expect(cross.body.error.code).toBe('app_not_found')
  })
})

describe('query validation', () => {
  const bad: [string, Record<string, string>][] = [
    ['limit 0', { limit: '0' }],
    ['limit 101', { limit: '101' }],
    ['limit not a number', { limit: 'abc' }],
    ['limit not an integer', { limit: '1.5' }],
    ['cursor not an id', { cursor: 'xyz' }],
    ['unknown status', { status: 'done' }],
    ['appId not an id', { appId: '123' }],
    ['includeDuplicates not boolean', { includeDuplicates: 'maybe' }],
    ['unknown parameter', { sort: 'asc' }],
  ]
  for (const [name, query] of bad) {
    test(`${name} → 400 invalid_body`, async () => {
      const r = await page(query)
      expect(r.status).toBe(400)
      expect(r.body.error.code).toBe('invalid_body')
    })
  }
})

/**
 * Near-duplicate clustering end to end: automatic attachment to the root lead, the spec's lead fields,
 * hidden duplicates, PATCH on a duplicate, triage by hand (similar, merge, unmerge) and batch windows
 * driven by an injected clock.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, seedTenant, startTestServer, type Tenant, type TestServer } from './harness'
import { ManualClock } from '../src/core/clock'
import { forceStatusIn } from './helpers-lifecycle'
import { dbRun } from './sqlite-of'

// A new App merges automatically only near-verbatim repeats (docs/triage.md "When a report is merged
// automatically"); looser paraphrases are suggested to a person instead.
const PARAPHRASES = [
  'The checkout button does nothing when I click it on the payment page.',
  'The checkout button does nothing when I click it on the payment page. Thanks!',
  'The checkout button does nothing when I click it on the payment page. Seen in Firefox.',
]
const UNRELATED = 'My invoice PDF downloads as an empty file from the billing settings.'

async function submit(srv: TestServer, t: Tenant, text: string, extra: Record<string, unknown> = {}): Promise<string> {
  const r = await call(srv.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text, url: 'https://shop.example/checkout/payment', ...extra } })
  expect(r.status).toBe(201)
  return r.body.id
}

const get = (srv: TestServer, t: Tenant, id: string) => call(srv.url, 'GET', `/v1/feedback/${id}`, { auth: t.key })

describe('automatic clustering', () => {
  let srv: TestServer
  let t: Tenant
  const clock = new ManualClock()
  beforeAll(async () => {
    srv = await startTestServer({}, { clock, worker: { autoStart: false } })
    t = await seedTenant(srv.admin)
  })
  afterAll(() => srv.close())

  let lead: string
  let dups: string[]
  let unrelated: string

  test('three paraphrased reports and one unrelated → one lead with two duplicates, the unrelated one alone', async () => {
    lead = await submit(srv, t, PARAPHRASES[0], { identity: { email: 'ana@example.com', name: 'Ana' } })
    await srv.worker.tick()
    clock.advance(1000)
    dups = [await submit(srv, t, PARAPHRASES[1]), await submit(srv, t, PARAPHRASES[2])]
    unrelated = await submit(srv, t, UNRELATED)
    await srv.worker.tick()

    const l = (await get(srv, t, lead)).body
    expect(l.duplicateOfId).toBeNull()
    expect(l.status).toBe('awaiting_manual')
    expect(l.duplicateCount).toBe(2)
    expect(typeof l.lastDuplicateAt).toBe('string')
    expect(l.theme.length).toBeGreaterThan(0)
    expect(l.theme.length).toBeLessThanOrEqual(80)
    expect(l.consolidatedText.startsWith(PARAPHRASES[0])).toBe(true)
    expect(l.consolidatedText).toContain('Firefox') // a distinct detail of a duplicate
    expect(l.consolidatedText.length).toBeLessThanOrEqual(8192)
    expect(l.duplicates.map((d: { id: string }) => d.id).sort()).toEqual([...dups].sort())
    for (const d of l.duplicates) {
      expect(typeof d.text).toBe('string')
      expect(d.submittedBy.mode).toBe('public')
      expect(typeof d.createdAt).toBe('string')
    }
    for (const id of dups) {
      const d = (await get(srv, t, id)).body
      expect(d.duplicateOfId).toBe(lead)
      // A duplicate takes no further lifecycle steps of its own.
      expect(d.status).toBe('sanitized')
      expect(d.theme).toBeNull()
    }
    const u = (await get(srv, t, unrelated)).body
    expect(u.duplicateOfId).toBeNull()
    expect(u.duplicateCount).toBe(0)
    expect(u.status).toBe('awaiting_manual')
  })

  test('the list hides duplicates unless includeDuplicates=true', async () => {
    const hidden = (await call(srv.url, 'GET', '/v1/feedback', { auth: t.key })).body.data.map((i: { id: string }) => i.id)
    expect(hidden).toContain(lead)
    expect(hidden).toContain(unrelated)
    for (const id of dups) expect(hidden).not.toContain(id)
    const all = (await call(srv.url, 'GET', '/v1/feedback?includeDuplicates=true', { auth: t.key })).body.data.map((i: { id: string }) => i.id)
    for (const id of dups) expect(all).toContain(id)
  })

  test('PATCH on a duplicate → 409 invalid_target with the lead', async () => {
    const r = await call(srv.url, 'PATCH', `/v1/feedback/${dups[0]}`, { auth: t.key, body: { status: 'archived' } })
    expect(r.status).toBe(409)
    expect(r.body.error.code).toBe('invalid_target')
    expect(r.body.error.details.leadFeedbackId).toBe(lead)
  })

  test('a new duplicate attaches to the root lead, never to a duplicate', async () => {
    const another = await submit(srv, t, 'Hello, the checkout button does nothing when I click it on the payment page.')
    await srv.worker.tick()
    expect((await get(srv, t, another)).body.duplicateOfId).toBe(lead)
    expect((await get(srv, t, lead)).body.duplicateCount).toBe(3)
  })

  test('the same template with another version is not merged', async () => {
    const a = await submit(srv, t, 'App 2.3.1 crashes when uploading an avatar from the profile page.', { url: 'https://shop.example/profile' })
    await srv.worker.tick()
    const b = await submit(srv, t, 'App 2.4.0 crashes when uploading an avatar from the profile page.', { url: 'https://shop.example/profile' })
    await srv.worker.tick()
    expect((await get(srv, t, b)).body.duplicateOfId).toBeNull()
    expect((await get(srv, t, a)).body.duplicateCount).toBe(0)
  })

  test('an archived lead attracts no new duplicates: a new report starts a new lead', async () => {
    const first = await submit(srv, t, 'The newsletter signup form shows a spinner forever after pressing subscribe.', { url: 'https://shop.example/news' })
    await srv.worker.tick()
    expect((await call(srv.url, 'PATCH', `/v1/feedback/${first}`, { auth: t.key, body: { status: 'archived' } })).status).toBe(200)
    const again = await submit(srv, t, 'The newsletter signup form shows a spinner forever after pressing subscribe!!', { url: 'https://shop.example/news' })
    await srv.worker.tick()
    const r = (await get(srv, t, again)).body
    expect(r.duplicateOfId).toBeNull()
    expect(r.status).toBe('awaiting_manual')
  })

  test('a queued lead still attracts duplicates', async () => {
    const first = await submit(srv, t, 'Changing the shipping country resets the whole cart to empty.', { url: 'https://shop.example/cart' })
    await srv.worker.tick()
    expect((await call(srv.url, 'PATCH', `/v1/feedback/${first}`, { auth: t.key, body: { status: 'queued' } })).status).toBe(200)
    const again = await submit(srv, t, 'Hi, changing the shipping country resets the whole cart to empty. Please fix.', { url: 'https://shop.example/cart' })
    await srv.worker.tick()
    expect((await get(srv, t, again)).body.duplicateOfId).toBe(first)
  })

  test('reports of another App are never candidates', async () => {
    const other = await seedTenant(srv.admin, {}, 'Other')
    const id = await submit(srv, other, PARAPHRASES[0])
    await srv.worker.tick()
    expect((await call(srv.url, 'GET', `/v1/feedback/${id}`, { auth: other.key })).body.duplicateOfId).toBeNull()
    const similar = await call(srv.url, 'GET', `/v1/feedback/${id}/similar`, { auth: other.key })
    expect(similar.body.data).toEqual([])
  })
})

describe('triage by hand', () => {
  let srv: TestServer
  let t: Tenant
  beforeAll(async () => {
    srv = await startTestServer({}, { worker: { autoStart: false } })
    t = await seedTenant(srv.admin)
  })
  afterAll(() => srv.close())

  test('GET /similar lists the closest reports of the App, best first, with scores in 0..1', async () => {
    const ids = [await submit(srv, t, PARAPHRASES[0])]
    await srv.worker.tick()
    ids.push(await submit(srv, t, PARAPHRASES[1]), await submit(srv, t, UNRELATED))
    await srv.worker.tick()
    const r = await call(srv.url, 'GET', `/v1/feedback/${ids[0]}/similar`, { auth: t.key })
    expect(r.status).toBe(200)
    expect(r.body.data[0].id).toBe(ids[1])
    expect(r.body.data[0].duplicateOfId).toBe(ids[0])
    const scores = r.body.data.map((d: { score: number }) => d.score)
    expect([...scores].sort((a, b) => b - a)).toEqual(scores)
    for (const d of r.body.data) {
      expect(d.score).toBeGreaterThanOrEqual(0)
      expect(d.score).toBeLessThanOrEqual(1)
      expect(Object.keys(d).sort()).toEqual(['duplicateOfId', 'id', 'score', 'text'])
      expect(d.id).not.toBe(ids[0])
    }
    expect((await call(srv.url, 'GET', `/v1/feedback/${ids[0]}/similar?limit=1`, { auth: t.key })).body.data.length).toBe(1)
    for (const bad of ['0', '51', 'x']) {
      expect((await call(srv.url, 'GET', `/v1/feedback/${ids[0]}/similar?limit=${bad}`, { auth: t.key })).body.error.code).toBe('invalid_body')
    }
    expect((await call(srv.url, 'GET', '/v1/feedback/zz/similar', { auth: t.key })).body.error.code).toBe('invalid_id')
    const stranger = await seedTenant(srv.admin, {}, 'Stranger')
    expect((await call(srv.url, 'GET', `/v1/feedback/${ids[0]}/similar`, { auth: stranger.key })).status).toBe(404)
  })

  test('merge: a lead with duplicates merged into another lead brings them along (no chains)', async () => {
    const a = await submit(srv, t, 'Search on the help center returns nothing for any word.', { url: 'https://shop.example/help' })
    await srv.worker.tick()
    const a2 = await submit(srv, t, 'Hi, search on the help center returns nothing for any word. Thanks', { url: 'https://shop.example/help' })
    await srv.worker.tick()
    expect((await get(srv, t, a2)).body.duplicateOfId).toBe(a)
    const b = await submit(srv, t, 'FAQ search is empty whatever I type', { url: 'https://shop.example/faq' })
    await srv.worker.tick()
    expect((await get(srv, t, b)).body.duplicateOfId).toBeNull()

    const r = await call(srv.url, 'POST', `/v1/feedback/${a}/merge`, { auth: t.key, body: { leadId: b } })
    expect(r.status).toBe(200)
    expect(r.body.id).toBe(a)
    expect(r.body.duplicateOfId).toBe(b)
    expect(r.body.duplicateCount).toBe(0)
    expect((await get(srv, t, a2)).body.duplicateOfId).toBe(b)
    const lead = (await get(srv, t, b)).body
    expect(lead.duplicateCount).toBe(2)
    expect(lead.duplicates.map((d: { id: string }) => d.id).sort()).toEqual([a, a2].sort())

    // Into a duplicate: refused, naming the lead to act on.
    const c = await submit(srv, t, 'Order tracking link in the shipping mail is dead.', { url: 'https://shop.example/track' })
    await srv.worker.tick()
    const into = await call(srv.url, 'POST', `/v1/feedback/${c}/merge`, { auth: t.key, body: { leadId: a2 } })
    expect(into.status).toBe(409)
    expect(into.body.error.code).toBe('invalid_target')
    expect(into.body.error.details.leadFeedbackId).toBe(b)
    // Into itself, into another App, unknown fields, unknown lead.
    expect((await call(srv.url, 'POST', `/v1/feedback/${c}/merge`, { auth: t.key, body: { leadId: c } })).body.error.code).toBe('invalid_body')
    expect((await call(srv.url, 'POST', `/v1/feedback/${c}/merge`, { auth: t.key, body: { leadId: b, x: 1 } })).body.error.code).toBe('invalid_body')
    expect((await call(srv.url, 'POST', `/v1/feedback/${c}/merge`, { auth: t.key, body: { leadId: '0'.repeat(24) } })).status).toBe(404)
    const app2 = await srv.admin.createApp(t.orgId, { name: 'Second App' })
    const foreign = (await call(srv.url, 'POST', '/v1/feedback', { auth: app2.publicKey, body: { text: 'Totally other app report about the calendar.' } })).body.id
    await srv.worker.tick()
    expect((await call(srv.url, 'POST', `/v1/feedback/${c}/merge`, { auth: t.key, body: { leadId: foreign } })).body.error.code).toBe('invalid_body')
    // Other Org's key: 404, not 403.
    const stranger = await seedTenant(srv.admin, {}, 'Stranger2')
    expect((await call(srv.url, 'POST', `/v1/feedback/${c}/merge`, { auth: stranger.key, body: { leadId: b } })).status).toBe(404)
  })

  test("a duplicate shows its lead's pull request however and whenever it joins (automatic, by hand); an unmerge takes it away (issue 36.3)", async () => {
    const lead = await submit(srv, t, 'Coupon field rejects every code at checkout.', { url: 'https://shop.example/cart' })
    await srv.worker.tick()
    // The lead's run opened its pull request before anything joined.
    await forceStatusIn(srv.ctx, lead, 'pr_opened')
    await dbRun(srv.ctx, "UPDATE feedback SET merge_request_url = 'https://git.example/shop/pulls/36' WHERE id = ?", [lead])
    const auto = await submit(srv, t, 'Hi! Coupon field rejects every code at checkout.', { url: 'https://shop.example/cart' })
    await srv.worker.tick()
    expect((await get(srv, t, auto)).body).toMatchObject({ duplicateOfId: lead, mergeRequestUrl: 'https://git.example/shop/pulls/36' })
    const byHand = await submit(srv, t, 'Gift card balance page shows zero after top-up.', { url: 'https://shop.example/gift' })
    await srv.worker.tick()
    expect((await get(srv, t, byHand)).body.mergeRequestUrl).toBeNull()
    const merged = await call(srv.url, 'POST', `/v1/feedback/${byHand}/merge`, { auth: t.key, body: { leadId: lead } })
    expect(merged.body).toMatchObject({ duplicateOfId: lead, mergeRequestUrl: 'https://git.example/shop/pulls/36' })
    const un = await call(srv.url, 'POST', `/v1/feedback/${byHand}/unmerge`, { auth: t.key })
    expect(un.body).toMatchObject({ duplicateOfId: null, mergeRequestUrl: null })
  })

  test('unmerge: the duplicate becomes a lead, resumes its lifecycle, and is not clustered again', async () => {
    const lead = await submit(srv, t, 'Wishlist heart icon does not save the product on mobile.', { url: 'https://shop.example/p/1' })
    await srv.worker.tick()
    const dup = await submit(srv, t, 'Hello! Wishlist heart icon does not save the product on mobile.', { url: 'https://shop.example/p/1' })
    await srv.worker.tick()
    expect((await get(srv, t, dup)).body.duplicateOfId).toBe(lead)

    const r = await call(srv.url, 'POST', `/v1/feedback/${dup}/unmerge`, { auth: t.key })
    expect(r.status).toBe(200)
    expect(r.body.duplicateOfId).toBeNull()
    expect((await get(srv, t, lead)).body.duplicateCount).toBe(0)
    await srv.worker.tick()
    const after = (await get(srv, t, dup)).body
    expect(after.duplicateOfId).toBeNull()
    expect(after.status).toBe('awaiting_manual')

    const again = await call(srv.url, 'POST', `/v1/feedback/${dup}/unmerge`, { auth: t.key })
    expect(again.status).toBe(409)
    expect(again.body.error.code).toBe('not_a_duplicate')
  })
})

describe('batch windows', () => {
  test('leads wait for the window to close, then each moves on once; duplicates stay with their lead', async () => {
    const clock = new ManualClock()
    const srv = await startTestServer({}, { clock, worker: { autoStart: false } })
    try {
      const t = await seedTenant(srv.admin, { batchEnabled: true, batchWindowHours: 2, processingMode: 'auto_pr' })
      const lead = await submit(srv, t, PARAPHRASES[0])
      await srv.worker.tick()
      const dup = await submit(srv, t, PARAPHRASES[1])
      const other = await submit(srv, t, UNRELATED)
      await srv.worker.tick()
      expect((await get(srv, t, lead)).body.status).toBe('sanitized')
      expect((await get(srv, t, other)).body.status).toBe('sanitized')
      expect((await get(srv, t, dup)).body.duplicateOfId).toBe(lead)
      // The held lead says why and until when; its duplicate follows the lead and says nothing.
      const closesAt = new Date(clock.now() + 2 * 3600_000).toISOString()
      expect((await get(srv, t, lead)).body.statusReason).toBe(`held in the App's batch window until ${closesAt}; then it moves on with its cluster`)
      expect((await get(srv, t, dup)).body.statusReason).toBeNull()

      clock.advance(2 * 3600_000 - 1000)
      await srv.worker.tick()
      expect((await get(srv, t, lead)).body.status).toBe('sanitized')

      clock.advance(1000)
      await srv.worker.tick()
      expect((await get(srv, t, lead)).body.status).toBe('queued')
      expect((await get(srv, t, other)).body.status).toBe('queued')
      expect((await get(srv, t, dup)).body.status).toBe('sanitized')
      expect((await get(srv, t, lead)).body.duplicateCount).toBe(1)

      // A report after the window closed opens a new window.
      const late = await submit(srv, t, 'The size guide popup cannot be closed on small phones.')
      await srv.worker.tick()
      expect((await get(srv, t, late)).body.status).toBe('sanitized')
      clock.advance(2 * 3600_000)
      await srv.worker.tick()
      expect((await get(srv, t, late)).body.status).toBe('queued')
    } finally {
      await srv.close()
    }
  })

  test('without batching each lead moves on as soon as it is sanitized', async () => {
    const srv = await startTestServer({}, { worker: { autoStart: false } })
    try {
      const t = await seedTenant(srv.admin, { processingMode: 'auto_pr' })
      const id = await submit(srv, t, UNRELATED)
      await srv.worker.tick()
      expect((await get(srv, t, id)).body.status).toBe('queued')
    } finally {
      await srv.close()
    }
  })
})

describe('duplicate suggestions over HTTP', () => {
  let srv: TestServer
  let t: Tenant
  beforeAll(async () => {
    srv = await startTestServer({}, { worker: { autoStart: false } })
    t = await seedTenant(srv.admin)
  })
  afterAll(() => srv.close())

  const LEAD = 'The checkout button does nothing when I click it on the payment page.'
  /** Close to LEAD, below a new App's merge bar: suggested, not merged. */
  const NEAR = 'The checkout button is slow when I click it on the payment page, it takes ten seconds.'
  const post = (path: string, body?: unknown, auth = t.key) => call(srv.url, 'POST', path, { auth, body })

  /** A fresh lead and a report suggested as its duplicate (each pair in its own App: no cross-talk). */
  async function pair(): Promise<{ lead: string; near: string; app: { id: string; publicKey: string } }> {
    const app = await srv.admin.createApp(t.orgId, { name: `App ${Math.random()}` })
    const send = async (text: string) => (await call(srv.url, 'POST', '/v1/feedback', { auth: app.publicKey, body: { text, url: 'https://shop.example/checkout/payment' } })).body.id as string
    const lead = await send(LEAD)
    await srv.worker.tick()
    const near = await send(NEAR)
    await srv.worker.tick()
    return { lead, near, app }
  }

  test('a suggested report: suggestedDuplicateOf {id, score, reason} in the item and the list; null on the lead; duplicateMatch null on leads', async () => {
    const { lead, near, app } = await pair()
    const item = (await get(srv, t, near)).body
    expect(item.duplicateOfId).toBeNull()
    expect(Object.keys(item.suggestedDuplicateOf).sort()).toEqual(['id', 'reason', 'score'])
    expect(item.suggestedDuplicateOf.id).toBe(lead)
    expect(item.suggestedDuplicateOf.score).toBeGreaterThan(0)
    expect(item.suggestedDuplicateOf.score).toBeLessThan(1)
    expect(item.suggestedDuplicateOf.reason).toMatch(/< merge bar/)
    expect(item.duplicateMatch).toBeNull()
    expect((await get(srv, t, lead)).body.suggestedDuplicateOf).toBeNull()
    const listed = (await call(srv.url, 'GET', `/v1/feedback?appId=${app.id}`, { auth: t.key })).body.data
    expect(listed.find((i: { id: string }) => i.id === near).suggestedDuplicateOf).toEqual(item.suggestedDuplicateOf)
    expect(listed.find((i: { id: string }) => i.id === lead).suggestedDuplicateOf).toBeNull()
    // The event carries ids and the score, never the reason (it may quote the reports' words).
    const events = (await call(srv.url, 'GET', `/v1/events?after=0&limit=500&types=feedback.duplicate_suggested&appId=${app.id}`, { auth: t.key })).body.data
    expect(events.map((e: { data: unknown }) => e.data)).toEqual([{ feedbackId: near, leadFeedbackId: lead, score: item.suggestedDuplicateOf.score }])
  })

  test('an automatic duplicate serves duplicateMatch {automatic: true, score, reason}', async () => {
    const { lead, app } = await pair()
    const dup = (await call(srv.url, 'POST', '/v1/feedback', { auth: app.publicKey, body: { text: LEAD, url: 'https://shop.example/checkout/payment' } })).body.id
    await srv.worker.tick()
    const item = (await get(srv, t, dup)).body
    expect(item.duplicateOfId).toBe(lead)
    expect(item.duplicateMatch.automatic).toBe(true)
    expect(item.duplicateMatch.score).toBeGreaterThan(0.5)
    expect(item.duplicateMatch.reason).toMatch(/similarity/)
    expect(item.suggestedDuplicateOf).toBeNull()
  })

  test('confirm: merge into the suggested lead → 200, suggestion gone, duplicateMatch of a merge by hand with the suggestion\'s score', async () => {
    const { lead, near } = await pair()
    const score = (await get(srv, t, near)).body.suggestedDuplicateOf.score
    const r = await post(`/v1/feedback/${near}/merge`, { leadId: lead })
    expect(r.status).toBe(200)
    expect(r.body.duplicateOfId).toBe(lead)
    expect(r.body.suggestedDuplicateOf).toBeNull()
    expect(r.body.duplicateMatch).toEqual({ automatic: false, score, reason: 'confirmed suggestion' })
  })

  test('reject: 200 the item with suggestedDuplicateOf null; again: 200 unchanged; the App\'s decisions count it', async () => {
    const { near, app } = await pair()
    const r = await post(`/v1/feedback/${near}/reject-suggestion`)
    expect(r.status).toBe(200)
    expect(r.body.id).toBe(near)
    expect(r.body.suggestedDuplicateOf).toBeNull()
    const again = await post(`/v1/feedback/${near}/reject-suggestion`)
    expect(again.status).toBe(200)
    expect(again.body.suggestedDuplicateOf).toBeNull()
    const state = await call(srv.url, 'GET', `/v1/apps/${app.id}/triage`, { auth: t.key })
    expect(state.status).toBe(200)
    expect(state.body.learned.decisions).toEqual({ confirmed: 0, rejected: 1, unmerged: 0 })
    expect(state.body.bars.merge).toBeGreaterThan(state.body.bars.suggest)
  })

  test('a stale suggestion: its lead merged into another lead shows that lead; archived, or merged into the report itself, shows none', async () => {
    const merged = await pair()
    const other = (await call(srv.url, 'POST', '/v1/feedback', { auth: merged.app.publicKey, body: { text: 'Invoices PDF export is empty for every customer.' } })).body.id
    await srv.worker.tick()
    expect((await post(`/v1/feedback/${merged.lead}/merge`, { leadId: other })).status).toBe(200)
    expect((await get(srv, t, merged.near)).body.suggestedDuplicateOf.id).toBe(other)
    // Confirming what is shown works on the lead shown.
    const confirmed = await post(`/v1/feedback/${merged.near}/merge`, { leadId: other })
    expect(confirmed.body.duplicateMatch.reason).toBe('confirmed suggestion')

    const archived = await pair()
    expect((await call(srv.url, 'PATCH', `/v1/feedback/${archived.lead}`, { auth: t.key, body: { status: 'archived' } })).status).toBe(200)
    expect((await get(srv, t, archived.near)).body.suggestedDuplicateOf).toBeNull()

    const self = await pair()
    expect((await post(`/v1/feedback/${self.lead}/merge`, { leadId: self.near })).status).toBe(200)
    expect((await get(srv, t, self.near)).body.suggestedDuplicateOf).toBeNull()
  })

  test('reject-suggestion refuses what it must: bad id, another Org\'s report (404), a report not sanitized yet (409), junk bodies and queries', async () => {
    const { near, app } = await pair()
    expect((await post('/v1/feedback/zz/reject-suggestion')).body.error.code).toBe('invalid_id')
    expect((await post(`/v1/feedback/${'0'.repeat(24)}/reject-suggestion`)).status).toBe(404)
    const stranger = await seedTenant(srv.admin, {}, 'Stranger3')
    const foreign = await post(`/v1/feedback/${near}/reject-suggestion`, undefined, stranger.key)
    expect(foreign.status).toBe(404)
    expect((await get(srv, t, near)).body.suggestedDuplicateOf).not.toBeNull()
    const raw = (await call(srv.url, 'POST', '/v1/feedback', { auth: app.publicKey, body: { text: 'Not sanitized yet: the map does not load.' } })).body.id
    const early = await post(`/v1/feedback/${raw}/reject-suggestion`)
    expect(early.status).toBe(409)
    expect(early.body.error.code).toBe('not_yet_sanitized')
    // Junk: deep nesting, huge values, junk query parameters. Never a 5xx; the suggestion stays unless the call is valid.
    let deep: unknown = 1
    for (let i = 0; i < 5000; i++) deep = [deep]
    const junk = [
      await call(srv.url, 'POST', `/v1/feedback/${near}/reject-suggestion`, { auth: t.key, rawBody: JSON.stringify(deep), headers: { 'content-type': 'application/json' } }),
      await call(srv.url, 'POST', `/v1/feedback/${near}/reject-suggestion`, { auth: t.key, rawBody: '{"a":' + '9'.repeat(100_000) + '}', headers: { 'content-type': 'application/json' } }),
      await call(srv.url, 'POST', `/v1/feedback/${near}/reject-suggestion`, { auth: t.key, rawBody: '{not json', headers: { 'content-type': 'application/json' } }),
      await call(srv.url, 'POST', `/v1/feedback/${near}/reject-suggestion?limit=${'9'.repeat(5000)}&x[y][z]=1`, { auth: t.key }),
      await call(srv.url, 'POST', `/v1/feedback/${'f'.repeat(10_000)}/reject-suggestion`, { auth: t.key }),
      await call(srv.url, 'GET', `/v1/apps/${app.id}/triage?x=${'%00'.repeat(1000)}`, { auth: t.key }),
      await call(srv.url, 'GET', `/v1/apps/${'0'.repeat(24)}/triage`, { auth: t.key }),
      await call(srv.url, 'GET', `/v1/apps/${app.id}/triage`, { auth: stranger.key }),
    ]
    for (const r of junk) {
      expect(r.status).toBeGreaterThanOrEqual(200)
      expect(r.status).toBeLessThan(500)
      if (r.status >= 400) expect(typeof r.body.error.code).toBe('string')
    }
    expect(junk[6].body.error.code).toBe('app_not_found')
    expect(junk[7].status).toBe(404)
  })
})

/**
 * Merges by hand racing each other (found by an attack on the API: four concurrent merges among three
 * reports). Triage by hand checked that the lead was still a lead before the merge's transaction, so
 * "a into b" and "b into a" sent together both passed, and the second moved the first's duplicate into
 * itself: a report whose duplicateOfId was its own id, counted as its own duplicate, hidden from the list
 * and refused every PATCH. The merge now judges the lead again inside its transaction (src/dedup/steps.ts
 * `mergeRefusal`); on PostgreSQL it also locks the two rows in id order, so the opposite merges never
 * deadlock. The report's own status is judged there too: a merge racing "mark as fixed" made a resolved
 * report a duplicate of an open lead. Runs on both stores (FIXLOOP_TEST_DIALECT=pg).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, eventually, seedTenant, startTestServer, type Tenant, type TestServer } from './harness'

const ROUNDS = 8

// Reports that share no words (random made-up ones), so clustering leaves each a lead of its own.
function uniqueText(): string {
  const word = () => Array.from({ length: 7 }, () => 'bcdfghklmnprstvz'[Math.floor(Math.random() * 16)] + 'aeiou'[Math.floor(Math.random() * 5)]).join('')
  return Array.from({ length: 9 }, word).join(' ')
}

describe('merges by hand racing each other', () => {
  let srv: TestServer
  let t: Tenant
  beforeAll(async () => {
    // Many reads and merges in a few seconds: the per-key rate limit is not what this test is about.
    srv = await startTestServer({ FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000' })
    t = await seedTenant(srv.admin)
  })
  afterAll(() => srv.close())

  const get = async (id: string) => (await call(srv.url, 'GET', `/v1/feedback/${id}`, { auth: t.key })).body

  test('a into b, b into c, c into a and b into a at once: never a report that is its own duplicate, never a cycle, counts that add up', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const ids: string[] = []
      for (let i = 0; i < 3; i++) {
        const r = await call(srv.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: uniqueText() } })
        expect(r.status).toBe(201)
        ids.push(r.body.id)
      }
      // Merging needs sanitized reports: wait until the worker has clustered all three.
      await eventually(async () => (await Promise.all(ids.map(get))).every((f) => f.processedAt !== null && f.duplicateOfId === null), 20_000)
      const [a, b, c] = ids
      const answers = await Promise.all(
        [
          [a, b],
          [b, c],
          [c, a],
          [b, a],
        ].map(([id, leadId]) => call(srv.url, 'POST', `/v1/feedback/${id}/merge`, { auth: t.key, body: { leadId } })),
      )
      for (const r of answers) {
        // A merge that lost the race is refused as a sequential one would be, never a 5xx.
        if (r.status !== 200) expect({ status: r.status, code: r.body.error?.code }).toEqual({ status: 409, code: 'invalid_target' })
      }
      expect(answers.some((r) => r.status === 200)).toBe(true)

      const rows = await Promise.all(ids.map(get))
      const byId = new Map(rows.map((f) => [f.id, f]))
      for (const f of rows) {
        expect(f.duplicateOfId).not.toBe(f.id)
        // One level only: a duplicate's lead is a lead.
        if (f.duplicateOfId) expect(byId.get(f.duplicateOfId)?.duplicateOfId ?? null).toBeNull()
      }
      const leads = rows.filter((f) => f.duplicateOfId === null)
      expect(leads.length).toBeGreaterThanOrEqual(1)
      for (const lead of leads) expect(lead.duplicateCount).toBe(rows.filter((f) => f.duplicateOfId === lead.id).length)
      // Every report of the round is reachable: a lead in the list, or a duplicate of one.
      const listed = (await call(srv.url, 'GET', '/v1/feedback?limit=100', { auth: t.key })).body.data.map((f: { id: string }) => f.id)
      for (const lead of leads) expect(listed).toContain(lead.id)
    }
  }, 120_000)

  test('a merge racing "mark as fixed" of the same report: never a resolved duplicate of an open lead', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const ids: string[] = []
      for (let i = 0; i < 2; i++) ids.push((await call(srv.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: uniqueText() } })).body.id)
      await eventually(async () => (await Promise.all(ids.map(get))).every((f) => f.processedAt !== null && f.duplicateOfId === null), 20_000)
      const [a, b] = ids
      // The merge sent first: its checks read the report before the mark commits, its write comes after.
      const answers = await Promise.all([
        call(srv.url, 'POST', `/v1/feedback/${a}/merge`, { auth: t.key, body: { leadId: b } }),
        call(srv.url, 'POST', `/v1/feedback/${a}/resolve`, { auth: t.key }),
      ])
      for (const r of answers) if (r.status !== 200) expect({ status: r.status, code: r.body.error?.code }).toMatchObject({ status: 409 })
      const [member, lead] = await Promise.all(ids.map(get))
      // Sequentially the second of the two is refused: a resolved report is no merge source, a duplicate is not marked fixed.
      expect(answers.filter((r) => r.status === 200).length).toBe(1)
      if (member.duplicateOfId) expect(member.status).not.toBe('resolved')
      else expect(member.status).toBe('resolved')
      expect(lead.duplicateCount).toBe(member.duplicateOfId ? 1 : 0)
    }
  }, 120_000)

  /**
   * A reporter's erasure racing merges and unmerges of the clusters its reports lead or join. On PostgreSQL
   * the erasure locked its reports, then the duplicates it promotes and the leads it recounts, out of
   * the merges' order (the App's merge lock, then every row in id order): each held a row the other
   * waited for, and PostgreSQL ended the cycle by rolling one back, answered 503.
   */
  test('an erasure racing merges and unmerges of its reports\' clusters: never a 5xx, the reports gone, counts that add up', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const uid = `erase-race-${round}-${crypto.randomUUID()}`
      const submit = async (mine: boolean) =>
        (await call(srv.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: uniqueText(), identity: { externalUserId: mine ? uid : `keeper-${crypto.randomUUID()}` } } })).body.id as string
      // Made in an order that changes by round, so the erased lead sorts before or after its duplicates.
      const order = round % 2 ? ['m1', 'e1', 'm2', 'y', 'e2'] : ['e2', 'y', 'm2', 'e1', 'm1']
      const r: Record<string, string> = {}
      for (const k of order) r[k] = await submit(k.startsWith('e'))
      await eventually(async () => (await Promise.all(Object.values(r).map(get))).every((f) => f.processedAt !== null && f.duplicateOfId === null), 20_000)
      // e1 (erased) leads m1 and m2; e2 (erased) is a duplicate of y.
      for (const [id, leadId] of [[r.m1, r.e1], [r.m2, r.e1], [r.e2, r.y]]) expect((await call(srv.url, 'POST', `/v1/feedback/${id}/merge`, { auth: t.key, body: { leadId } })).status).toBe(200)
      const [erase, ...triage] = await Promise.all([
        call(srv.url, 'POST', '/v1/reporters/erase', { auth: t.key, body: { externalUserId: uid } }),
        call(srv.url, 'POST', `/v1/feedback/${r.m1}/merge`, { auth: t.key, body: { leadId: r.y } }),
        call(srv.url, 'POST', `/v1/feedback/${r.m2}/unmerge`, { auth: t.key }),
        call(srv.url, 'POST', `/v1/feedback/${r.y}/merge`, { auth: t.key, body: { leadId: r.m2 } }),
      ])
      expect({ status: erase.status, body: erase.body }).toEqual({ status: 200, body: { erased: 2 } })
      for (const a of triage) if (a.status !== 200) expect([404, 409].includes(a.status) ? null : { status: a.status, code: a.body.error?.code }).toBeNull()
      for (const k of ['e1', 'e2']) expect((await get(r[k])).error?.code).toBe('not_found')
      const rows = await Promise.all(['m1', 'm2', 'y'].map((k) => get(r[k])))
      const byId = new Map(rows.map((f) => [f.id, f]))
      for (const f of rows) {
        expect(f.duplicateOfId).not.toBe(f.id)
        expect([r.e1, r.e2]).not.toContain(f.duplicateOfId)
        if (f.duplicateOfId) expect(byId.get(f.duplicateOfId)?.duplicateOfId ?? null).toBeNull()
      }
      for (const lead of rows.filter((f) => f.duplicateOfId === null)) expect(lead.duplicateCount).toBe(rows.filter((f) => f.duplicateOfId === lead.id).length)
    }
  }, 120_000)

  test('an unmerge racing merges of its lead: only 200s and 409s, one level of duplicates, counts that add up', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const ids: string[] = []
      for (let i = 0; i < 3; i++) ids.push((await call(srv.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: uniqueText() } })).body.id)
      await eventually(async () => (await Promise.all(ids.map(get))).every((f) => f.processedAt !== null && f.duplicateOfId === null), 20_000)
      // Ids sorted, so a duplicate sorts after or before its lead by round: both lock orders are tried.
      const [a, b, c] = round % 2 ? ids : [...ids].reverse()
      expect((await call(srv.url, 'POST', `/v1/feedback/${a}/merge`, { auth: t.key, body: { leadId: b } })).status).toBe(200)
      const answers = await Promise.all([
        call(srv.url, 'POST', `/v1/feedback/${a}/unmerge`, { auth: t.key }),
        call(srv.url, 'POST', `/v1/feedback/${b}/merge`, { auth: t.key, body: { leadId: c } }),
        call(srv.url, 'POST', `/v1/feedback/${c}/merge`, { auth: t.key, body: { leadId: a } }),
      ])
      for (const r of answers) if (r.status !== 200) expect({ status: r.status, code: r.body.error?.code }).toMatchObject({ status: 409 })
      const rows = await Promise.all(ids.map(get))
      const byId = new Map(rows.map((f) => [f.id, f]))
      for (const f of rows) {
        expect(f.duplicateOfId).not.toBe(f.id)
        if (f.duplicateOfId) expect(byId.get(f.duplicateOfId)?.duplicateOfId ?? null).toBeNull()
      }
      for (const lead of rows.filter((f) => f.duplicateOfId === null)) expect(lead.duplicateCount).toBe(rows.filter((f) => f.duplicateOfId === lead.id).length)
    }
  }, 120_000)
})

/**
 * A removed lead's successor moves on as a lead (found by the governance attack, attack-gov). A duplicate
 * clustering merged automatically waits in `sanitized` (a duplicate takes no lifecycle steps of its own);
 * when its lead was erased (POST /v1/reporters/erase) or expired (the report retention), the oldest
 * surviving duplicate became the lead but stayed `sanitized` for good: no job routed it, so it never
 * reached "Awaiting decision" (nor the agent's queue on an automatic App). Its `process` job is now
 * queued in the removal's transaction, as an unmerge's is: it is routed, and takes the next duplicates
 * of its bug. Runs on PostgreSQL too (scripts/test-pg.sh).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ManualClock } from '../src/core/clock'
import { call, eventually, seedTenant, startTestServer, type Tenant, type TestServer } from './harness'
import { dbRows } from './sqlite-of'

const DAY = 24 * 3600_000

let server: TestServer
let clock: ManualClock
beforeAll(async () => {
  clock = new ManualClock(Date.UTC(2026, 5, 1, 12))
  server = await startTestServer({}, { clock })
})
afterAll(() => server?.close())

async function submit(t: Tenant, text: string, email: string): Promise<string> {
  const r = await call(server.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text, identity: { email } } })
  expect(r.status).toBe(201)
  return r.body.id as string
}
const item = async (t: Tenant, id: string) => (await call(server.url, 'GET', `/v1/feedback/${id}`, { auth: t.key })).body
/** The report's status from the database (polled there: the API's rate limit would answer a poll loop 429). */
const statusOf = async (id: string) => (await dbRows(server.ctx, 'SELECT status, processed_at FROM feedback WHERE id = ?', [id]))[0] as { status: string; processed_at: number | null } | undefined
/** The report once its processing is done (out of received/sanitizing, with its verdict). */
async function processed(t: Tenant, id: string) {
  await eventually(async () => {
    const s = await statusOf(id)
    return s && s.processed_at !== null && s.status !== 'received' && s.status !== 'sanitizing'
  }, 30_000)
  return item(t, id)
}

/** A lead (by `leadEmail`) and two automatic duplicates of it; answers their ids, checked as such. */
async function cluster(t: Tenant, text: string, leadEmail: string): Promise<{ lead: string; dups: string[] }> {
  const lead = await submit(t, text, leadEmail)
  expect((await processed(t, lead)).status).toBe('awaiting_manual')
  const dups: string[] = []
  for (const who of ['dora@example.com', 'dan@example.com']) {
    const id = await submit(t, text, who)
    expect(await processed(t, id)).toMatchObject({ duplicateOfId: lead, status: 'sanitized' })
    dups.push(id)
  }
  return { lead, dups: dups.sort() }
}

/** The successor leads, is routed out of `sanitized`, keeps the other duplicate, and takes the next one. */
async function expectRoutedSuccessor(t: Tenant, text: string, dups: string[]) {
  const [next, other] = dups
  await eventually(async () => (await statusOf(next))?.status !== 'sanitized', 10_000).catch(() => undefined)
  expect(await item(t, next)).toMatchObject({ duplicateOfId: null, status: 'awaiting_manual', duplicateCount: 1 })
  expect((await item(t, other)).duplicateOfId).toBe(next)
  // In the "Awaiting decision" list, as a lead.
  const listed = await call(server.url, 'GET', '/v1/feedback?status=awaiting_manual', { auth: t.key })
  expect(listed.body.data.map((r: { id: string }) => r.id)).toContain(next)
  // The bug's next report joins the new lead.
  const later = await submit(t, text, 'late@example.com')
  expect((await processed(t, later)).duplicateOfId).toBe(next)
  expect(await dbRows(server.ctx, "SELECT id FROM jobs WHERE kind = 'process' AND feedback_id = ?", [next])).toEqual([])
}

describe("a removed lead's successor", () => {
  test('erasure: the oldest surviving duplicate leads and moves on to awaiting_manual', async () => {
    const t = await seedTenant(server.admin, {}, 'Erase')
    const text = 'Exporting the invoice as PDF hangs forever with a spinner after clicking the download button in the billing page'
    const { dups } = await cluster(t, text, 'erin@example.com')
    const erased = await call(server.url, 'POST', '/v1/reporters/erase', { auth: t.key, body: { email: 'erin@example.com' } })
    expect(erased.body).toEqual({ erased: 1 })
    await expectRoutedSuccessor(t, text, dups)
  }, 90_000)

  test('retention: the same when the lead expires before its duplicates', async () => {
    const t = await seedTenant(server.admin, { retentionDays: 7 }, 'Retain')
    const text = 'The calendar week view shows every meeting one hour late after the daylight saving time change in March'
    const lead = await submit(t, text, 'old@example.com')
    expect((await processed(t, lead)).status).toBe('awaiting_manual')
    clock.advance(5 * DAY)
    const dups: string[] = []
    for (const who of ['dora@example.com', 'dan@example.com']) {
      const id = await submit(t, text, who)
      expect(await processed(t, id)).toMatchObject({ duplicateOfId: lead, status: 'sanitized' })
      dups.push(id)
    }
    clock.advance(3 * DAY) // the lead is 8 days old, past 7; its duplicates 3
    expect(await server.services.reportRetention.sweep()).toBe(1)
    expect((await call(server.url, 'GET', `/v1/feedback/${lead}`, { auth: t.key })).status).toBe(404)
    await expectRoutedSuccessor(t, text, dups.sort())
  }, 90_000)
})

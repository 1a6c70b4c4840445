/**
 * The report retention (issue 40.2): an App's `retentionDays` (default 0: kept forever) bounds how long
 * its reports are kept. The sweep (src/modules/reporters/retention.ts) deletes exactly the expired reports
 * with their attachments and blobs, keeps the others and other Apps' reports, audits and counts each run;
 * an expiring lead hands its cluster to its oldest surviving duplicate (an older duplicate expires with
 * it); the event feed keeps ids only. Runs on PostgreSQL + Redis + S3 (s3rver) too (scripts/test-pg.sh).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ManualClock } from '../src/core/clock'
import { call, eventually, seedTenant, startTestServer, type Tenant, type TestServer } from './harness'
import { dbRows } from './sqlite-of'

const DAY = 24 * 3600_000
const PNG = new Uint8Array(1536).map((_, i) => (i * 13) % 256)
const OLD_PHRASE = 'tapirnarwhal5150'

let server: TestServer
let clock: ManualClock
let shop: Tenant
let keeper: Tenant
beforeAll(async () => {
  clock = new ManualClock(Date.UTC(2026, 3, 1, 12))
  server = await startTestServer({}, { clock })
  shop = await seedTenant(server.admin, { retentionDays: 7 }, 'Shop')
  keeper = await seedTenant(server.admin, {}, 'Keeper')
})
afterAll(() => server?.close())

async function submit(t: Tenant, text: string, extra: Record<string, unknown> = {}) {
  const r = await call(server.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text, identity: { email: 'old.reporter@example.com' }, ...extra } })
  expect(r.status).toBe(201)
  return r.body.id as string
}
async function upload(t: Tenant): Promise<string> {
  const up = await call(server.url, 'POST', '/v1/feedback/upload-url', { auth: t.pub, body: { contentType: 'image/png', byteSize: PNG.length, kind: 'screenshot' } })
  expect(up.status).toBe(200)
  expect((await fetch(up.body.url, { method: 'PUT', headers: up.body.headers, body: PNG })).status).toBeLessThan(300)
  return up.body.key
}
const get = (t: Tenant, id: string) => call(server.url, 'GET', `/v1/feedback/${id}`, { auth: t.key })
const settled = () => eventually(async () => ((await dbRows(server.ctx, "SELECT id FROM feedback WHERE status IN ('received', 'sanitizing')")).length === 0 ? true : undefined), 30_000)
const merge = async (t: Tenant, dup: string, lead: string) => expect((await call(server.url, 'POST', `/v1/feedback/${dup}/merge`, { auth: t.key, body: { leadId: lead } })).status).toBe(200)

describe('report retention', () => {
  test('the App object carries retentionDays (default 0), validated on create and update', async () => {
    const apps = (await call(server.url, 'GET', '/v1/apps', { auth: keeper.key })).body.data
    expect(apps[0]).toMatchObject({ retentionDays: 0, spamRetentionDays: 30 })
    expect((await call(server.url, 'GET', '/v1/apps', { auth: shop.key })).body.data[0].retentionDays).toBe(7)
    await expect(server.admin.updateApp(keeper.orgId, keeper.appId, { retentionDays: 3651 })).rejects.toThrow(/retention-days/)
    await expect(server.admin.updateApp(keeper.orgId, keeper.appId, { retentionDays: 1.5 })).rejects.toThrow(/retention-days/)
  })

  test('deletes exactly the expired reports with attachments and blobs; the lead hands its cluster on; audit, metric; idempotent', async () => {
    const key = await upload(shop)
    const old = await submit(shop, `Old report ${OLD_PHRASE} with a screenshot of the broken cart`, { attachments: [{ key, kind: 'screenshot', contentType: 'image/png', byteSize: PNG.length }] })
    const lead = await submit(shop, `Old lead ${OLD_PHRASE}: the payment page times out on submit`)
    const oldDup = await submit(shop, `Old duplicate ${OLD_PHRASE}: payment page never loads`)
    const keptElsewhere = await submit(keeper, `Keeper report ${OLD_PHRASE} kept forever`)
    await settled()
    await merge(shop, oldDup, lead)
    clock.advance(6 * DAY)
    const young = await submit(shop, 'Young report: the footer overlaps the menu')
    const youngDup = await submit(shop, 'Young duplicate: payment page times out again')
    const youngDup2 = await submit(shop, 'Second young duplicate: payment spinner forever')
    await settled()
    await merge(shop, youngDup, lead)
    await merge(shop, youngDup2, lead)
    clock.advance(2 * DAY) // the old ones are 8 days old, past 7; the young ones 2

    expect(await server.services.blobs.stat(server.services.blobs.sealedKey(key))).not.toBeNull()
    const deleted = await server.services.reportRetention.sweep()
    expect(deleted).toBe(3)
    for (const id of [old, lead, oldDup]) expect((await get(shop, id)).status).toBe(404)
    for (const id of [young, youngDup, youngDup2]) expect((await get(shop, id)).status).toBe(200)
    expect((await get(keeper, keptElsewhere)).status).toBe(200)
    expect(await server.services.blobs.stat(server.services.blobs.sealedKey(key))).toBeNull()
    expect(await dbRows(server.ctx, 'SELECT key FROM uploads WHERE key = ?', [key])).toEqual([])

    // The oldest surviving duplicate leads now; the other follows it.
    const [first, second] = [youngDup, youngDup2].sort()
    const newLead = (await get(shop, first)).body
    expect(newLead).toMatchObject({ duplicateOfId: null, duplicateCount: 1 })
    expect((await get(shop, second)).body.duplicateOfId).toBe(first)

    // Events keep ids and states only; nothing of the deleted text anywhere in the feed or the list.
    const feed = await call(server.url, 'GET', '/v1/events?limit=500', { auth: shop.key })
    expect(feed.body.data.some((e: any) => e.data.feedbackId === old)).toBe(true)
    expect(feed.text).not.toContain(OLD_PHRASE)
    expect((await call(server.url, 'GET', '/v1/feedback?includeDuplicates=true', { auth: shop.key })).text).not.toContain(OLD_PHRASE)
    expect((await dbRows(server.ctx, 'SELECT id FROM feedback WHERE text LIKE ? AND app_id = ?', [`%${OLD_PHRASE}%`, shop.appId])).length).toBe(0)

    const audit = await dbRows(server.ctx, "SELECT actor, target_id, data FROM audit_log WHERE action = 'reports.expired' AND org_id = ?", [shop.orgId])
    expect(audit.length).toBe(1)
    expect(audit[0]).toMatchObject({ actor: 'system', target_id: shop.appId })
    expect(JSON.parse(audit[0].data)).toMatchObject({ deleted: 3, attachments: 1, retentionDays: 7 })
    const metrics = await (await fetch(server.url + '/metrics')).text()
    expect(metrics).toMatch(/fixloop_reports_expired_total 3/)
    expect(await server.services.reportRetention.sweep()).toBe(0) // idempotent: nothing more to delete
    expect((await dbRows(server.ctx, "SELECT id FROM audit_log WHERE action = 'reports.expired'")).length).toBe(1)
  }, 60_000)
})

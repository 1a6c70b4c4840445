/**
 * The spam folder at rest (CONTRACT "Retention"): a report classified as spam at intake is stored
 * sanitized (it never gets the worker's `process` job), and the App's `spamRetentionDays` (default 30;
 * 0 keeps spam forever; 0..3650) bounds how long the spam folder keeps it: the sweep
 * (src/abuse/spam-retention.ts) deletes older spam with its attachments and blobs, audits and counts it.
 * Runs on PostgreSQL + Redis + S3 too (scripts/test-pg.sh).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { gunzipSync, gzipSync } from 'node:zlib'
import { ManualClock } from '../src/core/clock'
import { call, eventually, seedTenant, startTestServer, type Tenant, type TestServer } from './harness'
import { dbRow, dbRows } from './sqlite-of'

const DAY = 24 * 3600_000
const PNG = new Uint8Array(1024).map((_, i) => (i * 31) % 256)
const BOT = { honeypot: 'https://bot.example', formMs: 400 }
const SECRETS = 'Card 4111 1111 1111 1111, password: hunter2hunter2, write to jane.doe@example.com'

let server: TestServer
let clock: ManualClock
let shop: Tenant
let keeper: Tenant
beforeAll(async () => {
  clock = new ManualClock(Date.UTC(2026, 5, 1, 12))
  server = await startTestServer({}, { clock })
  shop = await seedTenant(server.admin, {}, 'Shop')
  keeper = await seedTenant(server.admin, { spamRetentionDays: 0 }, 'Keeper')
})
afterAll(() => server?.close())

async function submit(t: Tenant, body: Record<string, unknown>) {
  const r = await call(server.url, 'POST', '/v1/feedback', { auth: t.pub, body })
  expect(r.status).toBe(201)
  return r.body.id as string
}
async function upload(t: Tenant): Promise<string> {
  const up = await call(server.url, 'POST', '/v1/feedback/upload-url', { auth: t.pub, body: { contentType: 'image/png', byteSize: PNG.length, kind: 'screenshot' } })
  expect(up.status).toBe(200)
  expect((await fetch(up.body.url, { method: 'PUT', headers: up.body.headers, body: PNG })).status).toBeLessThan(300)
  return up.body.key
}
const stored = (key: string) => server.services.blobs.stat(server.services.blobs.sealedKey(key))
const get = (t: Tenant, id: string) => call(server.url, 'GET', `/v1/feedback/${id}`, { auth: t.key })

describe('spam at rest is sanitized', () => {
  test('a honeypot report keeps no raw card number, password or email, and stays in the spam folder', async () => {
    const id = await submit(shop, { text: `Great deal! ${SECRETS}`, consoleLogs: [{ level: 'error', message: 'login failed password=hunter2hunter2 for jane.doe@example.com', ts: 1 }], clientSignals: BOT })
    const row = await dbRow(server.ctx, 'SELECT text, console_logs, redactions, status, spam_marked_at FROM feedback WHERE id = ?', [id])
    expect(row!.spam_marked_at).not.toBeNull()
    expect(row!.status).toBe('received')
    for (const raw of ['4111 1111 1111 1111', 'hunter2hunter2', 'jane.doe@example.com']) {
      expect(row!.text).not.toContain(raw)
      expect(row!.console_logs).not.toContain(raw)
    }
    expect(row!.text).toContain('[REDACTED:credit_card]')
    const counts = JSON.parse(row!.redactions)
    expect(counts.credit_card).toBe(1)
    expect(counts.secret).toBeGreaterThanOrEqual(1)
    expect(counts.email).toBeGreaterThanOrEqual(1)
    const item = (await get(shop, id)).body
    expect(item.spam.reasons).toContain('honeypot')
    expect(item.text).toContain('[REDACTED:email]')
    const spamFolder = (await call(server.url, 'GET', `/v1/feedback?spam=only&appId=${shop.appId}`, { auth: shop.key })).body.data.map((d: any) => d.id)
    expect(spamFolder).toContain(id)
  })
})

describe('spamRetentionDays', () => {
  test('the App field: 30 by default, 0 keeps forever, 0..3650 integers only (service, dashboard)', async () => {
    const apps = (await call(server.url, 'GET', '/v1/apps', { auth: shop.key })).body.data
    expect(apps[0].spamRetentionDays).toBe(30)
    expect((await call(server.url, 'GET', '/v1/apps', { auth: keeper.key })).body.data[0].spamRetentionDays).toBe(0)
    for (const bad of [-1, 3651, 1.5, Number.NaN]) await expect(server.admin.updateApp(shop.orgId, shop.appId, { spamRetentionDays: bad })).rejects.toThrow(/spam-retention-days/)
    expect((await server.admin.updateApp(shop.orgId, shop.appId, { spamRetentionDays: 3650 })).spamRetentionDays).toBe(3650)
    expect((await server.admin.updateApp(shop.orgId, shop.appId, { spamRetentionDays: 30 })).spamRetentionDays).toBe(30)
  })

  test('the sweep deletes spam older than the App keeps it, with attachments and blobs (not one a kept report lists too); keeps the rest; audits and counts', async () => {
    const key = await upload(shop)
    const shared = await upload(shop)
    const attachment = (k: string) => ({ key: k, kind: 'screenshot', contentType: 'image/png', byteSize: PNG.length })
    const old = await submit(shop, { text: 'Cheap replica watches at https://bot.example', attachments: [attachment(key), attachment(shared)], clientSignals: BOT })
    const byHand = await submit(shop, { text: 'A report a person will mark spam' })
    expect((await call(server.url, 'PATCH', `/v1/feedback/${byHand}`, { auth: shop.key, body: { spam: true } })).status).toBe(200)
    const real = await submit(shop, { text: 'The cart page is blank on Safari', attachments: [attachment(shared)] })
    const kept = await submit(keeper, { text: 'Spam on an App that keeps its spam forever', clientSignals: BOT })
    expect(await stored(key)).not.toBeNull()
    // The worker has processed the reports that were not spam at intake: its transaction locks a report's row,
    // and the sweep skips a locked row (SKIP LOCKED: it is taken at the next run), which is not what this case is about.
    await eventually(async () => ((await dbRows(server.ctx, "SELECT id FROM jobs WHERE kind = 'process' AND feedback_id IN (?, ?)", [byHand, real])).length === 0 ? true : undefined), 30_000)

    clock.advance(29 * DAY)
    const young = await submit(shop, { text: 'Spam that arrived a day before the sweep', clientSignals: BOT })
    expect(await server.services.spamSweep.sweep()).toBe(0) // 29 days: nothing is old enough yet
    clock.advance(2 * DAY)
    const before = server.services.spamSweep.deletedTotal()
    expect(await server.services.spamSweep.sweep()).toBeGreaterThanOrEqual(2)
    expect(server.services.spamSweep.deletedTotal() - before).toBeGreaterThanOrEqual(2)

    for (const id of [old, byHand]) expect((await get(shop, id)).status).toBe(404)
    for (const [t, id] of [[shop, real], [shop, young], [keeper, kept]] as const) expect((await get(t, id)).status).toBe(200)
    expect(await stored(key)).toBeNull()
    expect(await dbRows(server.ctx, 'SELECT key FROM uploads WHERE key = ?', [key])).toEqual([])
    expect(await dbRows(server.ctx, 'SELECT id FROM jobs WHERE feedback_id = ?', [byHand])).toEqual([])
    // The spam report referenced `shared` first; the kept report lists it too, so it stays, now the kept report's.
    expect(await stored(shared)).not.toBeNull()
    const listed = (await get(shop, real)).body.attachments[0]
    expect(listed.key).toBe(shared)
    expect(new Uint8Array(await (await fetch(listed.url)).arrayBuffer())).toEqual(PNG)
    expect(await dbRows(server.ctx, 'SELECT feedback_id FROM uploads WHERE key = ?', [shared])).toEqual([{ feedback_id: real }])

    const audit = await dbRows(server.ctx, "SELECT actor, target_id, data FROM audit_log WHERE action = 'spam.deleted' AND org_id = ?", [shop.orgId])
    expect(audit.length).toBe(1)
    expect(audit[0]).toMatchObject({ actor: 'system', target_id: shop.appId })
    expect(JSON.parse(audit[0].data)).toMatchObject({ deleted: expect.any(Number), attachments: 1, retentionDays: 30 })
    const metrics = await (await fetch(server.url + '/metrics')).text()
    expect(metrics).toMatch(/fixloop_spam_deleted_total [1-9]/)
    expect(await server.services.spamSweep.sweep()).toBe(0) // idempotent
  })

  test('a session replay goes with its report: scrubbed while the report waits in the spam folder, removed by the sweep', async () => {
    await server.admin.updateApp(shop.orgId, shop.appId, { replay: { mode: 'inputs' } })
    const events = [
      { type: 4, data: { href: 'https://shop.example/?email=jane.doe@example.com', width: 800, height: 600 }, timestamp: 1 },
      { type: 3, data: { source: 5, id: 3, text: '4111 1111 1111 1111' }, timestamp: 2 },
    ]
    const bytes = gzipSync(JSON.stringify({ v: 1, events }))
    const up = await call(server.url, 'POST', '/v1/feedback/upload-url', { auth: shop.pub, body: { contentType: 'application/gzip', byteSize: bytes.byteLength, kind: 'replay' } })
    expect(up.status).toBe(200)
    expect((await fetch(up.body.url, { method: 'PUT', headers: up.body.headers, body: bytes })).status).toBeLessThan(300)
    const key = up.body.key as string
    const id = await submit(shop, { text: 'Cheap replica watches at https://bot.example', attachments: [{ key, kind: 'replay', contentType: 'application/gzip', byteSize: bytes.byteLength }], clientSignals: BOT })
    expect((await get(shop, id)).body.spam.reasons).toContain('honeypot')
    // Spam never gets a process job; its replay is scrubbed all the same.
    const ready = await eventually(async () => {
      const a = (await get(shop, id)).body.attachments[0]
      return a.replayState === 'ready' ? a : undefined
    }, 20_000)
    expect(gunzipSync(new Uint8Array(await (await fetch(ready.url)).arrayBuffer())).toString()).not.toContain('jane.doe@example.com')
    expect(await stored(key)).not.toBeNull()

    clock.advance(31 * DAY)
    expect(await server.services.spamSweep.sweep()).toBeGreaterThanOrEqual(1)
    expect((await get(shop, id)).status).toBe(404)
    expect(await stored(key)).toBeNull()
    expect(await server.services.blobs.stat(key)).toBeNull()
    expect(await dbRows(server.ctx, 'SELECT key FROM uploads WHERE key = ?', [key])).toEqual([])
  })
})

/**
 * A reporter's data (issue 40.3): GET /v1/reporters/feedback exports every report of an end user in the
 * caller's Org (across its Apps, never another Org's); POST /v1/reporters/erase removes them for good:
 * afterwards no table and no text column holds the reporter's email, id, name or a phrase of their
 * text, the blob store has none of their objects, the event feed and the list carry nothing of them,
 * other reporters are untouched, a lead's cluster passes to its oldest surviving duplicate, a second call
 * erases 0, the audit entry holds no identity. Runs on PostgreSQL + S3 (s3rver) too (scripts/test-pg.sh).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createHash } from 'node:crypto'
import { call, eventually, seedTenant, startTestServer, type Tenant, type TestServer } from './harness'
import { erasureDigestKey, identityDigest } from '../src/modules/reporters/service'
import { dbRows, dbRun } from './sqlite-of'
import { reporterAddressHashes } from '../src/modules/mail/address'

const PNG = new Uint8Array(2048).map((_, i) => (i * 17) % 256)
const EMAIL = 'Erin.Erasable@example.com'
const UID = 'user-erase-4471'
const NAME = 'Erin Erasable'
const PHRASE = 'zebraquokka7731'
const KEEP_PHRASE = 'platypuswombat9912'

let server: TestServer
let acme: Tenant
let acme2: { appId: string; pub: string }
let other: Tenant
const erin: string[] = []
let keepA = ''
let keepB = ''
let otherOrgErin = ''
let blobKey = ''

async function submit(pub: string, body: Record<string, unknown>) {
  const r = await call(server.url, 'POST', '/v1/feedback', { auth: pub, body, headers: { 'idempotency-key': crypto.randomUUID() } })
  expect(r.status).toBe(201)
  return r.body.id as string
}
async function upload(pub: string): Promise<string> {
  const up = await call(server.url, 'POST', '/v1/feedback/upload-url', { auth: pub, body: { contentType: 'image/png', byteSize: PNG.length, kind: 'screenshot' } })
  expect(up.status).toBe(200)
  expect((await fetch(up.body.url, { method: 'PUT', headers: up.body.headers, body: PNG })).status).toBeLessThan(300)
  return up.body.key
}
const get = (t: { key: string }, id: string) => call(server.url, 'GET', `/v1/feedback/${id}`, { auth: t.key })
const identity = { email: EMAIL, externalUserId: UID, name: NAME }

beforeAll(async () => {
  server = await startTestServer()
  acme = await seedTenant(server.admin, {}, 'Acme')
  const second = await server.admin.createApp(acme.orgId, { name: 'Acme Mobile' })
  acme2 = { appId: second.id, pub: second.publicKey }
  other = await seedTenant(server.admin, {}, 'Other')
  blobKey = await upload(acme.pub)
  erin.push(await submit(acme.pub, { text: `The checkout button ${PHRASE} does nothing at all when I press it`, identity, metadata: { plan: 'pro', contact: EMAIL }, attachments: [{ key: blobKey, kind: 'screenshot', contentType: 'image/png', byteSize: PNG.length }] }))
  erin.push(await submit(acme2.pub, { text: `Settings page crashes ${PHRASE} on save every time`, identity: { email: EMAIL.toLowerCase(), name: NAME } }))
  erin.push(await submit(acme.pub, { text: `Search results ${PHRASE} are empty for any query`, identity: { externalUserId: UID } }))
  keepA = await submit(acme.pub, { text: `Login form ${KEEP_PHRASE} rejects valid passwords`, identity: { email: 'keeper@example.com', externalUserId: 'keeper-1' } })
  keepB = await submit(acme.pub, { text: `Logout link ${KEEP_PHRASE} is hidden on mobile`, identity: { email: 'keeper2@example.com' } })
  otherOrgErin = await submit(other.pub, { text: `Other org report ${PHRASE} stays`, identity })
  const all = [...erin, keepA, keepB, otherOrgErin]
  await eventually(async () => ((await dbRows(server.ctx, `SELECT id FROM feedback WHERE status IN ('received', 'sanitizing')`)).length === 0 ? true : undefined), 30_000)
  expect(all.length).toBe(6)
  // Erin's first report leads a cluster of the two keepers' reports (merged by hand): erasing it must hand the cluster on.
  for (const dup of [keepA, keepB]) {
    const r = await call(server.url, 'POST', `/v1/feedback/${dup}/merge`, { auth: acme.key, body: { leadId: erin[0] } })
    expect(r.status).toBe(200)
  }
}, 60_000)
afterAll(() => server?.close())

describe('export', () => {
  test('every report of the reporter across the Apps of the Org, full items, nothing of another Org; by one App; paged', async () => {
    const byEmail = await call(server.url, 'GET', `/v1/reporters/feedback?email=${encodeURIComponent(EMAIL.toUpperCase())}`, { auth: acme.key })
    expect(byEmail.status).toBe(200)
    expect(byEmail.body.data.map((i: any) => i.id).sort()).toEqual([erin[0], erin[1]].sort())
    expect(byEmail.body.data.find((i: any) => i.id === erin[0]).attachments.length).toBe(1)
    const byId = await call(server.url, 'GET', `/v1/reporters/feedback?externalUserId=${UID}`, { auth: acme.key })
    expect(byId.body.data.map((i: any) => i.id).sort()).toEqual([erin[0], erin[2]].sort())
    expect(JSON.stringify(byId.body)).not.toContain(otherOrgErin)
    const oneApp = await call(server.url, 'GET', `/v1/reporters/feedback?email=${encodeURIComponent(EMAIL)}&appId=${acme2.appId}`, { auth: acme.key })
    expect(oneApp.body.data.map((i: any) => i.id)).toEqual([erin[1]])
    const page1 = await call(server.url, 'GET', `/v1/reporters/feedback?externalUserId=${UID}&limit=1`, { auth: acme.key })
    expect(page1.body.data.length).toBe(1)
    const page2 = await call(server.url, 'GET', `/v1/reporters/feedback?externalUserId=${UID}&limit=1&cursor=${page1.body.nextCursor}`, { auth: acme.key })
    expect([...page1.body.data, ...page2.body.data].map((i: any) => i.id).sort()).toEqual([erin[0], erin[2]].sort())
    expect(page2.body.nextCursor).toBeNull()
    const crossOrg = await call(server.url, 'GET', `/v1/reporters/feedback?email=${encodeURIComponent(EMAIL)}&appId=${other.appId}`, { auth: acme.key })
    expect(crossOrg.status).toBe(404)
  })

  test("a lead's export holds none of the other reporters' data: no duplicates, theme or consolidated text; the count stays", async () => {
    // The lead's own item (GET /v1/feedback/:id) does show the keepers who joined its cluster.
    const full = await get(acme, erin[0])
    expect(full.body.duplicates.map((d: any) => d.id).sort()).toEqual([keepA, keepB].sort())
    const exported = await call(server.url, 'GET', `/v1/reporters/feedback?email=${encodeURIComponent(EMAIL)}`, { auth: acme.key })
    const lead = exported.body.data.find((i: any) => i.id === erin[0])
    expect(lead.duplicateCount).toBe(2)
    expect(lead.duplicates).toEqual([])
    expect(lead.theme).toBeNull()
    expect(lead.consolidatedText).toBeNull()
    const text = JSON.stringify(exported.body)
    for (const theirs of ['keeper@example.com', 'keeper2@example.com', 'keeper-1', KEEP_PHRASE]) expect(text).not.toContain(theirs)
  })
})

describe('fuzz', () => {
  test('junk, huge, nested, both identifiers, neither: 400 invalid_body naming the field; never 5xx', async () => {
    const q = (s: string) => call(server.url, 'GET', `/v1/reporters/feedback${s}`, { auth: acme.key })
    const e = (body: unknown, raw?: string) => call(server.url, 'POST', '/v1/reporters/erase', { auth: acme.key, ...(raw !== undefined ? { rawBody: raw, headers: { 'content-type': 'application/json' } } : { body }) })
    const cases: [Promise<any>, string][] = [
      [q(`?email=${encodeURIComponent(EMAIL)}&externalUserId=${UID}`), 'email'],
      [q(''), 'externalUserId'],
      [q('?email=not-an-email'), 'email'],
      [q(`?externalUserId=${'x'.repeat(10_000)}`), 'externalUserId'],
      [q(`?externalUserId=${UID}&limit=0`), 'limit'],
      [q(`?externalUserId=${UID}&limit=${'9'.repeat(300)}`), 'limit'],
      [q(`?externalUserId=${UID}&cursor=xyz`), 'cursor'],
      [q(`?externalUserId=${UID}&appId=%00`), 'appId'],
      [q(`?externalUserId=${UID}&junk=1`), 'junk'],
      [e({ email: EMAIL, externalUserId: UID }), 'email'],
      [e({}), 'externalUserId'],
      [e({ email: { nested: { deeper: [EMAIL] } } }), 'email'],
      [e({ externalUserId: 'x'.repeat(100_000) }), 'externalUserId'],
      [e({ externalUserId: UID, appId: 'nope' }), 'appId'],
      [e({ externalUserId: UID, extra: true }), 'extra'],
      [e(null, '['.repeat(5000) + ']'.repeat(5000)), ''],
      [e(null, '{"externalUserId": "a\u0000b", "email": 1}'), ''],
    ]
    for (const [pending, field] of cases) {
      const r = await pending
      expect(r.status, r.text).toBe(400)
      expect(r.body.error.code).toBe('invalid_body')
      if (field) expect(JSON.stringify(r.body.error.details)).toContain(field)
      // Paths are JSON pointers, for the query's parameters as for the body's fields.
      for (const issue of r.body.error.details.issues ?? []) expect(issue.path).toStartWith('/')
    }
    expect((await call(server.url, 'POST', '/v1/reporters/erase', { body: { externalUserId: UID } })).status).toBe(401)
    expect((await call(server.url, 'POST', '/v1/reporters/erase', { auth: acme.key, body: { externalUserId: UID, appId: other.appId } })).status).toBe(404)
    // Nothing was erased by any of them.
    for (const id of erin) expect((await get(acme, id)).status).toBe(200)
  })
})

describe('erase', () => {
  test('by email then by externalUserId: nothing of the reporter left anywhere; others untouched; the cluster passes on; idempotent; audited without the identity', async () => {
    const stored = () => server.services.blobs.stat(server.services.blobs.sealedKey(blobKey))
    expect(await stored()).not.toBeNull()
    // Reporter-mail records keyed by the address's hash: Erin's unsubscribe and opt-in go, a keeper's stay.
    const hashOf = (email: string) => reporterAddressHashes(server.ctx.urlSigningKey)(email)[0]
    const mailRows = async (email: string) => [
      ...(await dbRows(server.ctx, 'SELECT app_id FROM mail_unsubscribes WHERE email_hash = ?', [hashOf(email)])),
      ...(await dbRows(server.ctx, 'SELECT app_id FROM mail_confirmations WHERE email_hash = ?', [hashOf(email)])),
    ]
    for (const [app, email] of [[acme.appId, EMAIL], [acme2.appId, EMAIL], [acme.appId, 'keeper@example.com']]) {
      await dbRun(server.ctx, 'INSERT INTO mail_unsubscribes (app_id, email_hash, created_at) VALUES (?, ?, 1)', [app, hashOf(email)])
    }
    await dbRun(server.ctx, "INSERT INTO mail_confirmations (id, app_id, org_id, email_hash, state, next_attempt_at, created_at) VALUES (?, ?, ?, ?, 'confirmed', 1, 1)", [`${acme.appId}.${hashOf(EMAIL)}`, acme.appId, acme.orgId, hashOf(EMAIL)])
    expect((await mailRows(EMAIL)).length).toBe(3)
    const byEmail = await call(server.url, 'POST', '/v1/reporters/erase', { auth: acme.key, body: { email: EMAIL.toLowerCase() } })
    expect(byEmail.status).toBe(200)
    expect(byEmail.body).toEqual({ erased: 2 })
    const byId = await call(server.url, 'POST', '/v1/reporters/erase', { auth: acme.key, body: { externalUserId: UID } })
    expect(byId.body).toEqual({ erased: 1 })
    const again = await call(server.url, 'POST', '/v1/reporters/erase', { auth: acme.key, body: { externalUserId: UID } })
    expect(again.body).toEqual({ erased: 0 })

    for (const id of erin) expect((await get(acme, id)).status).toBe(404)
    expect(await stored()).toBeNull()
    expect(await mailRows(EMAIL)).toEqual([])
    expect((await mailRows('keeper@example.com')).length).toBe(1)

    // The cluster: the older keeper's report leads now, the other follows it, counts right.
    const [first, second] = [keepA, keepB].sort()
    const lead = (await get(acme, first)).body
    expect(lead.duplicateOfId).toBeNull()
    expect(lead.duplicateCount).toBe(1)
    expect((await get(acme, second)).body.duplicateOfId).toBe(first)
    expect(lead.text).toContain(KEEP_PHRASE)
    // Another Org's report of the same person is that Org's to erase.
    expect((await get(other, otherOrgErin)).status).toBe(200)

    const needles = [EMAIL.toLowerCase(), UID, NAME, PHRASE, ...erin]
    const feed = await call(server.url, 'GET', '/v1/events?limit=500', { auth: acme.key })
    const list = await call(server.url, 'GET', '/v1/feedback?includeDuplicates=true&limit=100', { auth: acme.key })
    for (const text of [feed.text, list.text]) for (const n of [EMAIL.toLowerCase(), UID, NAME, PHRASE]) expect(text.toLowerCase()).not.toContain(n.toLowerCase())

    // Every row of every table (its text columns), except the other Org's rows (its own report of the same person).
    const tables =
      server.ctx.storage.dialect === 'sqlite'
        ? await dbRows<{ t: string }>(server.ctx, "SELECT name AS t FROM sqlite_master WHERE type = 'table'")
        : await dbRows<{ t: string }>(server.ctx, "SELECT table_name AS t FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'")
    expect(tables.length).toBeGreaterThan(30)
    const found: string[] = []
    for (const { t } of tables) {
      for (const row of await dbRows(server.ctx, `SELECT * FROM "${t}"`)) {
        const s = JSON.stringify(row, (_, v) => (typeof v === 'bigint' ? String(v) : v instanceof Uint8Array ? Buffer.from(v).toString('latin1') : v)).toLowerCase()
        if (s.includes(otherOrgErin) || s.includes(other.orgId) || s.includes(other.appId)) continue
        // Events keep ids and states (CONTRACT: "events keep ids only"): there the ids are no identity. So
        // does the removal log of a cluster (an hour of removed ids for the other nodes' indexes: src/db/pg/removal-log.ts).
        const idsOnly = t === 'events' || t === 'removed_reports'
        for (const n of idsOnly ? needles.slice(0, 4) : needles) if (s.includes(n.toLowerCase())) found.push(`${t} holds ${n}: ${s.slice(0, 300)}`)
      }
    }
    expect(found).toEqual([])

    const audit = await call(server.url, 'GET', '/v1/audit?limit=100', { auth: acme.key })
    const erased = audit.body.data.filter((e: any) => e.action === 'reporter.erased')
    expect(erased.map((e: any) => e.data.erased)).toEqual([2, 1, 0])
    // A keyed digest (this instance's key): matches `fixloop audit digest`, not a plain hash anyone could try.
    expect(erased[0].data.identityDigest).toMatch(/^[0-9a-f]{64}$/)
    const digests = erased.map((e: any) => e.data.identityDigest)
    const key = erasureDigestKey(server.ctx.urlSigningKey)
    expect(digests).toContain(identityDigest({ email: EMAIL }, key))
    expect(digests).toContain(identityDigest({ externalUserId: UID }, key))
    expect(digests).not.toContain(createHash('sha256').update(`email:${EMAIL.toLowerCase()}`).digest('hex'))
    expect(JSON.stringify(audit.body).toLowerCase()).not.toContain(EMAIL.toLowerCase())
    expect(JSON.stringify(audit.body)).not.toContain(UID)
  })
})

describe('an upload several reports list', () => {
  test('erasing the report that referenced it first keeps it for the others (attachment or screenshot); erasing the last one removes it', async () => {
    const key = await upload(acme.pub)
    const sealed = () => server.services.blobs.stat(server.services.blobs.sealedKey(key))
    const attachments = [{ key, kind: 'screenshot', contentType: 'image/png', byteSize: PNG.length }]
    const first = await submit(acme.pub, { text: 'Export to CSV drops the last column', identity: { externalUserId: 'sharer-1' }, attachments })
    const second = await submit(acme.pub, { text: 'The CSV export is missing a column', identity: { externalUserId: 'sharer-2' }, attachments })
    const third = await submit(acme.pub, { text: 'Exported columns are cut short', identity: { externalUserId: 'sharer-3' }, componentTarget: { name: 'ExportButton', screenshotKey: key } })
    const erase = async (externalUserId: string) => (await call(server.url, 'POST', '/v1/reporters/erase', { auth: acme.key, body: { externalUserId } })).body
    const download = async (url: string) => new Uint8Array(await (await fetch(url)).arrayBuffer())

    expect(await erase('sharer-1')).toEqual({ erased: 1 })
    expect((await get(acme, first)).status).toBe(404)
    expect(await sealed()).not.toBeNull()
    const kept = (await get(acme, second)).body
    expect(kept.attachments[0].key).toBe(key)
    expect(await download(kept.attachments[0].url)).toEqual(PNG)

    expect(await erase('sharer-2')).toEqual({ erased: 1 })
    const shot = (await get(acme, third)).body.componentTarget
    expect(shot.screenshotKey).toBe(key)
    expect(await download(shot.screenshotUrl)).toEqual(PNG)

    expect(await erase('sharer-3')).toEqual({ erased: 1 })
    expect(await sealed()).toBeNull()
    expect(await dbRows(server.ctx, 'SELECT key FROM upload_shares WHERE key = ?', [key])).toEqual([])
  })
})

/**
 * The processing thread (src/worker/thread-entry.ts + thread.ts) in a real server: reports are
 * sanitized and clustered there, on its own connection; triage by hand (similar, merge, unmerge) asks
 * its index; /readyz reads its health; a thread that dies is restarted and processing resumes; stop
 * hands back every lease. Test servers without an injected clock run this way by default, so the rest
 * of the suite exercises it too.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { join } from 'node:path'
import { rmSync } from 'node:fs'
import { currentLeaseOwner } from '../src/worker/lease-owner'
import { call, seedTenant, startTestServer, type Tenant, type TestServer } from './harness'
import { sqliteOf } from './sqlite-of'

// Near-verbatim repeats: what a new App merges automatically (docs/triage.md, the merge bar).
const PARAPHRASES = [
  'The checkout button does nothing when I click it on the payment page.',
  'Hi team, the checkout button does nothing when I click it on the payment page. Thanks!',
  'The checkout button does nothing when I click it on the payment page. Seen in Firefox.',
]
const UNRELATED = 'My invoice PDF downloads as an empty file from the billing settings.'

async function submit(srv: TestServer, t: Tenant, text: string): Promise<string> {
  const r = await call(srv.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text, url: 'https://shop.example/checkout/payment' } })
  expect(r.status).toBe(201)
  return r.body.id
}

/** Polls the report until `done` holds (at most 10 s); returns it. */
async function until(srv: TestServer, t: Tenant, id: string, done: (r: Record<string, unknown>) => boolean) {
  for (let i = 0; i < 200; i++) {
    const r = (await call(srv.url, 'GET', `/v1/feedback/${id}`, { auth: t.key })).body
    if (done(r)) return r
    await Bun.sleep(50)
  }
  throw new Error(`report ${id} did not get there in 10 s`)
}
// An error body (a read that failed while the thread restarted) is not "processed": keep polling.
const processed = (r: Record<string, unknown>) => typeof r.status === 'string' && r.status !== 'received' && r.status !== 'sanitizing' && !(r.status === 'sanitized' && r.duplicateOfId === null)

describe('the processing thread', () => {
  let srv: TestServer
  let t: Tenant
  beforeAll(async () => {
    srv = await startTestServer()
    t = await seedTenant(srv.admin)
  })
  afterAll(() => srv.close())

  test('is on by default: reports are sanitized and clustered on it, not by the HTTP thread\'s worker', async () => {
    expect(srv.services.processingThread).toBeDefined()
    const secret = await submit(srv, t, 'Password reset mail never arrives. Write to ana@example.com')
    const s = await until(srv, t, secret, processed)
    expect(s.status).toBe('awaiting_manual')
    expect(s.text).not.toContain('ana@example.com')
    const lead = await submit(srv, t, PARAPHRASES[0])
    expect((await until(srv, t, lead, processed)).status).toBe('awaiting_manual')
    const dups = [await submit(srv, t, PARAPHRASES[1]), await submit(srv, t, PARAPHRASES[2])]
    for (const d of dups) expect((await until(srv, t, d, processed)).duplicateOfId).toBe(lead)
    const again = await until(srv, t, lead, (r) => r.duplicateCount === 2)
    expect(again.consolidatedText).toContain('Firefox')
    // The HTTP thread's own worker never ran a `process` job: it claims only agent and upload jobs.
    expect(await srv.worker.tick()).toBe(0)
  })

  test('similar, merge and unmerge are answered by the thread\'s index', async () => {
    const lead = await submit(srv, t, 'Search on the help center returns nothing for any word.')
    const other = await submit(srv, t, UNRELATED)
    await until(srv, t, lead, processed)
    await until(srv, t, other, processed)

    const similar = await call(srv.url, 'GET', `/v1/feedback/${lead}/similar`, { auth: t.key })
    expect(similar.status).toBe(200)
    expect(similar.body.data.map((s: { id: string }) => s.id)).toContain(other)
    for (const s of similar.body.data) expect(s.score).toBeGreaterThanOrEqual(0)

    const merged = await call(srv.url, 'POST', `/v1/feedback/${other}/merge`, { auth: t.key, body: { leadId: lead } })
    expect(merged.status).toBe(200)
    expect(merged.body.duplicateOfId).toBe(lead)
    expect((await until(srv, t, lead, (r) => r.duplicateCount === 1)).duplicateCount).toBe(1)

    const unmerged = await call(srv.url, 'POST', `/v1/feedback/${other}/unmerge`, { auth: t.key })
    expect(unmerged.status).toBe(200)
    expect(unmerged.body.duplicateOfId).toBeNull()
    // Its `process` job was queued with the unmerge and the thread moved it on as a lead again.
    const back = await until(srv, t, other, (r) => r.status === 'awaiting_manual')
    expect(back.duplicateOfId).toBeNull()
    expect((await call(srv.url, 'GET', `/v1/feedback/${lead}`, { auth: t.key })).body.duplicateCount).toBe(0)
  })

  test('a PATCH right after a submission never loses a race with the thread processing it', async () => {
    const topics = ['cart', 'login', 'search', 'invoice', 'avatar', 'export', 'calendar', 'billing', 'wishlist', 'coupon']
    const results = await Promise.all(
      Array.from({ length: 40 }, async (_, i) => {
        const id = await submit(srv, t, `Race ${i}: the ${topics[i % topics.length]} screen ${i} shows error code E${1000 + i * 37} on save.`)
        const r = await call(srv.url, 'PATCH', `/v1/feedback/${id}`, { auth: t.key, body: { status: 'archived' } })
        return { id, status: r.status, code: r.body?.error?.code }
      }),
    )
    for (const r of results) expect([r.status, r.code]).toEqual([200, undefined])
    for (const r of results) expect((await until(srv, t, r.id, (x) => x.status === 'archived')).status).toBe('archived')
  })

  test('a thread that dies is reported by /readyz, restarted, and processing resumes', async () => {
    expect((await call(srv.url, 'GET', '/readyz')).status).toBe(200)
    const thread = srv.services.processingThread as unknown as { thread: Worker | undefined }
    thread.thread!.terminate()
    let down = await call(srv.url, 'GET', '/readyz')
    for (let i = 0; i < 40 && down.status === 200; i++) {
      await Bun.sleep(25)
      down = await call(srv.url, 'GET', '/readyz')
    }
    expect(down.status).toBe(503)
    expect(JSON.stringify(down.body)).toContain('processing thread')
    let ready = 0
    for (let i = 0; i < 100 && ready !== 200; i++) {
      await Bun.sleep(50)
      ready = (await call(srv.url, 'GET', '/readyz')).status
    }
    expect(ready).toBe(200)
    const id = await submit(srv, t, 'After the restart: the wishlist heart icon does not save the product.')
    expect((await until(srv, t, id, processed)).status).toBe('awaiting_manual')
  })

  test('a restarted thread takes back at once the leases its dead predecessor held (not after 60 s)', async () => {
    const thread = srv.services.processingThread as unknown as { thread: Worker | undefined }
    thread.thread!.terminate()
    // While it is down: a report whose job the dead thread "had claimed" a moment before it died.
    const id = await submit(srv, t, 'Leased by the dead thread: the coupon field rejects every code.')
    const owner = `${currentLeaseOwner()}:processing`
    sqliteOf(srv.ctx).query("UPDATE jobs SET lease_until = ?, lease_owner = ? WHERE feedback_id = ? AND kind = 'process'").run(Date.now() + 60_000, owner, id)
    // Restarted after ~1 s; processed well before the 60 s lease would have run out.
    expect((await until(srv, t, id, processed)).status).toBe('awaiting_manual')
  })
})

test('stop lets the thread finish and hands back every lease; a backlog left behind is processed after a restart', async () => {
  const srv = await startTestServer()
  const t = await seedTenant(srv.admin)
  const ids = await Promise.all(Array.from({ length: 60 }, (_, i) => submit(srv, t, `Report ${i}: the ${['cart', 'search', 'login'][i % 3]} page shows error ${i * 7}.`)))
  await srv.stop()
  const db = new Database(join(srv.dataDir, 'fixloop.db'))
  expect((db.query('SELECT COUNT(*) AS n FROM jobs WHERE lease_until IS NOT NULL').get() as { n: number }).n).toBe(0)
  const left = (db.query("SELECT COUNT(*) AS n FROM jobs WHERE kind = 'process'").get() as { n: number }).n
  const unprocessed = (db.query("SELECT COUNT(*) AS n FROM feedback WHERE status IN ('received', 'sanitizing')").get() as { n: number }).n
  // Every report not yet processed still has its job: nothing acknowledged was dropped.
  expect(left).toBe(unprocessed)
  db.close()
  const { startServer } = await import('../src/runtime/server')
  const { loadConfig } = await import('../src/config')
  const { Logger } = await import('../src/core/logger')
  const again = await startServer(loadConfig({ host: '127.0.0.1', port: '0', dataDir: srv.dataDir }, { FIXLOOP_LOG_LEVEL: 'silent' }), { log: new Logger('silent') })
  try {
    for (const id of ids) {
      for (let i = 0; i < 200; i++) {
        const r = (await call(again.url, 'GET', `/v1/feedback/${id}`, { auth: t.key })).body
        if (r.status === 'awaiting_manual' || r.duplicateOfId) break
        await Bun.sleep(50)
      }
    }
    const db2 = new Database(join(srv.dataDir, 'fixloop.db'))
    expect((db2.query("SELECT COUNT(*) AS n FROM feedback WHERE status IN ('received', 'sanitizing')").get() as { n: number }).n).toBe(0)
    db2.close()
  } finally {
    await again.stop()
    rmSync(srv.dataDir, { recursive: true, force: true })
  }
})

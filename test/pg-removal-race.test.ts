/**
 * Two erasures and the report retention at once, on a real PostgreSQL (cluster mode): each removal takes
 * the App's merge lock, then every row it writes in id order, and the removal log's lock last
 * (src/db/pg/reporters.ts, src/db/pg/removal-log.ts). The reporters' clusters are mixed on purpose (a lead
 * of one reporter with duplicates of the other and of expired reports, and the other way round), so each
 * removal hands on and recounts rows another one removes. Every call answers 200, PostgreSQL breaks no
 * deadlock, the counts add up to what went, each report once, the log numbers the removed ids 1..n without
 * holes, and submissions meanwhile are answered (the locks are held a batch at a time, never the whole run).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Pool } from 'pg'
import { openPool } from '../src/db/pg/client-options'
import { call, seedTenant, startTestServer, type Tenant, type TestServer } from './harness'
import { clusterEnv } from './cluster-env'
import { pgMissingReason, startPostgres, type PgServer } from './pg-server'

const skip = pgMissingReason()
if (skip) console.warn(`pg-removal-race: skipped: ${skip}`)

const CLUSTERS = 240
const DAY = 24 * 3600_000

describe.skipIf(Boolean(skip))('two erasures and the retention at once (real PostgreSQL)', () => {
  let pg: PgServer
  let server: TestServer
  let t: Tenant
  let pool: Pool

  beforeAll(async () => {
    pg = await startPostgres()
    const env = await clusterEnv(await pg.createDatabase('removalrace', { migrated: true }))
    server = await startTestServer({ ...env, FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000' })
    t = await seedTenant(server.admin, { retentionDays: 7 }, 'Race')
    pool = openPool(env.FIXLOOP_DATABASE_URL, 2)
  }, 60_000)

  afterAll(async () => {
    await server?.close().catch(() => {})
    await pool?.end()
    await pg?.stop()
  })

  const deadlocks = async () => Number((await pool.query<{ n: string }>('SELECT deadlocks AS n FROM pg_stat_database WHERE datname = current_database()')).rows[0].n)

  /**
   * CLUSTERS clusters of four: a lead and three duplicates, one of each of X, Y, an expired reporter's and
   * a bystander's (who stays), the lead's reporter turning round. Every other X report is expired too, so
   * the retention and X's erasure want the same rows.
   */
  async function seed(): Promise<{ x: number; y: number; old: number; bystander: string[] }> {
    const now = Date.now()
    const sec = Math.floor(now / 1000) - 100
    const rows: { id: string; uid: string; lead: string | null; created: number }[] = []
    const who = ['x', 'y', 'old', 'bystander']
    for (let k = 0; k < CLUSTERS; k++) {
      const order = [...who.slice(k % 3), ...who.slice(0, k % 3)].filter((w) => w !== 'bystander')
      order.push('bystander')
      const ids = order.map((_, i) => sec.toString(16).padStart(8, '0') + (k * 4 + i).toString(16).padStart(16, '0'))
      order.forEach((uid, i) => {
        const expired = uid === 'old' || (uid === 'x' && k % 2 === 0)
        rows.push({ id: ids[i], uid, lead: i === 0 ? null : ids[0], created: expired ? now - 30 * DAY + k : now - 1000 + k })
      })
    }
    await pool.query(
      `INSERT INTO feedback (id, org_id, app_id, status, version, text, submitted_mode, external_user_id, redactions, created_at, updated_at, duplicate_of_id, duplicate_count)
       SELECT r.id, $1, $2, CASE WHEN r.lead IS NULL THEN 'awaiting_manual' ELSE 'sanitized' END, 3, 'Report ' || r.id, 'public', r.uid, '{}', r.created, r.created, r.lead,
         CASE WHEN r.lead IS NULL THEN 3 ELSE 0 END
       FROM unnest($3::text[], $4::text[], $5::text[], $6::bigint[]) AS r(id, uid, lead, created)`,
      [t.orgId, t.appId, rows.map((r) => r.id), rows.map((r) => r.uid), rows.map((r) => r.lead), rows.map((r) => r.created)],
    )
    const count = (uid: string) => rows.filter((r) => r.uid === uid).length
    return { x: count('x'), y: count('y'), old: count('old'), bystander: rows.filter((r) => r.uid === 'bystander').map((r) => r.id) }
  }

  test('every call answers 200, no deadlock, the counts add up, the log numbers each removed report once without holes', async () => {
    const seeded = await seed()
    const xExpiredOnly = seeded.x / 2
    const before = await deadlocks()
    let submitting = true
    const intake: { status: number; ms: number }[] = []
    const submitter = (async () => {
      for (let i = 0; submitting; i++) {
        const began = performance.now()
        const r = await call(server.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: `Meanwhile ${i}: ${crypto.randomUUID()}`, identity: { externalUserId: 'meanwhile' } } })
        intake.push({ status: r.status, ms: performance.now() - began })
        await Bun.sleep(10)
      }
    })()
    const erase = (uid: string) => call(server.url, 'POST', '/v1/reporters/erase', { auth: t.key, body: { externalUserId: uid } })
    const [ex, ey, swept] = await Promise.all([erase('x'), erase('y'), server.services.reportRetention.sweep()])
    submitting = false
    await submitter

    expect([ex.status, ey.status]).toEqual([200, 200])
    // Y alone is Y's; X's expired half went to whichever got there first, the rest of X to its erasure.
    expect(ey.body.erased).toBe(seeded.y)
    expect(ex.body.erased).toBeGreaterThanOrEqual(seeded.x - xExpiredOnly)
    expect(ex.body.erased + ey.body.erased + swept).toBe(seeded.x + seeded.y + seeded.old)
    const left = (await pool.query<{ uid: string; n: string }>("SELECT external_user_id AS uid, COUNT(*) AS n FROM feedback WHERE external_user_id IN ('x', 'y', 'old') GROUP BY 1")).rows
    expect(left).toEqual([])

    // The log: 1..n in order, each removed report once.
    const log = (await pool.query<{ seq: string; id: string }>('SELECT seq, feedback_id AS id FROM removed_reports ORDER BY seq')).rows
    expect(log.map((r) => Number(r.seq))).toEqual(Array.from({ length: log.length }, (_, i) => i + 1))
    expect(new Set(log.map((r) => r.id)).size).toBe(log.length)
    expect(log.length).toBe(seeded.x + seeded.y + seeded.old)

    // The bystanders' clusters: every one led by a surviving report, counted right.
    const bad = await pool.query(
      `SELECT f.id FROM feedback f WHERE f.external_user_id = 'bystander' AND (
         (f.duplicate_of_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM feedback l WHERE l.id = f.duplicate_of_id AND l.duplicate_of_id IS NULL))
         OR (f.duplicate_of_id IS NULL AND f.duplicate_count <> (SELECT COUNT(*) FROM feedback d WHERE d.duplicate_of_id = f.id)))`,
    )
    expect(bad.rows).toEqual([])
    expect(Number((await pool.query("SELECT COUNT(*) AS n FROM feedback WHERE external_user_id = 'bystander'")).rows[0].n)).toBe(seeded.bystander.length)

    // Intake was answered all along.
    expect(intake.length).toBeGreaterThan(0)
    expect(intake.filter((r) => r.status !== 201)).toEqual([])
    await Bun.sleep(500)
    expect((await deadlocks()) - before).toBe(0)
    console.log(`pg-removal-race: X ${ex.body.erased}, Y ${ey.body.erased}, retention ${swept}; ${intake.length} submissions, slowest ${Math.round(Math.max(...intake.map((r) => r.ms)))} ms`)
  }, 120_000)
})

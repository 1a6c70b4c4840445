/**
 * A reporter's erasure racing the processing engine's clustering of that reporter's newest report, on
 * PostgreSQL. The erasure takes the App's merge lock, then every row it writes in id order
 * (src/db/pg/reporters.ts); the one-report-at-a-time clustering locked its report first and its planned
 * lead later (src/worker/steps/process-feedback-pg.ts), and a lead is older than its new duplicate, so it
 * sorts first: the erasure held the lead and waited for the report, the clustering held the report and
 * waited for the lead. PostgreSQL broke the cycle after its deadlock_timeout by rolling one back: the
 * erasure answered 503 (Retry-After 1), or the job retried. The clustering now locks the report and its
 * lead together, in id order.
 *
 * The reports arrive in a stream (so the engine clusters one at a time, as under intake), and a trigger
 * makes the clustering's sanitizing write slow (a slow disk), so each round's erasure surely arrives
 * while the clustering holds the report and has not yet locked its lead. Real PostgreSQL.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Pool } from 'pg'
import { openPool } from '../src/db/pg/client-options'
import { call, eventually, seedTenant, startTestServer, type Tenant, type TestServer } from './harness'
import { clusterEnv } from './cluster-env'
import { pgMissingReason, startPostgres, type PgServer } from './pg-server'

const skip = pgMissingReason()
if (skip) console.warn(`pg-erase-cluster-deadlock: skipped: ${skip}`)

const ROUNDS = 4
const TEXT = 'The checkout button does nothing when I click it on the payment page.'

describe.skipIf(Boolean(skip))("an erasure racing the clustering of the reporter's report (real PostgreSQL)", () => {
  let pg: PgServer
  let server: TestServer
  let t: Tenant
  let pool: Pool

  beforeAll(async () => {
    pg = await startPostgres()
    const env = await clusterEnv(await pg.createDatabase('erasecluster', { migrated: true }))
    server = await startTestServer({ ...env, FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000' })
    t = await seedTenant(server.admin)
    pool = openPool(env.FIXLOOP_DATABASE_URL, 2)
    // The sanitizing write of a report marked "slow" takes 0.4 s (its row locked meanwhile): less than
    // PostgreSQL's deadlock_timeout (1 s), so the erasure, waiting first, is the one it rolled back.
    await pool.query(`CREATE FUNCTION test_slow_sanitize() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF OLD.redactions IS NULL AND NEW.redactions IS NOT NULL AND NEW.text LIKE '%(slow)%' THEN PERFORM pg_sleep(0.4); END IF; RETURN NEW; END $$`)
    await pool.query('CREATE TRIGGER test_slow_sanitize BEFORE UPDATE ON feedback FOR EACH ROW EXECUTE FUNCTION test_slow_sanitize()')
  }, 60_000)

  afterAll(async () => {
    await server?.close().catch(() => {})
    await pool?.end()
    await pg?.stop()
  })

  const deadlocks = async () => Number((await pool.query<{ n: string }>('SELECT deadlocks AS n FROM pg_stat_database WHERE datname = current_database()')).rows[0].n)
  const get = async (id: string) => (await call(server.url, 'GET', `/v1/feedback/${id}`, { auth: t.key })).body

  test('every erasure answers 200 with both reports erased; PostgreSQL breaks no deadlock', async () => {
    const before = await deadlocks()
    const answers: { status: number; body: unknown }[] = []
    // Another reporter's reports keep arriving all along: intake stays busy, so the engine clusters one at a time.
    let streaming = true
    const stream = (async () => {
      for (let i = 0; streaming; i++) {
        await call(server.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: `Unrelated report ${i}: ${crypto.randomUUID()}`, identity: { externalUserId: 'bystander' } } })
        await Bun.sleep(20)
      }
    })()
    try {
      for (let round = 0; round < ROUNDS; round++) {
        const uid = `reporter-${round}-${crypto.randomUUID()}`
        const lead = await call(server.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: TEXT, identity: { externalUserId: uid } } })
        expect(lead.status).toBe(201)
        await eventually(async () => (await get(lead.body.id)).processedAt !== null, 20_000)
        // The same report again (a double click): clustered onto the first, its sanitizing write slow.
        const dup = await call(server.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: `${TEXT} Thanks! (slow)`, identity: { externalUserId: uid } } })
        expect(dup.status).toBe(201)
        // The clustering holds the new report's row (its write sleeps in the trigger).
        await eventually(async () => ((await pool.query("SELECT 1 FROM pg_stat_activity WHERE wait_event = 'PgSleep' AND datname = current_database()")).rows.length > 0 ? true : undefined), 20_000)
        const erase = await call(server.url, 'POST', '/v1/reporters/erase', { auth: t.key, body: { externalUserId: uid } })
        answers.push({ status: erase.status, body: erase.body })
        await eventually(async () => (await get(dup.body.id)).error?.code === 'not_found' || (erase.status !== 200 ? true : undefined), 20_000)
      }
    } finally {
      streaming = false
      await stream
    }
    // Before: 503 internal_error (the erasure rolled back to end the deadlock), or the clustering rolled back and retried.
    expect(answers).toEqual(Array.from({ length: ROUNDS }, () => ({ status: 200, body: { erased: 2 } })))
    // The backends report their counts as they go; the server's pool keeps its connections, so wait for the count to settle.
    await Bun.sleep(500)
    expect((await deadlocks()) - before).toBe(0)
  }, 120_000)
})

/**
 * A large erasure on PostgreSQL took ~1.9 s per 1,000 reports in an Org of 200,000 (bench/pg-erase.ts):
 * each batch read the reporter's ids again, a pass over the Org's reports (nothing indexes a reporter),
 * and each removed lead of a cluster cost four statements of its own (its successor, two updates, whether
 * it waits). The ids are now read once per ERASE_READ and the promotion is set-based: a handful of
 * statements per batch whatever the number of leads in it. Counted with pg_stat_statements on a real
 * PostgreSQL (this file's own server, restarted once to preload it); the clusters still pass on.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Pool } from 'pg'
import { openPool } from '../src/db/pg/client-options'
import { PG_ERASE_BATCH as ERASE_BATCH } from '../src/db/pg/reporters'
import { call, seedTenant, startTestServer, type Tenant, type TestServer } from './harness'
import { clusterEnv } from './cluster-env'
import { pgMissingReason, startOwnPostgres, type PgServer } from './pg-server'

const skip = pgMissingReason()
if (skip) console.warn(`pg-erase-statements: skipped: ${skip}`)

const UID = 'erin-statements'
/**
 * Three batches of PostgreSQL's 1,000 (ReportersRepo.eraseBatch; with SQLite's 200 it was 11 batches of ~41
 * statements); the newest batch's reports all lead a cluster of another reporter's duplicate.
 */
const REPORTS = 2_050
const BATCHES = 3

describe.skipIf(Boolean(skip))('an erasure on PostgreSQL: statements per batch (real PostgreSQL, pg_stat_statements)', () => {
  let pg: PgServer
  let server: TestServer
  let t: Tenant
  let pool: Pool

  beforeAll(async () => {
    pg = await startOwnPostgres()
    const admin = openPool(pg.adminUrl, 1)
    await admin.query("ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'")
    await admin.end()
    await pg.restart()
    const env = await clusterEnv(await pg.createDatabase('erasestatements', { migrated: true }))
    // The workers off: their statements (routing the promoted duplicates) are not the erasure's.
    server = await startTestServer({ ...env, FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000' }, { worker: { autoStart: false } })
    t = await seedTenant(server.admin)
    pool = openPool(env.FIXLOOP_DATABASE_URL, 2)
    await pool.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements')
  }, 90_000)

  afterAll(async () => {
    await server?.close().catch(() => {})
    await pool?.end()
    await pg?.stop()
  })

  /** Calls of the statements whose text contains `fragment`, in this database, since the reset. */
  const calls = async (fragment: string) =>
    Number(
      (
        await pool.query<{ n: string }>(
          `SELECT COALESCE(sum(calls), 0) AS n FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND query LIKE '%' || $1 || '%'`,
          [fragment],
        )
      ).rows[0].n,
    )

  test(`${REPORTS} reports in ${BATCHES} batches, ${ERASE_BATCH} of them leads: the ids read twice, the promotion a few statements a batch`, async () => {
    const now = Math.floor(Date.now() / 1000)
    // The reporter's reports, oldest first; the newest ERASE_BATCH each lead a duplicate of someone else's.
    const first = now - 10 - REPORTS
    const newest = REPORTS - ERASE_BATCH
    await pool.query(
      `INSERT INTO feedback (id, org_id, app_id, status, version, text, submitted_mode, external_user_id, redactions, created_at, updated_at, duplicate_count)
       SELECT lpad(to_hex(${first} + g), 8, '0') || lpad(to_hex(g), 16, '0'), $1, $2, 'awaiting_manual', 3, 'Report ' || g, 'public', $3, '{}', (${first} + g) * 1000::bigint, (${first} + g) * 1000::bigint,
         CASE WHEN g >= ${newest} THEN 1 ELSE 0 END
       FROM generate_series(0, ${REPORTS - 1}) g`,
      [t.orgId, t.appId, UID],
    )
    await pool.query(
      `INSERT INTO feedback (id, org_id, app_id, status, version, text, submitted_mode, external_user_id, redactions, created_at, updated_at, duplicate_of_id)
       SELECT lpad(to_hex(${now}), 8, '0') || lpad(to_hex(1000000 + g), 16, '0'), $1, $2, 'sanitized', 3, 'Same bug ' || g, 'public', 'someone-else', '{}', ${now} * 1000::bigint, ${now} * 1000::bigint,
         lpad(to_hex(${first} + g), 8, '0') || lpad(to_hex(g), 16, '0')
       FROM generate_series(${newest}, ${REPORTS - 1}) g`,
      [t.orgId, t.appId],
    )

    await pool.query('SELECT pg_stat_statements_reset()')
    const r = await call(server.url, 'POST', '/v1/reporters/erase', { auth: t.key, body: { externalUserId: UID } })
    expect(r.status).toBe(200)
    expect(r.body.erased).toBe(REPORTS)

    // The reporter's ids: one read of them all, one that finds none left (it was one per batch and one more: 4).
    expect(await calls('ORDER BY id COLLATE "C" DESC LIMIT')).toBe(2)
    // The promotion: each statement once per batch that had leads (it was once per lead: 200 each).
    expect(await calls('SET duplicate_of_id')).toBeLessThanOrEqual(2 * BATCHES)
    expect(await calls('MIN(id)')).toBeLessThanOrEqual(BATCHES)
    // And the clusters passed on: each duplicate is a lead of its own now, queued to be routed.
    const { rows } = await pool.query<{ leads: string; queued: string }>(
      `SELECT COUNT(*) FILTER (WHERE duplicate_of_id IS NULL AND duplicate_count = 0) AS leads,
         COUNT(*) FILTER (WHERE EXISTS (SELECT 1 FROM jobs j WHERE j.kind = 'process' AND j.feedback_id = feedback.id)) AS queued
       FROM feedback WHERE external_user_id = 'someone-else'`,
    )
    expect({ leads: Number(rows[0].leads), queued: Number(rows[0].queued) }).toEqual({ leads: ERASE_BATCH, queued: ERASE_BATCH })
    expect(Number((await pool.query('SELECT COUNT(*) AS n FROM feedback WHERE external_user_id = $1', [UID])).rows[0].n)).toBe(0)
  }, 120_000)

  test(`the report retention deletes in the same batches: ${REPORTS} expired reports in ${BATCHES}`, async () => {
    const kept = await seedTenant(server.admin, { retentionDays: 1 }, 'Kept a day')
    const tenDaysAgo = Math.floor(Date.now() / 1000) - 10 * 86_400
    await pool.query(
      `INSERT INTO feedback (id, org_id, app_id, status, version, text, submitted_mode, redactions, created_at, updated_at)
       SELECT lpad(to_hex(${tenDaysAgo} + g), 8, '0') || lpad(to_hex(2000000 + g), 16, '0'), $1, $2, 'awaiting_manual', 3, 'Old report ' || g, 'public', '{}', (${tenDaysAgo} + g) * 1000::bigint, (${tenDaysAgo} + g) * 1000::bigint
       FROM generate_series(0, ${REPORTS - 1}) g`,
      [kept.orgId, kept.appId],
    )
    await pool.query('SELECT pg_stat_statements_reset()')
    expect(await server.services.reportRetention.sweep()).toBe(REPORTS)
    // One read of expired ids per batch (with SQLite's 200 it was 11).
    expect(await calls('created_at < $3 ORDER BY id COLLATE "C" LIMIT')).toBe(BATCHES)
    expect(Number((await pool.query('SELECT COUNT(*) AS n FROM feedback WHERE app_id = $1', [kept.appId])).rows[0].n)).toBe(0)
  }, 120_000)
})

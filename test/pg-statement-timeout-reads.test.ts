/**
 * FIXLOOP_PG_STATEMENT_TIMEOUT_SECONDS bounds a request's statement; a read whose length grows with the
 * data by design is not one. An App's similarity index is built from its newest 100,000 reports in one
 * read (src/db/pg/dedup.ts loadApp): ~70 MB/s here, so a big App with chatty console logs (up to 500 KB a
 * report) passed the default 20 s. Ended by PostgreSQL (57014, "unavailable"), the build failed, and every
 * report of the App waited, deferred again and again without an error. Real PostgreSQL, the server pool's
 * setting at a quarter of the read's own time.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Pool } from 'pg'
import { openPool } from '../src/db/pg/client-options'
import { pgStorage } from '../src/db/pg/storage'
import { createPgClusterRepo } from '../src/db/pg/dedup'
import type { PgLifecycle } from '../src/db/pg/lifecycle'
import { pgMissingReason, startPostgres, type PgServer } from './pg-server'

const skip = pgMissingReason()
if (skip) console.warn(`pg-statement-timeout-reads: skipped: ${skip}`)

const REPORTS = 40_000

describe.skipIf(Boolean(skip))('reads that grow with the data run past statement_timeout (real PostgreSQL)', () => {
  let server: PgServer
  let url: string
  let setup: Pool

  beforeAll(async () => {
    server = await startPostgres()
    url = await server.createDatabase('stmt', { migrated: true })
    setup = openPool(url, 1)
    await setup.query("INSERT INTO orgs (id, name, created_at) VALUES ('org_1', 'o', 1)")
    await setup.query("INSERT INTO apps (id, org_id, slug, name, public_key, signing_secret_enc, created_at, updated_at) VALUES ('app_1', 'org_1', 's', 'n', 'pk', 'x', 1, 1)")
    // Clustered reports (redactions set, no process job) with ~8 KB of console logs each: ~360 MB to read.
    await setup.query(
      `INSERT INTO feedback (id, org_id, app_id, status, text, submitted_mode, created_at, updated_at, redactions, console_logs)
       SELECT 'fb_' || lpad(i::text, 9, '0'), 'org_1', 'app_1', 'new', 'checkout button fails ' || md5(i::text), 'public', i, i, '[]',
              '[' || repeat('{"level":"error","message":"TypeError: cannot read properties of undefined ' || md5(i::text) || '"},', 80) || '{"level":"log","message":"x"}]'
       FROM generate_series(1, ${REPORTS}) i`,
    )
    await setup.query('ANALYZE feedback')
  }, 120_000)

  afterAll(async () => {
    await setup?.end()
    await server?.stop()
  })

  test("an App's index is read whole on the server's pool with a statement_timeout shorter than the read", async () => {
    // The bound is set from the read's own time on this machine (a fixed 1 s passed or failed with the
    // machine's speed): a quarter of it, so the read is surely longer than the bound.
    const started = performance.now()
    await setup.query("SELECT id, text, console_logs FROM feedback WHERE app_id = 'app_1'")
    const readMs = performance.now() - started
    expect(readMs).toBeGreaterThan(40)
    const boundMs = Math.floor(readMs / 4)
    const pool = openPool(url, 2, boundMs)
    try {
      const repo = createPgClusterRepo(pgStorage(pool), {} as PgLifecycle)
      // Before: "canceling statement due to statement timeout" (57014), the index never built.
      const rows = await repo.loadApp('app_1', 100_000)
      expect(rows.length).toBe(REPORTS)
      // The bound still holds for the pool's other statements.
      await expect(pool.query(`SELECT pg_sleep(${(boundMs * 3) / 1000})`)).rejects.toThrow(/statement timeout/)
    } finally {
      await pool.end()
    }
  }, 120_000)
})

/**
 * The purge of spent proof-of-work solutions (AbuseRepo.purgePow) was one DELETE of every expired row.
 * After a long flood (a solution a request, each kept until its challenge expires) that statement passed
 * the server pool's statement_timeout (FIXLOOP_PG_STATEMENT_TIMEOUT_SECONDS, 20 s by default), PostgreSQL
 * rolled it back whole, and every minute's purge started over on a table that only grew. It now deletes
 * in bounded batches. Real PostgreSQL; a trigger holds every statement to one batch of rows.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Pool } from 'pg'
import { openPool } from '../src/db/pg/client-options'
import { pgStorage } from '../src/db/pg/storage'
import { createPgAbuseRepo } from '../src/db/pg/abuse'
import { POW_PURGE_BATCH } from '../src/abuse/abuse-repo'
import { pgMissingReason, startPostgres, type PgServer } from './pg-server'

const skip = pgMissingReason()
if (skip) console.warn(`pg-pow-purge: skipped: ${skip}`)

const EXPIRED = 400_000
const LIVE = 1_000

describe.skipIf(Boolean(skip))('the purge of spent proofs of work in bounded statements (real PostgreSQL)', () => {
  let server: PgServer
  let url: string
  let setup: Pool

  beforeAll(async () => {
    server = await startPostgres()
    url = await server.createDatabase('powpurge', { migrated: true })
    setup = openPool(url, 1)
    // A flood's spent solutions (expired at 1..EXPIRED) and a few still held (far in the future).
    await setup.query(`INSERT INTO pow_spent (signature, expires_at) SELECT md5(i::text) || md5((-i)::text), i FROM generate_series(1, ${EXPIRED}) i`)
    await setup.query(`INSERT INTO pow_spent (signature, expires_at) SELECT 'live' || i, 1e12 FROM generate_series(1, ${LIVE}) i`)
    await setup.query('ANALYZE pow_spent')
  }, 120_000)

  afterAll(async () => {
    await setup?.end()
    await server?.stop()
  })

  test('a table of many expired rows is emptied of them by statements each far smaller than one DELETE of them all', async () => {
    // What a statement_timeout cancels is one long statement, so the property is the size of each one: a
    // statement-level trigger sees every DELETE's rows and refuses any over one batch. Timing the bound
    // against the one DELETE's own time (a quarter, a half, then three quarters of it) still failed on a
    // loaded CI machine whenever one batch stalled behind the other files' work; rows per statement do not
    // depend on the machine. Before batching: the one DELETE of 400,000 rows is refused, nothing deleted.
    await setup.query(`CREATE FUNCTION pow_purge_statement_bound() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF (SELECT COUNT(*) FROM gone) > ${POW_PURGE_BATCH} THEN RAISE EXCEPTION 'one statement deleted more than a batch'; END IF;
        INSERT INTO pow_purge_statements SELECT COUNT(*) FROM gone;
        RETURN NULL;
      END $$`)
    await setup.query('CREATE TABLE pow_purge_statements (deleted int NOT NULL)')
    await setup.query(`CREATE TRIGGER pow_purge_statement_bound AFTER DELETE ON pow_spent REFERENCING OLD TABLE AS gone
      FOR EACH STATEMENT EXECUTE FUNCTION pow_purge_statement_bound()`)
    // The trigger is what the test relies on: one DELETE of them all is refused (and rolled back).
    const client = await setup.connect()
    try {
      await client.query('BEGIN')
      await expect(client.query(`DELETE FROM pow_spent WHERE expires_at < ${EXPIRED + 1}`)).rejects.toThrow('more than a batch')
      await client.query('ROLLBACK')
    } finally {
      client.release()
    }
    const pool = openPool(url, 2)
    try {
      const repo = createPgAbuseRepo(pgStorage(pool))
      expect(await repo.purgePow(EXPIRED + 1)).toBe(EXPIRED)
      const left = await setup.query<{ n: number }>('SELECT COUNT(*)::int AS n FROM pow_spent')
      expect(left.rows[0].n).toBe(LIVE)
      const statements = await setup.query<{ n: number; most: number }>('SELECT COUNT(*)::int AS n, MAX(deleted)::int AS most FROM pow_purge_statements')
      expect(statements.rows[0].most).toBe(POW_PURGE_BATCH)
      expect(statements.rows[0].n).toBe(Math.ceil(EXPIRED / POW_PURGE_BATCH) + (EXPIRED % POW_PURGE_BATCH === 0 ? 1 : 0))
    } finally {
      await pool.end()
    }
  }, 120_000)
})

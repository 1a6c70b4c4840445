/**
 * The purge of spent proof-of-work solutions (AbuseRepo.purgePow) was one DELETE of every expired row.
 * After a long flood (a solution a request, each kept until its challenge expires) that statement passed
 * the server pool's statement_timeout (FIXLOOP_PG_STATEMENT_TIMEOUT_SECONDS, 20 s by default), PostgreSQL
 * rolled it back whole, and every minute's purge started over on a table that only grew. It now deletes
 * in bounded batches. Real PostgreSQL, the pool's bound set at three quarters of the one DELETE's own time.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Pool } from 'pg'
import { openPool } from '../src/db/pg/client-options'
import { pgStorage } from '../src/db/pg/storage'
import { createPgAbuseRepo } from '../src/db/pg/abuse'
import { pgMissingReason, startPostgres, type PgServer } from './pg-server'

const skip = pgMissingReason()
if (skip) console.warn(`pg-pow-purge: skipped: ${skip}`)

const EXPIRED = 400_000
const LIVE = 1_000

describe.skipIf(Boolean(skip))('the purge of spent proofs of work under statement_timeout (real PostgreSQL)', () => {
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

  test('a table of many expired rows is emptied of them with a statement_timeout shorter than one DELETE of them all', async () => {
    // The bound from the single DELETE's own time on this machine (rolled back): three quarters of the faster
    // of two runs. A batch is 1/80 of the rows, so it has ~60 times that; a quarter of one run, then half of
    // the faster of two, each left a loaded CI machine's batch over the bound once (a batch stalled behind
    // the other files' work), and the faster of two keeps the one DELETE of them all over it.
    const client = await setup.connect()
    let deleteMs = Infinity
    try {
      for (let run = 0; run < 2; run++) {
        await client.query('BEGIN')
        const started = performance.now()
        await client.query(`DELETE FROM pow_spent WHERE expires_at < ${EXPIRED + 1}`)
        deleteMs = Math.min(deleteMs, performance.now() - started)
        await client.query('ROLLBACK')
      }
    } finally {
      client.release()
    }
    expect(deleteMs).toBeGreaterThan(100)
    const boundMs = Math.floor(deleteMs * 0.75)
    const pool = openPool(url, 2, boundMs)
    try {
      const repo = createPgAbuseRepo(pgStorage(pool))
      // Before: "canceling statement due to statement timeout" (57014), nothing deleted.
      expect(await repo.purgePow(EXPIRED + 1)).toBe(EXPIRED)
      const left = await setup.query<{ n: number }>('SELECT COUNT(*)::int AS n FROM pow_spent')
      expect(left.rows[0].n).toBe(LIVE)
    } finally {
      await pool.end()
    }
  }, 120_000)
})

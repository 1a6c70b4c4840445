/**
 * The cluster's reads of the jobs under a lease on a real PostgreSQL (src/db/pg/nodes.ts): the
 * maintenance node's dead-node sweep, every beat, and a partition's hand-over. Both filter on
 * `lease_until`, which no index held: each read every queued job (a sequential scan, 39 ms and 154 ms at
 * 200k queued jobs, bench/README "Jobs under a lease"). jobs_leased_idx holds only the leased few, so
 * both stay one index range however long the backlog is. The results are checked beside the plans.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Pool } from 'pg'
import { openPool } from '../src/db/pg/client-options'
import { createPgNodesRepo, FREE_DEAD_JOBS, IN_HAND, partitionsInHand } from '../src/db/pg/nodes'
import { pgStorage } from '../src/db/pg/storage'
import { sharedPostgres } from './dialects'
import { pgMissingReason } from './pg-server'

const skip = pgMissingReason()
if (skip) console.warn(`pg-lease-plans: skipped: ${skip}`)

/** Queued jobs, none leased: a backlog the sweep and the hand-over must not read. */
const QUEUED = 30_000
/** Jobs in hand: every 100th App's job, held by node-a's processing worker. */
const LEASED_APPS = Array.from({ length: 30 }, (_, i) => `app${i * 100}`)

describe.skipIf(Boolean(skip))('reads of the jobs under a lease (real PostgreSQL)', () => {
  let pool: Pool
  beforeAll(async () => {
    const pg = await sharedPostgres()
    pool = openPool(await pg.createDatabase('leaseplans', { migrated: true }), 2)
    const now = Date.now()
    for (let i = 0; i < QUEUED; i += 5000) {
      const rows: string[] = []
      for (let j = i; j < i + 5000; j++) rows.push(`('process', 'f${j}', 'app${j % 3000}', ${now - 1000}, ${now})`)
      await pool.query(`INSERT INTO jobs (kind, feedback_id, app_id, run_after, created_at) VALUES ${rows.join(',')}`)
    }
    await pool.query(`UPDATE jobs SET lease_until = $1, lease_owner = 'node-a:processing' WHERE id IN (SELECT MIN(id) FROM jobs WHERE app_id = ANY($2) GROUP BY app_id)`, [now + 600_000, LEASED_APPS])
    await pool.query(`INSERT INTO cluster_nodes (id, host, pid, version, started_at, heartbeat_at, roles) VALUES ('node-a', 'h', 1, 'v', $1, $1, '')`, [now])
    await pool.query('ANALYZE jobs')
  }, 60_000)
  afterAll(async () => {
    await pool?.end()
  })

  const plan = async (sql: string, params: unknown[]) => (await pool.query(`EXPLAIN ${sql}`, params)).rows.map((r: Record<string, string>) => r['QUERY PLAN']).join('\n')

  test("a partition hand-over reads the leased jobs' index, not the backlog; it finds the partitions of the Apps in hand", async () => {
    const all = Array.from({ length: 16 }, (_, i) => i)
    const p = await plan(IN_HAND, [all])
    expect(p).toContain('jobs_leased_idx')
    expect(p).not.toContain('Seq Scan on jobs')
    const inHand = await partitionsInHand(pgStorage(pool), all)
    const expected = (await pool.query(`SELECT DISTINCT hashtext(app_id) & 15 AS p FROM unnest($1::text[]) AS app_id ORDER BY 1`, [LEASED_APPS])).rows.map((r: { p: number }) => Number(r.p))
    expect(inHand.sort((a, b) => a - b)).toEqual(expected)
    // A partition with no App in hand is not named.
    const free = all.filter((x) => !expected.includes(x))
    if (free.length > 0) expect(await partitionsInHand(pgStorage(pool), free)).toEqual([])
  })

  test('the dead-node sweep reads the leased jobs only, and frees exactly the jobs of a node that stopped beating', async () => {
    const p = await plan(FREE_DEAD_JOBS, [15_000])
    expect(p).toContain('jobs_leased_idx')
    expect(p).not.toContain('Seq Scan on jobs')
    const repo = createPgNodesRepo(pgStorage(pool))
    // node-a beats: nothing is freed.
    expect((await repo.sweep(15_000, 3_600_000)).jobs).toBe(0)
    // node-a falls silent past its lease: its 30 jobs are handed back, the queue is untouched.
    await pool.query(`UPDATE cluster_nodes SET heartbeat_at = heartbeat_at - 60000 WHERE id = 'node-a'`)
    const swept = await repo.sweep(15_000, 3_600_000)
    expect(swept).toEqual({ jobs: LEASED_APPS.length, deadNodes: ['node-a'] })
    expect(Number((await pool.query('SELECT count(*) AS n FROM jobs WHERE lease_until IS NOT NULL')).rows[0].n)).toBe(0)
    expect(Number((await pool.query('SELECT count(*) AS n FROM jobs')).rows[0].n)).toBe(QUEUED)
  })
})

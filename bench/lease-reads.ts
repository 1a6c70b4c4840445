/**
 * The cluster's reads of the jobs under a lease (src/db/pg/nodes.ts) against a backlog: the maintenance
 * node's dead-node sweep (every beat, 5 s by default) and a partition's hand-over. N queued `process` jobs
 * over 1,000 Apps, one in 400 leased by a live node; each statement run under EXPLAIN ANALYZE with
 * jobs_leased_idx, then with the index dropped (the schema before migration 0030), for the ratio.
 *
 * Prints the two plans' first lines and `LEASE_READS {...}`: ms per statement with and without the index.
 * Usage: bun bench/lease-reads.ts [N=200000]
 */
import { openPool } from '../src/db/pg/client-options'
import { DB_NOW } from '../src/db/pg/db-clock'
import { FREE_DEAD_JOBS, IN_HAND } from '../src/db/pg/nodes'
import { startPostgres } from '../test/pg-server'

const N = Number(process.argv[2] ?? 200_000)
const ROUNDS = 5
const server = await startPostgres()
const pool = openPool(await server.createDatabase('leasereads', { migrated: true }), 2)
const now = Date.now()
for (let i = 0; i < N; i += 5000) {
  const rows: string[] = []
  for (let j = i; j < Math.min(N, i + 5000); j++) {
    const leased = j % 400 === 0
    rows.push(`('process', 'f${j}', 'app${j % 1000}', ${now - 1000}, ${leased ? now + 3_600_000 : 'NULL'}, ${leased ? "'node-a:processing'" : 'NULL'}, ${now})`)
  }
  await pool.query(`INSERT INTO jobs (kind, feedback_id, app_id, run_after, lease_until, lease_owner, created_at) VALUES ${rows.join(',')}`)
}
await pool.query(`INSERT INTO cluster_nodes (id, host, pid, version, started_at, heartbeat_at, roles) VALUES ('node-a', 'h', 1, 'v', ${DB_NOW}, ${DB_NOW} + 3600000, '')`)
await pool.query('ANALYZE jobs')

const statements = { sweep: [FREE_DEAD_JOBS, [15_000]], handOver: [IN_HAND, [[0, 1, 2, 3, 4, 5, 6, 7]]] } as const
/** Median execution ms of each statement over ROUNDS runs, and its plan's top lines. */
async function measure(label: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {}
  for (const [name, [sql, params]] of Object.entries(statements)) {
    const times: number[] = []
    let plan = ''
    for (let r = 0; r < ROUNDS; r++) {
      const rows = (await pool.query(`EXPLAIN (ANALYZE, FORMAT TEXT) ${sql}`, params as unknown as unknown[])).rows.map((x: Record<string, string>) => x['QUERY PLAN'])
      times.push(Number(/Execution Time: ([\d.]+)/.exec(rows.at(-1)!)![1]))
      plan = rows.filter((l) => /Scan/.test(l)).map((l) => l.trim().replace(/\s+\(cost.*$/, '')).join(' / ')
    }
    times.sort((a, b) => a - b)
    out[name] = times[Math.floor(ROUNDS / 2)]
    console.log(`${label} ${name}: ${out[name]} ms  (${plan})`)
  }
  return out
}

const withIndex = await measure('with jobs_leased_idx')
await pool.query('DROP INDEX jobs_leased_idx')
const without = await measure('without it')
console.log(`LEASE_READS ${JSON.stringify({ queuedJobs: N, leased: Math.ceil(N / 400), withIndexMs: withIndex, withoutIndexMs: without, ratio: { sweep: +(without.sweep / withIndex.sweep).toFixed(1), handOver: +(without.handOver / withIndex.handOver).toFixed(1) } })}`)
await pool.end()
await server.stop?.()
process.exit(0)

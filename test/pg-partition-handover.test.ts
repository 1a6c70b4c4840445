/**
 * A partition of Apps changing hands while its old holder still works on it (cluster mode, issue 38.2):
 * the new holder must not cluster the partition's Apps before the old holder's jobs in hand are written.
 * Its similarity index is built from the database, without the reports whose `process` job is still queued
 * (src/db/pg/dedup.ts `loadApp`); an index built while the old holder's batch is in flight lacks that
 * batch's reports for good, and their duplicates are not attached to them.
 *
 * Two "nodes" on one real PostgreSQL, each with its own pool, processing engine and partition leases (as
 * src/runtime/cluster.ts builds them). The old holder's batch is held inside its write transaction by a
 * row lock the test takes on its report, a real lock wait, nothing mocked.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import type { Pool, PoolClient } from 'pg'
import { freshStore, type FreshStore } from './dialects'
import { eventually } from './harness'
import { PARTITIONS } from '../src/nodes/partitions'
import { sql } from './repos/store-fixtures'
import { aloneWith, inProcessNode, submitTo, upperHalfApp, type InProcessNode } from './pg-inproc-node'

const LEASE_MS = 10_000
const TEXT = 'The checkout button does nothing when I click it on the payment page.'

beforeAll(() => freshStore('pg'), 120_000)
const pools: Pool[] = []
afterAll(async () => {
  for (const p of pools) await p.end().catch(() => {})
})

const TIMES = { leaseMs: LEASE_MS, jobLeaseMs: 60_000 }
const node = (s: FreshStore, id: string, live: { n: number }) => inProcessNode(s, id, live, TIMES, pools)
const submit = (n: InProcessNode, appId: string, id: string) => submitTo(n, appId, id, TEXT)

/** A fresh database with one App in the upper half of the partitions, held by node a, alone (every partition). */
async function nodeAAlone() {
  const s = await freshStore('pg')
  const { app, partition } = await upperHalfApp(s)
  const { live, a } = await aloneWith(s, app, TIMES, pools)
  return { s, app, partition, live, a }
}

test('a partition let go mid-batch is not clustered by its new holder before that batch is written', async () => {
  const { s, app, partition, live, a } = await nodeAAlone()
  expect(a.leases.partitions()).toHaveLength(PARTITIONS)

  // Node a claims r1 and writes its batch; the write waits on a lock the test holds on r1's row.
  await submit(a, app, 'r1')
  const batch = await a.claim()
  expect(batch.map((j) => j.feedback_id)).toEqual(['r1'])
  const holder: PoolClient = await a.storage.pool.connect()
  await holder.query('BEGIN')
  await holder.query("SELECT 1 FROM feedback WHERE id = 'r1' FOR UPDATE")
  const aBatch = a.step.runBatch!(batch)
  await eventually(async () => {
    const [row] = await sql<{ n: number }>(s, "SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()")
    return row.n > 0 ? true : undefined
  }, 5_000)

  // Node b joins: a lets the upper half go at its next beat, b takes it at its own.
  live.n = 2
  const b = node(s, 'node_b', live)
  await b.beat()
  await a.leases.round()
  expect(a.leases.partitions().every((p) => p < PARTITIONS / 2)).toBe(true)
  await b.leases.round()
  // b holds the upper half but the partition of r1's App: it waits, leased, for a's batch.
  expect(b.leases.partitions()).toEqual(Array.from({ length: PARTITIONS / 2 }, (_, i) => i + PARTITIONS / 2).filter((p) => p !== partition))
  const [lease] = await sql<{ holder: string }>(s, 'SELECT holder FROM leases WHERE name = ?', [`processing:${partition}`])
  expect(lease.holder).toBe('node_b')

  // A duplicate of r1 arrives. Whatever b may claim now, it clusters.
  await submit(b, app, 'r2')
  const early = await b.claim()
  const bEarly = early.length > 0 ? b.step.runBatch!(early) : Promise.resolve([])

  // a's batch gets its lock and commits; b goes on with its next beats and claims.
  await holder.query('COMMIT')
  holder.release()
  expect(await aBatch).toEqual([undefined])
  await bEarly
  await b.beat()
  await b.leases.round()
  expect(b.leases.partitions()).toContain(partition)
  const later = await b.claim()
  if (later.length > 0) await b.step.runBatch!(later)

  const rows = await sql<{ id: string; duplicate_of_id: string | null }>(s, 'SELECT id, duplicate_of_id FROM feedback ORDER BY id')
  // As one node alone clusters them: r2 joins r1.
  expect(rows).toEqual([
    { id: 'r1', duplicate_of_id: null },
    { id: 'r2', duplicate_of_id: 'r1' },
  ])
  await a.leases.stop()
  await b.leases.stop()
}, 60_000)

test("a dead node's jobs in hand hold a partition up only until the sweep frees them", async () => {
  const { s, app, partition, live, a } = await nodeAAlone()
  await submit(a, app, 'r1')
  expect(await a.claim()).toHaveLength(1)
  // a goes silent with r1's job in hand (its beat older than its lease, its partition leases run out).
  await sql(s, "UPDATE cluster_nodes SET heartbeat_at = heartbeat_at - 60000 WHERE id = 'node_a'")
  await sql(s, "UPDATE leases SET expires_at = 0 WHERE holder = 'node_a'")
  const b = node(s, 'node_b', live)
  await b.beat()
  // Until the sweep frees them, its leases still count: a node counted dead may only be stalled, and write
  // its batch when it resumes (test/pg-stalled-node.test.ts). Freed, they hold nothing up.
  await b.leases.round()
  expect(b.leases.partitions()).not.toContain(partition)
  expect((await b.store.nodes.sweep(LEASE_MS, 3_600_000)).jobs).toBe(1)
  await b.leases.round()
  expect(b.leases.partitions()).toContain(partition)
  await b.leases.stop()
}, 60_000)

test('a partition waiting for another node\'s jobs in hand is let go at a stop, not left to run out', async () => {
  const { s, app, partition, live, a } = await nodeAAlone()
  await submit(a, app, 'r1')
  expect(await a.claim()).toHaveLength(1)
  live.n = 2
  const b = node(s, 'node_b', live)
  await b.beat()
  await a.leases.round()
  await b.leases.round()
  expect(b.leases.partitions()).not.toContain(partition)
  const held = async () => (await sql<{ holder: string; expires_at: string }>(s, 'SELECT holder, expires_at FROM leases WHERE name = ?', [`processing:${partition}`]))[0]
  expect((await held()).holder).toBe('node_b')
  await b.leases.stop()
  expect(Number((await held()).expires_at)).toBe(0)
  await a.leases.stop()
}, 60_000)

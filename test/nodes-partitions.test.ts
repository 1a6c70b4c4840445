/**
 * src/nodes/partitions.ts on a real PostgreSQL, with short leases (600 ms): clustering's partitions of Apps
 * spread over the live nodes (each partition held by exactly one), rebalance when a node joins, move at once
 * when a node stops cleanly, and are taken over after a lease period when a node dies (issue 38.2).
 */
import { afterAll, expect, test } from 'bun:test'
import type { Pool } from 'pg'
import { freshStore, storeOf } from './dialects'
import { eventually } from './harness'
import { openPool } from '../src/db/pg/client-options'
import { pgStorage } from '../src/db/pg/storage'
import { PartitionLeases, PARTITIONS } from '../src/nodes/partitions'
import { Logger } from '../src/core/logger'

const LEASE_MS = 600
const pools: Pool[] = []
afterAll(async () => {
  for (const p of pools) await p.end().catch(() => {})
})

function node(url: string, id: string, live: { n: number }) {
  const pool = openPool(url, 2)
  pools.push(pool)
  const changes: number[][] = []
  const leases = new PartitionLeases(storeOf(pgStorage(pool)).nodes, id, new Logger('silent'), { leaseMs: LEASE_MS, liveNodes: () => live.n })
  leases.onChange((held) => changes.push(held))
  return { leases, changes }
}

/** Every partition held by exactly one of the nodes (at their last look). */
const exactlyOnce = (nodes: { leases: PartitionLeases }[]) => {
  const all = nodes.flatMap((n) => n.leases.partitions()).sort((a, b) => a - b)
  return JSON.stringify(all) === JSON.stringify(Array.from({ length: PARTITIONS }, (_, i) => i))
}

test('partitions spread over the live nodes, each held once; a joining node gets its share; a clean stop hands them over at once', async () => {
  const s = await freshStore('pg')
  const live = { n: 1 }
  const a = node(s.location, 'node_a', live)
  await a.leases.start()
  expect(a.leases.partitions()).toHaveLength(PARTITIONS)
  live.n = 2
  const b = node(s.location, 'node_b', live)
  await b.leases.start()
  // The first node lets its extra half go at its next beat; the newcomer takes them at one of its own.
  await eventually(() => (a.leases.partitions().length === PARTITIONS / 2 && b.leases.partitions().length === PARTITIONS / 2 && exactlyOnce([a, b]) ? true : undefined), 5_000)
  live.n = 1
  const t0 = Date.now()
  await a.leases.stop()
  expect(a.leases.partitions()).toEqual([])
  await eventually(() => (b.leases.partitions().length === PARTITIONS ? true : undefined), 5_000)
  // Well within one lease period of the stop: released, not run out.
  expect(Date.now() - t0).toBeLessThan(LEASE_MS * 3)
  await b.leases.stop()
}, 20_000)

test('a dead node (no more beats, no release): its partitions are taken over once their lease runs out, never before', async () => {
  const s = await freshStore('pg')
  const live = { n: 2 }
  const a = node(s.location, 'node_a', live)
  const b = node(s.location, 'node_b', live)
  await a.leases.start()
  await b.leases.start()
  await eventually(() => (exactlyOnce([a, b]) && b.leases.partitions().length === PARTITIONS / 2 ? true : undefined), 5_000)
  const aHeld = a.leases.partitions()
  // `a` dies: its timer stops, nothing is released.
  ;(a.leases as unknown as { running: boolean }).running = false
  clearTimeout((a.leases as unknown as { timer: ReturnType<typeof setTimeout> }).timer)
  live.n = 1
  const died = Date.now()
  // While a's leases are valid, b takes none of them.
  await b.leases.round()
  if (Date.now() - died < LEASE_MS - 100) expect(b.leases.partitions().filter((p) => aHeld.includes(p))).toEqual([])
  await eventually(() => (b.leases.partitions().length === PARTITIONS ? true : undefined), 5_000)
  expect(Date.now() - died).toBeGreaterThanOrEqual(LEASE_MS - 50)
  await b.leases.stop()
}, 20_000)

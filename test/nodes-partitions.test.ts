/**
 * src/nodes/partitions.ts on a real PostgreSQL, with short leases (600 ms): clustering's partitions of Apps
 * spread over the live nodes (each partition held by exactly one), rebalance when a node joins, move at once
 * when a node stops cleanly, and are taken over after a lease period when a node dies (issue 38.2).
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import type { Pool } from 'pg'
import { freshStore, storeOf } from './dialects'
import { eventually } from './harness'
import { openPool } from '../src/db/pg/client-options'
import { pgStorage } from '../src/db/pg/storage'
import { PartitionLeases, PARTITIONS } from '../src/nodes/partitions'
import type { BeatLoop } from '../src/nodes/beat-loop'
import { Logger } from '../src/core/logger'
import { createPgJobs, PARTITION_OF_APP } from '../src/db/pg/jobs'
import type { PgStorage } from '../src/db/pg/storage'
import { insertReport, seedOrgApp, sql } from './repos/store-fixtures'

const LEASE_MS = 600
// PostgreSQL started (and its migrated template made) before the first case, outside the cases' budgets: on a
// loaded CI-like machine that took 15 s, and the first case 17 s of its 20.
beforeAll(() => freshStore('pg'), 120_000)
const pools: Pool[] = []
afterAll(async () => {
  for (const p of pools) await p.end().catch(() => {})
})

function node(url: string, id: string, live: { n: number }, invalidate?: (partitions: number[]) => Promise<void>) {
  const pool = openPool(url, 2)
  pools.push(pool)
  const changes: number[][] = []
  const leases = new PartitionLeases(storeOf(pgStorage(pool)).nodes, id, new Logger('silent'), { leaseMs: LEASE_MS, liveNodes: () => live.n, invalidate })
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
  // All of them (a lease counts as held until a fifth of its period before it runs out: on a loaded
  // machine the first of 16 serial acquisitions can already be past that when the last returns).
  await eventually(() => (a.leases.partitions().length === PARTITIONS ? true : undefined), 15_000)
  live.n = 2
  const b = node(s.location, 'node_b', live)
  await b.leases.start()
  // The first node lets its extra half go at its next beat; the newcomer takes them at one of its own.
  await eventually(() => (a.leases.partitions().length === PARTITIONS / 2 && b.leases.partitions().length === PARTITIONS / 2 && exactlyOnce([a, b]) ? true : undefined), 15_000)
  live.n = 1
  await a.leases.stop()
  expect(a.leases.partitions()).toEqual([])
  // Released at the stop (expiry 0: free at once), not left to run out. Read in the database, not timed: a
  // bound of three lease periods on the hand-over measured a loaded machine's beats too.
  const check = openPool(s.location, 1)
  pools.push(check)
  const left = (await check.query<{ name: string; expires_at: string }>("SELECT name, expires_at FROM leases WHERE holder = 'node_a'")).rows
  expect(left.filter((l) => Number(l.expires_at) !== 0)).toEqual([])
  await eventually(() => (b.leases.partitions().length === PARTITIONS ? true : undefined), 15_000)
  await b.leases.stop()
}, 60_000)

test('a dead node (no more beats, no release): its partitions are taken over once their lease runs out, never before', async () => {
  const s = await freshStore('pg')
  const live = { n: 2 }
  const a = node(s.location, 'node_a', live)
  const b = node(s.location, 'node_b', live)
  await a.leases.start()
  await b.leases.start()
  await eventually(() => (exactlyOnce([a, b]) && b.leases.partitions().length === PARTITIONS / 2 ? true : undefined), 15_000)
  const aHeld = a.leases.partitions()
  // `a` dies: its timer stops, nothing is released.
  await (a.leases as unknown as { beats: BeatLoop }).beats.stop()
  live.n = 1
  const died = Date.now()
  // When each of a's leases runs out, by the database's clock (its last renewal was before `died`, by up to a beat).
  const pool = openPool(s.location, 1)
  pools.push(pool)
  const expiries = new Map((await pool.query<{ name: string; expires_at: string }>("SELECT name, expires_at FROM leases WHERE holder = 'node_a'")).rows.map((r) => [r.name, Number(r.expires_at)]))
  expect(expiries.size).toBe(aHeld.length)
  // While a's leases are valid, b takes none of them.
  await b.leases.round()
  if (Date.now() - died < LEASE_MS - 100) expect(b.leases.partitions().filter((p) => aHeld.includes(p))).toEqual([])
  await eventually(() => (b.leases.partitions().length === PARTITIONS ? true : undefined), 15_000)
  // Each taken over once it ran out, never before: b acquired it (database clock) at or after its expiry.
  const taken = (await pool.query<{ name: string; holder: string; acquired_at: string }>('SELECT name, holder, acquired_at FROM leases WHERE name = ANY($1)', [[...expiries.keys()]])).rows
  expect(taken).toHaveLength(expiries.size)
  for (const t of taken) {
    expect(t.holder).toBe('node_b')
    expect(Number(t.acquired_at)).toBeGreaterThanOrEqual(expiries.get(t.name)!)
  }
  await b.leases.stop()
}, 60_000)

test('a claimer holding some partitions takes the process jobs of their Apps only (fair claim and queue-order claim alike)', async () => {
  const s = await freshStore('pg')
  const apps = Array.from({ length: 8 }, (_, i) => `app${i}`)
  for (const a of apps) {
    await seedOrgApp(s, 'o1', a)
    for (let k = 0; k < 3; k++) {
      await insertReport(s, `${a}-r${k}`, 'received', 'o1', a)
      await s.store.lifecycle.enqueue('process', { feedbackId: `${a}-r${k}`, appId: a })
    }
  }
  const partitionOf = new Map((await sql<{ app: string; p: number }>(s, `SELECT id AS app, ${PARTITION_OF_APP('id')} AS p FROM apps`)).map((r) => [r.app, Number(r.p)]))
  const mine = [...new Set(partitionOf.values())].slice(0, 2)
  const jobs = createPgJobs(s.storage as PgStorage, ['process'], { partitions: () => mine })
  const claimed = await jobs.claimBatch('process', 100, Date.now(), 60_000, 'node_a')
  const expected = apps.filter((a) => mine.includes(partitionOf.get(a)!)).length * 3
  expect(expected).toBeGreaterThan(0)
  expect(claimed).toHaveLength(expected)
  expect(claimed.every((j) => mine.includes(partitionOf.get(j.app_id!)!))).toBe(true)
  // Nothing of another partition, whichever claim runs: the rest stays for the other nodes.
  const none = createPgJobs(s.storage as PgStorage, ['process'], { partitions: () => [] })
  expect(await none.claimBatch('process', 100, Date.now(), 60_000, 'node_b')).toEqual([])
  // Nor is one of them its next due job: a claimer woken for another node's jobs would spin.
  expect(await none.nextDueAt()).toBeNull()
  expect(await createPgJobs(s.storage as PgStorage, ['process']).nextDueAt()).not.toBeNull()
  const others = createPgJobs(s.storage as PgStorage, ['process'], { partitions: () => [...new Set(partitionOf.values())].filter((p) => !mine.includes(p)) })
  expect(await others.claimBatch('process', 100, Date.now(), 60_000, 'node_c')).toHaveLength(apps.length * 3 - expected)
}, 20_000)

test('invalidate is told of the partitions taken before their Apps can be claimed, and of those let go; a failing one keeps them free', async () => {
  const s = await freshStore('pg')
  const live = { n: 1 }
  const told: { id: string; partitions: number[]; heldThen: number[] }[] = []
  let failing = false
  let a: ReturnType<typeof node>
  let b: ReturnType<typeof node> | undefined
  const tell = (id: string) => async (partitions: number[]) => {
    told.push({ id, partitions: [...partitions].sort((x, y) => x - y), heldThen: (id === 'node_a' ? a : b!).leases.partitions() })
    if (failing && id === 'node_b') throw new Error('index store away')
  }
  a = node(s.location, 'node_a', live, tell('node_a'))
  await a.leases.start()
  // Taken: told first, while none of them is claimable yet.
  expect(told).toEqual([{ id: 'node_a', partitions: Array.from({ length: PARTITIONS }, (_, i) => i), heldThen: [] }])
  // A second node whose invalidate fails: it holds nothing, and the partitions it took go back (a takes them again).
  failing = true
  live.n = 2
  b = node(s.location, 'node_b', live, tell('node_b'))
  await b.leases.start()
  // Bounds, not timings: on a loaded machine a round of leases can take seconds (it takes well under one here).
  await eventually(() => (told.some((t) => t.id === 'node_a' && t.partitions.length === PARTITIONS / 2 && t.heldThen.length === PARTITIONS / 2) ? true : undefined), 15_000)
  // a let half go: told after, with those no longer held.
  const letGo = told.find((t) => t.id === 'node_a' && t.partitions.length === PARTITIONS / 2)!
  expect(letGo.partitions.some((p) => letGo.heldThen.includes(p))).toBe(false)
  await eventually(() => (told.some((t) => t.id === 'node_b') ? true : undefined), 15_000)
  expect(b.leases.partitions()).toEqual([])
  // Working again: b takes its share, told before each is claimable; every partition held once.
  failing = false
  await eventually(() => (b!.leases.partitions().length === PARTITIONS / 2 && exactlyOnce([a, b!]) ? true : undefined), 15_000)
  const taken = told.filter((t) => t.id === 'node_b').at(-1)!
  expect(taken.partitions.some((p) => taken.heldThen.includes(p))).toBe(false)
  await a.leases.stop()
  await b.leases.stop()
}, 60_000)

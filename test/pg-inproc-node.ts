/**
 * A cluster "node" inside the test process, on a real PostgreSQL: its own pool, store, processing engine
 * and partition leases, wired as src/runtime/cluster.ts wires them. Two of them on one database stand for
 * two nodes whose steps a test interleaves by hand (a batch claimed and not yet written, a beat missed).
 * Used by test/pg-partition-handover and test/pg-stalled-node.
 */
import type { Pool } from 'pg'
import type { FreshStore } from './dialects'
import { seedOrgApp, sql } from './repos/store-fixtures'
import { openPool } from '../src/db/pg/client-options'
import { pgStorage, type PgStorage } from '../src/db/pg/storage'
import { openPgStore } from '../src/db/pg/store'
import { createPgProcessingEngine } from '../src/worker/processing-pg'
import { PROCESSING_KINDS } from '../src/worker/processing'
import { PartitionLeases, PARTITIONS } from '../src/nodes/partitions'
import { PARTITION_OF_APP } from '../src/db/pg/jobs'
import { partitionsInHand } from '../src/db/pg/nodes'
import { systemClock } from '../src/core/clock'
import { Logger } from '../src/core/logger'

export interface NodeTimes {
  /** The node's lease (beats, partitions, the sweep's "silent for"). */
  leaseMs: number
  /** A claimed job's own lease. */
  jobLeaseMs: number
}

/** `pools` collects each node's pool, for the file's afterAll to end. `live.n`: how many nodes share the partitions. */
export function inProcessNode(s: FreshStore, id: string, live: { n: number }, { leaseMs, jobLeaseMs }: NodeTimes, pools: Pool[]) {
  const pool = openPool(s.location, 4)
  pools.push(pool)
  const storage = pgStorage(pool)
  const store = openPgStore(storage, systemClock)
  const processing = createPgProcessingEngine(store, systemClock)
  const leases = new PartitionLeases(store.nodes, id, new Logger('silent'), {
    leaseMs,
    liveNodes: () => live.n,
    invalidate: async (moved) => {
      const apps = processing.indexes?.apps() ?? []
      if (apps.length === 0) return
      const { rows } = await pool.query<{ id: string }>(`SELECT id FROM unnest($1::text[]) AS a(id) WHERE ${PARTITION_OF_APP('id')} = ANY($2::int[])`, [apps, moved])
      for (const r of rows) processing.indexes?.forget(r.id)
    },
    inHand: (taken) => partitionsInHand(storage, taken),
  })
  const jobs = store.jobs(PROCESSING_KINDS, { partitions: () => leases.partitions() })
  return {
    id,
    store,
    storage: storage as PgStorage,
    leases,
    beat: () => store.nodes.beat({ id, host: 'h', pid: 1, version: 't' }, [], leaseMs),
    /** The maintenance holder's sweep (src/nodes/coordinator.ts): frees the job leases of nodes silent for a lease. */
    sweep: () => store.nodes.sweep(leaseMs, 3_600_000),
    /** Claims a batch of `process` jobs of the partitions held, as the processing worker does. */
    claim: () => jobs.claimBatch('process', 16, Date.now(), jobLeaseMs, `${id}:processing`),
    step: processing.steps.process,
  }
}

export type InProcessNode = ReturnType<typeof inProcessNode>

/** A report of App `appId` received by `n`, its `process` job queued, as intake leaves it. */
export async function submitTo(n: InProcessNode, appId: string, id: string, text: string): Promise<void> {
  await n.storage.pool.query("INSERT INTO feedback (id, org_id, app_id, status, text, submitted_mode, created_at, updated_at) VALUES ($1, 'o1', $2, 'received', $3, 'public', $4, $4)", [id, appId, text, Date.now()])
  await n.store.lifecycle.enqueue('process', { feedbackId: id, appId })
}

/** An App id whose partition is in the upper half: the one a node over its share lets go first. */
export async function upperHalfApp(s: FreshStore): Promise<{ app: string; partition: number }> {
  for (let i = 0; ; i++) {
    const [row] = await sql<{ p: number }>(s, `SELECT ${PARTITION_OF_APP('?::text')} AS p`, [`app${i}`])
    if (Number(row.p) >= PARTITIONS / 2) return { app: `app${i}`, partition: Number(row.p) }
  }
}

/** App `appId` of Org o1 seeded, and node_a holding every partition alone (`live.n` 1, raised by the test). */
export async function aloneWith(s: FreshStore, appId: string, times: NodeTimes, pools: Pool[]): Promise<{ live: { n: number }; a: InProcessNode }> {
  await seedOrgApp(s, 'o1', appId)
  const live = { n: 1 }
  const a = inProcessNode(s, 'node_a', live, times, pools)
  await a.beat()
  await a.leases.round()
  return { live, a }
}

/**
 * A node that is not dead but stalled (SIGSTOP, a long GC pause, a VM frozen by its host): it misses its
 * beats, the others count it dead, the sweep frees its job leases and its partition leases run out, and
 * another node takes its work. When it resumes it carries on with what it had in hand. It must not commit
 * anything under a lease it no longer holds (docs/architecture.md "A stalled node").
 *
 * Two "nodes" on one real PostgreSQL, each with its own pool and store, as src/runtime/cluster.ts builds
 * them. A node stalls by doing nothing: it neither beats nor renews, and its work in hand waits (a step
 * held on a gate, a batch claimed and not yet written) until the test lets it go on. test/cluster-stall
 * does the same to a compiled node with SIGSTOP.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import type { Pool } from 'pg'
import { freshStore, type FreshStore } from './dialects'
import { PROCESSING_KINDS } from '../src/worker/processing'
import { PARTITIONS } from '../src/nodes/partitions'
import { systemClock } from '../src/core/clock'
import { Logger } from '../src/core/logger'
import { DeferJob, Worker, type JobStep } from '../src/worker/loop'
import type { JobRow } from '../src/lifecycle/jobs-repo'
import { sql } from './repos/store-fixtures'
import { aloneWith, inProcessNode, submitTo, type InProcessNode } from './pg-inproc-node'

/** The nodes' lease: short, so a stall outlasts it in about a second. */
const LEASE_MS = 1_000
/** A job's own lease, as the workers' default: far longer than the node's (the sweep frees it first). */
const JOB_LEASE_MS = 60_000
const TEXT = 'The checkout button does nothing when I click it on the payment page.'
const OTHER = 'Dark mode makes the invoice table unreadable, grey text on a grey background.'

beforeAll(() => freshStore('pg'), 120_000)
const pools: Pool[] = []
afterAll(async () => {
  for (const p of pools) await p.end().catch(() => {})
})

const TIMES = { leaseMs: LEASE_MS, jobLeaseMs: JOB_LEASE_MS }
const node = (s: FreshStore, id: string, live: { n: number }) => inProcessNode(s, id, live, TIMES, pools)

/** A stall: longer than a node's lease, with no beat and no renewal. */
const stall = () => Bun.sleep(LEASE_MS + 400)

const submit = (n: InProcessNode, appId: string, id: string, text = TEXT) => submitTo(n, appId, id, text)

const clustered = (s: FreshStore) => sql<{ id: string; status: string; duplicate_of_id: string | null }>(s, 'SELECT id, status, duplicate_of_id FROM feedback ORDER BY id')

/** A step whose runs wait, each on a gate the test opens with `pass()` or `fail()`. */
function gatedStep() {
  const gates = new Map<number, { pass: () => void; fail: (e: Error) => void }>()
  const started: number[] = []
  const step: JobStep = {
    run: (job: JobRow) =>
      new Promise<void>((pass, fail) => {
        started.push(job.id)
        gates.set(job.id, { pass, fail })
      }),
  }
  return { step, started, gate: (id: number) => gates.get(id)! }
}

test('a job another node took over from a stalled node is neither finished, retried, deferred nor released by it', async () => {
  const s = await freshStore('pg')
  const live = { n: 2 }
  const a = node(s, 'node_a', live)
  const b = node(s, 'node_b', live)
  await a.beat()
  await b.beat()
  for (let i = 0; i < 4; i++) await a.store.lifecycle.enqueue('tracker_push', { feedbackId: `lead${i}` })
  const log = new Logger('silent')
  const options = { leaseMs: JOB_LEASE_MS, baseBackoffMs: 1_000, maxBackoffMs: 1_000, pollMs: 60_000 }
  const onA = gatedStep()
  const onB = gatedStep()
  const workerA = new Worker(a.store.jobs(['tracker_push']), { tracker_push: onA.step }, systemClock, log, { ...options, clusterLeaseOwner: 'node_a' })
  const workerB = new Worker(b.store.jobs(['tracker_push']), { tracker_push: onB.step }, systemClock, log, { ...options, clusterLeaseOwner: 'node_b' })
  // Node a takes the four jobs, one after another; each waits in its step.
  const ticksA: Promise<number>[] = []
  for (let i = 0; i < 4; i++) {
    ticksA.push(workerA.tick(1))
    while (onA.started.length <= i) await Bun.sleep(5)
  }
  const ids = [...onA.started]

  // a stalls: no beat for longer than its lease. b beats and sweeps (it holds maintenance): a's leases are freed.
  await stall()
  await b.beat()
  expect((await b.sweep()).jobs).toBe(4)
  const ticksB: Promise<number>[] = []
  for (let i = 0; i < 4; i++) {
    ticksB.push(workerB.tick(1))
    while (onB.started.length <= i) await Bun.sleep(5)
  }
  expect([...onB.started].sort()).toEqual([...ids].sort())
  const heldByB = await sql<{ id: number; lease_owner: string; lease_until: number; attempts: number; run_after: number }>(s, 'SELECT id, lease_owner, lease_until, attempts, run_after FROM jobs ORDER BY id')

  // a resumes and carries on: one run succeeds (finish), one throws (retry), one cannot run yet (defer), and the
  // fourth is in hand when a stops (its lease handed back, then the run ends and finishes it).
  onA.gate(ids[0]).pass()
  onA.gate(ids[1]).fail(new Error('the tracker answered 502'))
  onA.gate(ids[2]).fail(new DeferJob(0, 'no agent slot'))
  await Promise.all(ticksA.slice(0, 3))
  const stopping = workerA.stop()
  await Bun.sleep(50)
  onA.gate(ids[3]).pass()
  await stopping
  await Promise.all(ticksA)

  // Every job is still b's, as b took it: lease, owner, attempts, due time.
  expect(await sql(s, 'SELECT id, lease_owner, lease_until, attempts, run_after FROM jobs ORDER BY id')).toEqual(heldByB)
  expect(heldByB.map((j) => j.lease_owner)).toEqual(ids.map(() => 'node_b'))

  // b finishes them: done, once each.
  for (const id of ids) onB.gate(id).pass()
  await Promise.all(ticksB)
  expect(await sql(s, 'SELECT id FROM jobs')).toEqual([])
}, 30_000)

test('a partition is not clustered by its new holder while a stalled node still holds leases on its jobs', async () => {
  const s = await freshStore('pg')
  const { live, a } = await aloneWith(s, 'app0', TIMES, pools)
  expect(a.leases.partitions()).toHaveLength(PARTITIONS)

  // a clusters a first report of the App (its index of the App is built), then claims r1 and stalls before it
  // writes it: its beats stop, its partition leases run out.
  await submit(a, 'app0', 'r0', OTHER)
  const first = await a.claim()
  expect(await a.step.runBatch!(first)).toEqual([undefined])
  await submit(a, 'app0', 'r1')
  const batch = await a.claim()
  expect(batch.map((j) => j.feedback_id)).toEqual(['r1'])
  await stall()

  // b is the live node now. Before the maintenance holder's next sweep frees a's job leases, b takes the
  // partitions and a duplicate of r1 arrives.
  const b = node(s, 'node_b', live)
  await b.beat()
  await b.leases.round()
  await submit(b, 'app0', 'r2')
  const early = await b.claim()
  if (early.length > 0) expect(await b.step.runBatch!(early)).toEqual(early.map(() => undefined))

  // a resumes and writes the batch it had in hand.
  await a.step.runBatch!(batch)

  // The sweep, then b goes on with its beats and claims.
  await b.sweep()
  await b.beat()
  await b.leases.round()
  expect(b.leases.partitions()).toHaveLength(PARTITIONS)
  const later = await b.claim()
  if (later.length > 0) await b.step.runBatch!(later)

  // As one node alone clusters them: r2 joins r1 (two indexes of one App made both leads).
  expect((await clustered(s)).map(({ id, duplicate_of_id }) => ({ id, duplicate_of_id }))).toEqual([
    { id: 'r0', duplicate_of_id: null },
    { id: 'r1', duplicate_of_id: null },
    { id: 'r2', duplicate_of_id: 'r1' },
  ])
  expect(await sql(s, 'SELECT id FROM jobs')).toEqual([])
  await b.leases.stop()
}, 30_000)

test('a stalled node whose job leases were freed writes nothing of its batch: the partition\'s holder clusters it', async () => {
  const s = await freshStore('pg')
  const { live, a } = await aloneWith(s, 'app0', TIMES, pools)
  await submit(a, 'app0', 'r1')
  const batch = await a.claim()
  expect(batch).toHaveLength(1)
  await stall()

  // The sweep frees r1's job, b takes the partitions and clusters an unrelated report of the App (its index
  // of the App is built now, without r1, whose job is queued).
  const b = node(s, 'node_b', live)
  await b.beat()
  expect((await b.sweep()).jobs).toBe(1)
  await b.leases.round()
  expect(b.leases.partitions()).toHaveLength(PARTITIONS)
  await submit(b, 'app0', 'r0', OTHER)
  await sql(s, "UPDATE jobs SET run_after = run_after - 100000 WHERE feedback_id = 'r0'")
  const first = await b.store.jobs(PROCESSING_KINDS, { partitions: () => b.leases.partitions() }).claimBatch('process', 1, Date.now(), JOB_LEASE_MS, 'node_b:processing')
  expect(first.map((j) => j.feedback_id)).toEqual(['r0'])
  expect(await b.step.runBatch!(first)).toEqual([undefined])

  // a resumes with r1 in hand: its job is no longer leased to it, so nothing of it is written.
  const outcomes = await a.step.runBatch!(batch)
  expect(outcomes[0]).toBeInstanceOf(Error)
  const [r1] = await sql<{ status: string }>(s, "SELECT status FROM feedback WHERE id = 'r1'")
  expect(r1.status).toBe('received')

  // b clusters r1 and then a duplicate of it: the duplicate joins r1.
  const next = await b.claim()
  expect(next.map((j) => j.feedback_id)).toEqual(['r1'])
  expect(await b.step.runBatch!(next)).toEqual([undefined])
  await submit(b, 'app0', 'r2')
  const dup = await b.claim()
  expect(await b.step.runBatch!(dup)).toEqual([undefined])
  expect((await clustered(s)).map(({ id, duplicate_of_id }) => ({ id, duplicate_of_id }))).toEqual([
    { id: 'r0', duplicate_of_id: null },
    { id: 'r1', duplicate_of_id: null },
    { id: 'r2', duplicate_of_id: 'r1' },
  ])
  await b.leases.stop()
}, 30_000)

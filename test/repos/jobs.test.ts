/** lifecycle/jobs-repo.ts on both dialects: claim order and leases, batches, retry/defer/release/reclaim, and a claim race between two "nodes". */
import { describe, expect, test } from 'bun:test'
import { storeOf } from '../dialects'
import { describeEachDialect, freshStore, type FreshStore } from '../dialects'
import { type JobsRepo } from '../../src/lifecycle/jobs-repo'
import { sql, claimAllConcurrently } from './store-fixtures'
import { openPool } from '../../src/db/pg/client-options'
import { pgStorage } from '../../src/db/pg/storage'
import { openDatabase } from '../../src/db/sqlite/client'
import { sqliteStorage } from '../../src/db/sqlite/storage'
import type { Storage } from '../../src/db/storage'
import { Worker } from '../../src/worker/loop'
import { Logger } from '../../src/core/logger'
import { currentLeaseOwner } from '../../src/worker/lease-owner'

const LEASE = 60_000

/** Queues `n` process jobs (feedback ids f0…) due at `runAfter`, through the lifecycle (the one writer of jobs). */
async function queue(s: FreshStore, n: number, runAfter = s.clock.now(), prefix = 'f', appId = 'a1'): Promise<void> {
  const lc = s.store.lifecycle
  for (let i = 0; i < n; i++) await lc.enqueue('process', { feedbackId: `${prefix}${i}`, appId }, runAfter)
}

/** A second store on the same database: another pool (PostgreSQL) or another connection (SQLite), as another node or process. */
async function secondStore(s: FreshStore): Promise<{ storage: Storage; close: () => Promise<void> }> {
  if (s.dialect === 'pg') {
    const pool = openPool(s.location, 8)
    return { storage: pgStorage(pool, { callerClock: true }), close: () => pool.end() }
  }
  const { sqlite, db } = openDatabase(s.location)
  return { storage: sqliteStorage(sqlite, db), close: async () => sqlite.close() }
}

describeEachDialect('jobs repo', (fresh) => {
  test('claim: due jobs only, in (run_after, id) order, leased with owner and attempts; none due: null', async () => {
    const s = await fresh()
    const lc = s.store.lifecycle
    const t = s.clock.now()
    await lc.enqueue('process', { feedbackId: 'late', appId: 'a1' }, t + 10)
    await lc.enqueue('process', { feedbackId: 'b', appId: 'a1' }, t - 5)
    await lc.enqueue('process', { feedbackId: 'a', appId: 'a1' }, t - 5)
    await lc.enqueue('process', { feedbackId: 'first', appId: 'a1' }, t - 50)
    const jobs = s.store.jobs()
    const order: string[] = []
    for (let job = await jobs.claim(t, LEASE, 'me'); job; job = await jobs.claim(t, LEASE, 'me')) {
      expect(job.lease_until).toBe(t + LEASE)
      expect(job.lease_owner).toBe('me')
      expect(job.attempts).toBe(1)
      expect(typeof job.id).toBe('number')
      expect(typeof job.run_after).toBe('number')
      order.push(job.feedback_id!)
    }
    // Same run_after: by id (queue order); `late` is not due yet.
    expect(order).toEqual(['first', 'b', 'a'])
    expect(await jobs.claim(t, LEASE, 'me')).toBeNull()
    expect((await jobs.claim(t + 10, LEASE, 'me'))?.feedback_id).toBe('late')
  })

  test('a leased job is claimed again only once its lease ran out (attempts counts both)', async () => {
    const s = await fresh()
    await queue(s, 1)
    const jobs = s.store.jobs()
    const t = s.clock.now()
    expect((await jobs.claim(t, LEASE, 'a'))?.attempts).toBe(1)
    expect(await jobs.claim(t + LEASE - 1, LEASE, 'b')).toBeNull()
    expect(await jobs.claim(t + LEASE, LEASE, 'b')).toBeNull()
    const again = await jobs.claim(t + LEASE + 1, LEASE, 'b')
    expect(again).toMatchObject({ feedback_id: 'f0', attempts: 2, lease_owner: 'b' })
  })

  test('kinds: a repo claims and waits only for its own kinds', async () => {
    const s = await fresh()
    const lc = s.store.lifecycle
    const t = s.clock.now()
    await lc.enqueue('process', { feedbackId: 'p', appId: 'a1' }, t - 1)
    await lc.enqueue('uploads_gc', {}, t + 100)
    const own = s.store.jobs(['agent', 'uploads_gc'])
    expect(await own.claim(t, LEASE, 'me')).toBeNull()
    expect(await own.nextDueAt()).toBe(t + 100)
    expect((await s.store.jobs(['process', 'batch_release']).nextDueAt())).toBe(t - 1)
    expect((await own.claim(t + 100, LEASE, 'me'))?.kind).toBe('uploads_gc')
    expect(() => s.store.jobs(['nope' as never])).toThrow('unknown job kind')
  })

  test('claimBatch: up to n due jobs of one kind, in queue order, leased together', async () => {
    const s = await fresh()
    await queue(s, 5)
    const lc = s.store.lifecycle
    await lc.enqueue('agent', { feedbackId: 'x' }, s.clock.now() - 100)
    const jobs = s.store.jobs()
    const t = s.clock.now()
    expect(await jobs.claimBatch('process', 0, t, LEASE, 'me')).toEqual([])
    const batch = await jobs.claimBatch('process', 3, t, LEASE, 'me')
    expect(batch.map((j) => j.feedback_id)).toEqual(['f0', 'f1', 'f2'])
    expect(batch.every((j) => j.lease_until === t + LEASE && j.attempts === 1)).toBe(true)
    expect((await jobs.claimBatch('process', 10, t, LEASE, 'me')).map((j) => j.feedback_id)).toEqual(['f3', 'f4'])
    expect(await jobs.claimBatch('process', 10, t, LEASE, 'me')).toEqual([])
  })

  test('finish, retry (backoff and error kept), defer (no attempt used), nextDueAt with leases', async () => {
    const s = await fresh()
    await queue(s, 3)
    const jobs = s.store.jobs()
    const t = s.clock.now()
    const [a, b, c] = await jobs.claimBatch('process', 3, t, LEASE, 'me')
    // Every job leased: due when the first lease runs out.
    expect(await jobs.nextDueAt()).toBe(t + LEASE)
    await jobs.finish(a.id)
    await jobs.retry(b.id, t + 5000, 'x'.repeat(3000))
    await jobs.defer(c.id, t + 10)
    const rows = await sql<{ id: number; run_after: number; lease_until: number | null; lease_owner: string | null; attempts: number; last_error: string | null }>(
      s, 'SELECT id, run_after, lease_until, lease_owner, attempts, last_error FROM jobs ORDER BY id',
    )
    expect(rows.map((r) => r.id)).toEqual([b.id, c.id])
    expect(rows[0]).toMatchObject({ run_after: t + 5000, lease_until: null, lease_owner: null, attempts: 1 })
    expect(rows[0].last_error).toHaveLength(2000)
    expect(rows[1]).toMatchObject({ run_after: t + 10, lease_until: null, attempts: 0, last_error: null })
    expect(await jobs.nextDueAt()).toBe(t + 10)
    // A defer never takes attempts below zero.
    await jobs.defer(c.id, t + 20)
    expect((await sql<{ attempts: number }>(s, 'SELECT attempts FROM jobs WHERE id = ?', [c.id]))[0].attempts).toBe(0)
    await jobs.finish(b.id)
    await jobs.finish(c.id)
    expect(await jobs.nextDueAt()).toBeNull()
  })

  test('release hands back only the given leases; reclaimOrphans those of gone owners (and of no owner)', async () => {
    const s = await fresh()
    await queue(s, 4)
    const jobs = s.store.jobs()
    const t = s.clock.now()
    const [a, b] = await jobs.claimBatch('process', 2, t, LEASE, 'alive')
    const [c] = await jobs.claimBatch('process', 1, t, LEASE, 'gone')
    const [d] = await jobs.claimBatch('process', 1, t, LEASE, 'legacy')
    await sql(s, 'UPDATE jobs SET lease_owner = NULL WHERE id = ?', [d.id])
    await jobs.release([a.id, 999_999])
    expect((await jobs.claim(t, LEASE, 'x'))?.id).toBe(a.id)
    const seen: string[] = []
    const n = await jobs.reclaimOrphans((owner) => (seen.push(owner), owner === 'gone'))
    expect(n).toBe(2)
    expect(seen.sort()).toEqual(['alive', 'gone', 'x'])
    const leased = await sql<{ id: number }>(s, 'SELECT id FROM jobs WHERE lease_until IS NOT NULL ORDER BY id')
    expect(leased.map((r) => r.id)).toEqual([a.id, b.id])
    expect([c.id, d.id].every((id) => id > b.id)).toBe(true)
  })

  test('hasKind and runAfterOf', async () => {
    const s = await fresh()
    const jobs = s.store.jobs()
    const lc = s.store.lifecycle
    expect(await jobs.hasKind('batch_release')).toBe(false)
    expect(await jobs.runAfterOf('batch_release', 'a1')).toBeNull()
    await lc.enqueue('batch_release', { appId: 'a1' }, 12345)
    expect(await jobs.hasKind('batch_release')).toBe(true)
    expect(await jobs.hasKind('uploads_gc')).toBe(false)
    expect(await jobs.runAfterOf('batch_release', 'a1')).toBe(12345)
    expect(await jobs.runAfterOf('batch_release', 'a2')).toBeNull()
  })

  test('the worker loop: start hands back a dead predecessor\'s lease, a commit wakes it at once, stop waits for the job in hand', async () => {
    const s = await fresh()
    const wake = s.store.wake
    const lc = s.store.lifecycle
    const jobs = s.store.jobs()
    // A lease of this very owner: a predecessor that died with it (the next start takes it back at once).
    await lc.enqueue('uploads_gc', {})
    await jobs.claim(s.clock.now(), LEASE, currentLeaseOwner())
    const ran: number[] = []
    let hold: Promise<void> | undefined
    const worker = new Worker(jobs, { uploads_gc: { run: async (job) => void ran.push(job.id) }, agent: { run: () => hold } }, s.clock, new Logger('silent'), { pollMs: 60_000 })
    wake.on(() => worker.wake())
    await worker.start()
    for (const deadline = Date.now() + 20_000; ran.length < 1 && Date.now() < deadline; ) await Bun.sleep(10)
    expect(ran).toHaveLength(1)
    // Woken by the commit, not by the (one-minute) poll.
    await lc.enqueue('uploads_gc', {})
    for (const deadline = Date.now() + 20_000; ran.length < 2 && Date.now() < deadline; ) await Bun.sleep(10)
    expect(ran).toHaveLength(2)
    let release!: () => void
    hold = new Promise<void>((r) => (release = r))
    await lc.enqueue('agent', { feedbackId: 'f1' })
    // Until the worker holds the agent job itself: a CI run saw the second cleanup job's lease, not yet
    // finished, stopped the worker before it claimed the agent job, and found that job still queued.
    const leased = async () => (await sql(s, "SELECT id FROM jobs WHERE lease_until IS NOT NULL AND kind = 'agent'")).length === 1
    for (const deadline = Date.now() + 20_000; !(await leased()) && Date.now() < deadline; ) await Bun.sleep(10)
    expect(await leased()).toBe(true)
    const stopping = worker.stop()
    release()
    await stopping
    // The agent job finished (its step returned); nothing is left leased.
    expect(await sql(s, 'SELECT id FROM jobs WHERE lease_until IS NOT NULL')).toEqual([])
    expect(await sql(s, 'SELECT id FROM jobs')).toEqual([])
    expect(worker.health().ok).toBe(false)
  })

  test('two nodes claiming at once never take the same job, and every job is claimed exactly once', async () => {
    const s = await fresh()
    const N = 300
    await queue(s, N)
    const other = await secondStore(s)
    try {
      const repos: JobsRepo[] = [s.store.jobs(), storeOf(other.storage, s.clock).jobs()]
      // Four claimers per node, one job or a few at a time, until the queue is empty.
      const claimed = await claimAllConcurrently(repos, s.clock.now(), LEASE, 3)
      expect(claimed).toHaveLength(N)
      expect(new Set(claimed).size).toBe(N)
      const rows = await sql<{ attempts: number; n: number }>(s, 'SELECT attempts, COUNT(*) AS n FROM jobs GROUP BY attempts')
      expect(rows.map((r) => [r.attempts, Number(r.n)])).toEqual([[1, N]])
    } finally {
      await other.close()
    }
  })
})

/**
 * Cluster mode: nodes' clocks drift, the database's does not. A real node's store (no `callerClock`)
 * compares leases and due times with the database's clock whatever `now` a node passes (issue 35.4: a
 * node three minutes ahead took the job leases others still held, and every job of a burst ran twice).
 */
describe('jobs repo [pg]: the database clock decides, never a node\'s', () => {
  const SKEW = 3 * 60_000
  /** Two "nodes" on one database, each its own pool, as real nodes open them. */
  async function twoNodes() {
    const s = await freshStore('pg')
    const pools = [openPool(s.location, 2), openPool(s.location, 2)]
    const [a, b] = pools.map((p) => storeOf(pgStorage(p)).jobs())
    const dbNow = async () => Number((await sql<{ now: number }>(s, 'SELECT (extract(epoch from clock_timestamp()) * 1000)::bigint AS now'))[0].now)
    return { s, a, b, dbNow, close: () => Promise.all(pools.map((p) => p.end())) }
  }

  test('a node 3 minutes ahead cannot take a lease another node holds', async () => {
    const { s, a, b, dbNow, close } = await twoNodes()
    try {
      await queue(s, 1, (await dbNow()) - 1)
      const held = await a.claim(await dbNow(), LEASE, 'node_a')
      expect(held).toMatchObject({ feedback_id: 'f0', lease_owner: 'node_a' })
      // Leased until the database's now + LEASE, not a node's.
      const now = await dbNow()
      expect(held!.lease_until).toBeGreaterThan(now + LEASE - 10_000)
      expect(held!.lease_until).toBeLessThanOrEqual(now + LEASE)
      // The fast node: its now is past node_a's lease on its own clock, and still it gets nothing.
      expect(await b.claim((await dbNow()) + SKEW, LEASE, 'node_fast')).toBeNull()
      expect(await b.claimBatch('process', 5, (await dbNow()) + SKEW, LEASE, 'node_fast')).toEqual([])
      const row = (await sql<{ lease_owner: string; attempts: number }>(s, 'SELECT lease_owner, attempts FROM jobs'))[0]
      expect(row).toEqual({ lease_owner: 'node_a', attempts: 1 })
      // Once the lease ran out on the database's clock, any node takes the job (the slow one included).
      await sql(s, 'UPDATE jobs SET lease_until = lease_until - ?', [LEASE + 1])
      expect(await b.claim((await dbNow()) - SKEW, LEASE, 'node_slow')).toMatchObject({ lease_owner: 'node_slow', attempts: 2 })
    } finally {
      await close()
    }
  })

  test('a job scheduled for later is not run early by a fast node; a slow node\'s lease is not born expired', async () => {
    const { s, a, b, dbNow, close } = await twoNodes()
    try {
      await queue(s, 1, (await dbNow()) + 60_000, 'later')
      expect(await b.claim((await dbNow()) + SKEW, LEASE, 'node_fast')).toBeNull()
      expect(await b.claimBatch('process', 5, (await dbNow()) + SKEW, LEASE, 'node_fast')).toEqual([])
      // Due on the database's clock: a node 3 minutes behind takes it, leased for LEASE from the database's now.
      await sql(s, 'UPDATE jobs SET run_after = run_after - 60000')
      const slow = await a.claim((await dbNow()) - SKEW, LEASE, 'node_slow')
      expect(slow?.feedback_id).toBe('later0')
      expect(slow!.lease_until).toBeGreaterThan((await dbNow()) + LEASE - 10_000)
      expect(await b.claim((await dbNow()) + SKEW, LEASE, 'node_fast')).toBeNull()
    } finally {
      await close()
    }
  })
})

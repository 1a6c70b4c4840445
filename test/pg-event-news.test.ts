/**
 * Event news on a real PostgreSQL (issue 38.4): a commit that appended events announces its Orgs with
 * their committed last seqs (src/db/pg/event-signal.ts), a write the group committer undoes takes its
 * news back, and a hub told the news (src/modules/events/hub.ts `heard`) hands the events to its streams
 * and dispatchers without reading `event_counters`, while its poll still finds what nobody announced.
 * The statements are counted on the store's own pool.
 */
import { afterEach, expect, test } from 'bun:test'
import type { PoolClient } from 'pg'
import { freshStore } from './dialects'
import { eventually } from './harness'
import { appendEventPg, appendEventsAcrossOrgs, appendEventsPg } from '../src/db/pg/outbox'
import { onEventsCommitted, type EventNews } from '../src/db/pg/event-signal'
import { PgGroupCommitter } from '../src/db/pg/group-commit'
import { withTransaction } from '../src/db/pg/transaction'
import { EventHub } from '../src/modules/events/hub'
import type { EventBatch } from '../src/modules/events/batch'
import type { PgStorage } from '../src/db/storage'
import type { Clock } from '../src/core/clock'

const stops: (() => void)[] = []
afterEach(() => {
  for (const s of stops.splice(0)) s()
})

const ev = (orgId: string, i: number) => ({ orgId, appId: 'a1', type: 'feedback.status_changed' as const, data: { feedbackId: `f${i}`, from: 'received' as const, to: 'sanitizing' as const } })

/** Every commit's news, in order. */
function newsHeard(): (EventNews | null)[] {
  const heard: (EventNews | null)[] = []
  stops.push(onEventsCommitted((n) => heard.push(n && new Map(n))))
  return heard
}

/** Counts, on the store's pool, the reads of event_counters a hub's look makes. */
function countCounterReads(storage: PgStorage) {
  const counts = { sums: 0, scans: 0 }
  const pool = storage.pool
  const query = pool.query.bind(pool) as (...args: unknown[]) => unknown
  ;(pool as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
    const text = typeof args[0] === 'string' ? args[0] : ((args[0] as { text?: string })?.text ?? '')
    if (/SUM\(last_seq\)/.test(text)) counts.sums++
    if (/FROM event_counters ORDER BY org_id/.test(text)) counts.scans++
    return query(...args)
  }
  return counts
}

test('a commit announces its Orgs and their committed seqs; a rolled-back transaction and a write the group committer undoes announce nothing', async () => {
  const s = await freshStore('pg')
  const { pool } = s.storage as PgStorage
  const heard = newsHeard()
  await withTransaction(pool, async (c) => {
    await appendEventPg(c, s.clock, ev('o1', 1))
    await appendEventsPg(c, s.clock, [ev('o1', 2), ev('o1', 3)])
    await appendEventPg(c, s.clock, ev('o2', 4))
    // The processing engine's batch: several Orgs in one statement.
    await appendEventsAcrossOrgs(c, s.clock, [ev('o1', 5), ev('o2', 6), ev('o1', 7)])
  })
  expect(heard).toEqual([new Map([['o1', 5], ['o2', 2]])])
  await expect(
    withTransaction(pool, async (c) => {
      await appendEventPg(c, s.clock, ev('o1', 5))
      throw new Error('boom')
    }),
  ).rejects.toThrow('boom')
  expect(heard.length).toBe(1)

  // One batch: o1's write commits, o2's appends and then throws (undone by its savepoint), o3's commits.
  const gc = new PgGroupCommitter(pool)
  const write = (orgId: string, fail: boolean) => async ({ client }: { client: PoolClient }) => {
    await appendEventPg(client, s.clock, ev(orgId, 9))
    if (fail) throw new Error('undone')
  }
  const results = await Promise.allSettled([gc.run(write('o1', false)), gc.run(write('o2', true)), gc.run(write('o3', false))])
  expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled'])
  expect(heard.at(-1)).toEqual(new Map([['o1', 6], ['o3', 1]]))
  const { rows } = await pool.query<{ org_id: string; last_seq: number }>('SELECT org_id, last_seq FROM event_counters ORDER BY org_id')
  expect(rows.map((r) => [r.org_id, Number(r.last_seq)])).toEqual([['o1', 6], ['o2', 2], ['o3', 1]])
})

test('a hub told the news hands every event to its streams and dispatchers without reading event_counters; its poll finds what nobody announced', async () => {
  const s = await freshStore('pg')
  const storage = s.storage as PgStorage
  const hub = new EventHub(s.store.events, { pollMs: 60_000, heartbeatMs: 60_000 })
  stops.push(() => hub.stop())
  await hub.check() // the first look: where the outbox stands
  const got: number[] = []
  const told = new Set<string>()
  const unsubscribe = hub.subscribe('o1', (batch: EventBatch) => {
    for (const r of batch.rows) got.push(r.seq)
    return 0
  })
  const unsubscribeAll = hub.subscribeAll((orgId) => told.add(orgId))
  await hub.whenReady('o1')
  // Wired as cluster mode wires it (src/runtime/cluster.ts): this node's commits, told without a read.
  const unwire = onEventsCommitted((news) => hub.heard(news))
  const counts = countCounterReads(storage)
  const commit = (orgId: string, n: number, clock: Clock = s.clock) =>
    withTransaction(storage.pool, async (c) => {
      for (let i = 0; i < n; i++) await appendEventPg(c, clock, ev(orgId, i))
    })
  for (let i = 0; i < 20; i++) await commit(i % 4 === 3 ? 'o2' : 'o1', 1)
  await eventually(() => (got.length >= 15 ? true : undefined), 20_000) // the hub's poll is a minute: only the news can deliver
  expect(got).toEqual(Array.from({ length: 15 }, (_, i) => i + 1))
  expect([...told].sort()).toEqual(['o1', 'o2'])
  expect(counts).toEqual({ sums: 0, scans: 0 })

  // The safety poll's one cheap question: the sum matches what the hub heard, so no scan.
  await hub.check()
  expect(counts).toEqual({ sums: 1, scans: 0 })

  // News lost (nobody announces these): the next poll sees the sum move, reads the counters, tells the stream.
  unwire()
  told.clear()
  await commit('o1', 3)
  await hub.check()
  expect(counts).toEqual({ sums: 2, scans: 1 })
  await eventually(() => (got.length >= 18 ? true : undefined), 20_000)
  expect(got.slice(15)).toEqual([16, 17, 18])
  expect([...told]).toEqual(['o1'])

  // The occasional recount reads every counter whatever the sum says; it finds nothing new here.
  told.clear()
  await hub.check(true)
  expect(counts).toEqual({ sums: 2, scans: 2 })
  expect(told.size).toBe(0)

  // Nobody listening on this node: a poll costs nothing, and events meanwhile are found once someone listens.
  unsubscribe()
  unsubscribeAll()
  await commit('o2', 2)
  await hub.check()
  expect(counts).toEqual({ sums: 2, scans: 2 })
  stops.push(hub.subscribeAll((orgId) => told.add(orgId)))
  await hub.check()
  expect([...told]).toEqual(['o2'])
})

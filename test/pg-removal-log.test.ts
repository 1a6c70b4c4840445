/**
 * The removal log on a real PostgreSQL (src/db/pg/removal-log.ts, src/nodes/removal-follower.ts): the ids
 * every removal took away, numbered in the order the removals committed and without holes, so a node's
 * cursor (one number) never skips a removal that committed late; rows pruned after an hour by the
 * next removal; a node whose cursor fell behind the pruning drops its indexes whole; the database away
 * is one warning, and a reader stopped by the shutdown (which closes the pool next) reads and warns no more.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Pool } from 'pg'
import { openPool } from '../src/db/pg/client-options'
import { lastRemovedSeq, LOG_KEEP_MS, logRemoved, PRUNE_SQL, removedSince } from '../src/db/pg/removal-log'
import { RemovalFollower, WOKEN_GAP_MS } from '../src/nodes/removal-follower'
import { Logger } from '../src/core/logger'
import { systemClock } from '../src/core/clock'
import { SpamShare } from '../src/abuse/spam-share'
import { createPgSpamMarks } from '../src/db/pg/spam-marks'
import { sharedPostgres } from './dialects'
import { pgMissingReason } from './pg-server'

const skip = pgMissingReason()
if (skip) console.warn(`pg-removal-log: skipped: ${skip}`)

describe.skipIf(Boolean(skip))('the removal log (real PostgreSQL)', () => {
  let pool: Pool
  beforeAll(async () => {
    const pg = await sharedPostgres()
    pool = openPool(await pg.createDatabase('removallog', { migrated: true }), 4)
  }, 60_000)
  afterAll(async () => {
    await pool?.end()
  })

  /** Logs `ids` in a transaction of its own, committed after `hold` resolves (default: at once). */
  async function removal(ids: string[], hold: Promise<unknown> = Promise.resolve()): Promise<void> {
    const client = await pool.connect()
    try {
      await client.query('BEGIN')
      await logRemoved(client, ids)
      await hold
      await client.query('COMMIT')
    } finally {
      client.release()
    }
  }
  const all = async () => (await removedSince(pool, 0, 1000)).map((r) => `${r.seq}:${r.id}`)

  test('a removal that began logging first and commits last holds back the next: the numbers follow the commits, without holes', async () => {
    await pool.query('DELETE FROM removed_reports')
    let commitFirst!: () => void
    const first = removal(['a1', 'a2'], new Promise<void>((resolve) => (commitFirst = resolve)))
    await Bun.sleep(100)
    // The second removal waits for the log's lock while the first is open; a reader sees neither yet.
    const second = removal(['b1'])
    await Bun.sleep(200)
    expect(await all()).toEqual([])
    commitFirst()
    await Promise.all([first, second])
    expect(await all()).toEqual(['1:a1', '2:a2', '3:b1'])
    // A rolled-back removal leaves no hole.
    const client = await pool.connect()
    await client.query('BEGIN')
    await logRemoved(client, ['gone'])
    await client.query('ROLLBACK')
    client.release()
    await removal(['c1'])
    expect(await all()).toEqual(['1:a1', '2:a2', '3:b1', '4:c1'])
  })

  test('rows older than an hour are pruned by the next removal; a node behind the pruning drops its indexes whole', async () => {
    await pool.query('DELETE FROM removed_reports')
    const forgotten: string[] = []
    let dropped = 0
    const follower = new RemovalFollower({
      read: (after, limit) => removedSince(pool, after, limit),
      last: () => lastRemovedSeq(pool),
      forget: async (ids) => void forgotten.push(...ids),
      forgetAll: () => void dropped++,
      log: new Logger('silent'),
    })
    await removal(['x1', 'x2'])
    await follower.wake()
    expect(forgotten).toEqual(['x1', 'x2'])
    // Two more the follower does not read yet, then everything is over an hour old.
    await removal(['y1'])
    await removal(['y2'])
    await pool.query('UPDATE removed_reports SET removed_at = removed_at - $1', [LOG_KEEP_MS + 60_000])
    // The next removal prunes them; its own rows go on from their numbers.
    await removal(['z1'])
    expect(await all()).toEqual(['5:z1'])
    await follower.wake()
    // y1 and y2 were pruned unread: the follower cannot know what they were, so every index goes.
    expect(dropped).toBe(1)
    expect(forgotten).toEqual(['x1', 'x2', 'z1'])
    await removal(['z2'])
    await follower.wake()
    expect(dropped).toBe(1)
    expect(forgotten.at(-1)).toBe('z2')
  })

  test('the prune goes by the key, not through the whole log (it runs at every removal, under the log\'s lock)', async () => {
    await pool.query('DELETE FROM removed_reports')
    // The hour after a retention sweep of 200,000 reports: nothing old enough to prune yet.
    await pool.query("INSERT INTO removed_reports (seq, feedback_id, removed_at) SELECT g, 'r' || g, (extract(epoch from clock_timestamp()) * 1000)::bigint FROM generate_series(1, 200000) g")
    await pool.query('ANALYZE removed_reports')
    const plan = (await pool.query(`EXPLAIN ${PRUNE_SQL}`, [LOG_KEEP_MS])).rows.map((r) => r['QUERY PLAN'] as string).join('\n')
    // Before: a Seq Scan on removed_reports (116 ms here) with the oldest 10,000 hashed.
    expect(plan).not.toContain('Seq Scan')
    const began = performance.now()
    await removal(['after-sweep'])
    console.log(`pg-removal-log: a removal logged beside a 200,000-row log in ${Math.round(performance.now() - began)} ms`)
    // Old enough: pruned as before, the oldest 10,000 at a time, the newest kept.
    await pool.query('UPDATE removed_reports SET removed_at = removed_at - $1 WHERE seq <= 15000', [LOG_KEEP_MS + 60_000])
    await removal(['next'])
    const { rows } = await pool.query<{ first: string; n: string }>('SELECT MIN(seq) AS first, COUNT(*) AS n FROM removed_reports')
    expect([Number(rows[0].first), Number(rows[0].n)]).toEqual([10_001, 200_002 - 10_000])
    await pool.query('DELETE FROM removed_reports')
  })

  test('a hole inside a page (a row pruned before an older one: the database clock stepped back) drops the indexes too', async () => {
    // removed_at is the database's clock when the row was logged: stepped back, a later removal's rows are
    // "older" and pruned an hour after their time, before the rows numbered below them. A follower reading
    // across that hole found its first row right after its cursor and went on, the pruned ids never dropped.
    await pool.query('DELETE FROM removed_reports')
    const forgotten: string[] = []
    let dropped = 0
    const follower = new RemovalFollower({
      read: (after, limit) => removedSince(pool, after, limit),
      last: () => lastRemovedSeq(pool),
      forget: async (ids) => void forgotten.push(...ids),
      forgetAll: () => void dropped++,
      log: new Logger('silent'),
    })
    await pool.query("INSERT INTO removed_reports (seq, feedback_id, removed_at) VALUES (1, 'h1', 1)")
    await follower.wake()
    await pool.query("INSERT INTO removed_reports (seq, feedback_id, removed_at) VALUES (2, 'h2', 1), (4, 'h4', 1)")
    await follower.wake()
    expect(dropped).toBe(1)
    expect(forgotten).toEqual(['h1', 'h2', 'h4'])
    await pool.query("INSERT INTO removed_reports (seq, feedback_id, removed_at) VALUES (5, 'h5', 1)")
    await follower.wake()
    expect(dropped).toBe(1)
  })

  test('a log reset below the cursor (a restored older database) drops the indexes and follows the new numbers', async () => {
    // Without the check, the rows numbered from 1 again were skipped up to the old cursor: their ids stayed
    // in this node's indexes (with their text) until a restart.
    await pool.query('DELETE FROM removed_reports')
    const forgotten: string[] = []
    let dropped = 0
    const lines: string[] = []
    const follower = new RemovalFollower({
      read: (after, limit) => removedSince(pool, after, limit),
      last: () => lastRemovedSeq(pool),
      forget: async (ids) => void forgotten.push(...ids),
      forgetAll: () => void dropped++,
      log: new Logger('warn', (line) => void lines.push(line)),
    })
    await removal(['r1', 'r2', 'r3'])
    await follower.wake()
    expect(forgotten).toEqual(['r1', 'r2', 'r3'])
    await follower.wake()
    expect(dropped).toBe(0)
    // The restore: the log as it was before those removals (empty), then a new removal numbered 1.
    await pool.query('DELETE FROM removed_reports')
    await removal(['s1'])
    await follower.wake()
    expect(dropped).toBe(1)
    expect(forgotten).toEqual(['r1', 'r2', 'r3', 's1'])
    expect(lines.some((l) => l.includes('removal log reset below'))).toBe(true)
    await removal(['s2'])
    await follower.wake()
    expect(dropped).toBe(1)
    expect(forgotten.at(-1)).toBe('s2')
  })

  test('the database away: one warning for the outage, the cursor kept; stopped (a shutdown closing the pool): no read, no warning', async () => {
    const pg = await sharedPostgres()
    const lost = openPool(await pg.createDatabase('removallost', { migrated: true }), 1)
    const lines: string[] = []
    const forgotten: string[] = []
    const follower = new RemovalFollower({
      read: (after, limit) => removedSince(lost, after, limit),
      last: () => lastRemovedSeq(lost),
      forget: async (ids) => void forgotten.push(...ids),
      forgetAll: () => {},
      log: new Logger('warn', (line) => void lines.push(line)),
    })
    await follower.wake()
    await lost.end()
    await follower.wake()
    await follower.wake()
    // The logger writes on the next turn of the event loop, its lines joined.
    const warnings = async () => (await Bun.sleep(20), lines.join('').split('removal log unreadable').length - 1)
    expect(await warnings()).toBe(1)
    // Another follower (no outage noted yet) stopped while its first read is under way, then woken.
    const stopping = new RemovalFollower({ read: (after, limit) => removedSince(lost, after, limit), last: () => lastRemovedSeq(lost), forget: async () => {}, forgetAll: () => {}, log: new Logger('warn', (line) => void lines.push(line)) })
    stopping.start()
    stopping.stop()
    await stopping.wake()
    expect(await warnings()).toBe(1)
    // The spam marks' reader (src/abuse/spam-share.ts) stops the same way.
    const spam = new SpamShare({ repo: createPgSpamMarks(lost), load: async () => 0, clock: systemClock, log: new Logger('warn', (line) => void lines.push(line)) })
    spam.start()
    spam.stop()
    await spam.wake()
    await Bun.sleep(20)
    expect(lines.join('')).not.toContain('spam decisions of other nodes unreadable')
  })

  test('a flood of wake-ups (anyone who can publish on the Redis channel) costs one read per WOKEN_GAP_MS, not one per round trip', async () => {
    // The channel is open to anyone with access to the Redis server, and a live node's id is in every message
    // there: `<node id> removed` or `<node id> spam` passes the peer check. Each woke a read, and a read under
    // way only put the next one off until it ended: a flood held a connection of each node's pool reading
    // back to back (thousands of statements a second per node, for nothing).
    let logReads = 0
    let spamReads = 0
    const follower = new RemovalFollower({
      read: (after, limit) => (logReads++, removedSince(pool, after, limit)),
      last: () => lastRemovedSeq(pool),
      forget: async () => {},
      forgetAll: () => {},
      log: new Logger('silent'),
    })
    const marks = createPgSpamMarks(pool)
    const spam = new SpamShare({ repo: { ...marks, decidedSince: (since, limit) => (spamReads++, marks.decidedSince(since, limit)) }, load: async () => 0, clock: systemClock, log: new Logger('silent') })
    const FLOOD_MS = 1_000
    const began = performance.now()
    const until = began + FLOOD_MS
    while (performance.now() < until) {
      for (let i = 0; i < 50; i++) void follower.wake(), void spam.wake()
      await new Promise((r) => setImmediate(r))
    }
    await Promise.all([follower.wake(), spam.wake()])
    // One read a gap over the time the flood and its last reads really took: a loaded machine's stall past
    // `until` (or in the last reads) is time in which spaced reads may come too (19 of a fixed 23 under load).
    const most = Math.ceil((performance.now() - began) / WOKEN_GAP_MS) + 3
    expect(logReads).toBeLessThanOrEqual(most)
    expect(spamReads).toBeLessThanOrEqual(most)
    // Still read: the last wake-up of the flood is answered.
    expect(logReads).toBeGreaterThan(1)
  })
})

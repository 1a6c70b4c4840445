/**
 * A node drops what the removal log names from the index of the App that holds it, and from no other
 * (src/dedup/clusterer.ts `holders`), on a real PostgreSQL: the clustering service as a node runs it, the
 * removal logged and read by the follower as in cluster mode. Before, every id was looked up in each App
 * index the node held: a removal of 100,000 reports of one App cost a node holding 50 Apps' indexes
 * 5,000,000 lookups (bench/removal-drop.ts), a million reports ten times that, on its processing thread.
 * Counted here on the real indexes (AppIndex.has), not timed. And the reports an index holds are dropped in
 * slices (clusterer.ts `forgetRemovedInSlices`): the thread turns meanwhile (one block before).
 */
import { afterAll, expect, test } from 'bun:test'
import { freshStore, type FreshStore } from './dialects'
import { seedOrgApp, sql } from './repos/store-fixtures'
import { pgMissingReason } from './pg-server'
import { AppIndex } from '../src/dedup/app-index'
import { createPgClusterService } from '../src/dedup/pg-service'
import { DEFAULT_THRESHOLDS } from '../src/dedup/decide'
import { lastRemovedSeq, logRemoved, removedSince } from '../src/db/pg/removal-log'
import { RemovalFollower } from '../src/nodes/removal-follower'
import { Logger } from '../src/core/logger'
import type { PgStore } from '../src/db/pg/store'

const skip = pgMissingReason()
if (skip) console.warn(`pg-removal-drop: skipped: ${skip}`)

const PER_APP = 200
const WORDS = 'export invoice pdf spinner checkout cart login password reset email upload avatar crop settings profile dashboard chart filter search sort page button modal dialog save cancel delete archive timeout network offline sync token session'.split(' ')
const text = (n: number) => `${Array.from({ length: 12 }, (_, k) => WORDS[(n * 7 + k * 13) % WORDS.length]).join(' ')} case ${n}`
const id = (app: string, n: number) => `${app}${n.toString(16).padStart(22, '0')}`

const has = AppIndex.prototype.has
afterAll(() => {
  AppIndex.prototype.has = has
})

async function seed(s: FreshStore, appId: string): Promise<string[]> {
  await seedOrgApp(s, 'o1', appId)
  const ids = Array.from({ length: PER_APP }, (_, n) => id(appId, n))
  for (const [n, key] of ids.entries()) {
    await sql(s, "INSERT INTO feedback (id, org_id, app_id, status, text, submitted_mode, redactions, created_at, updated_at) VALUES (?, 'o1', ?, 'sanitized', ?, 'public', '{}', ?, ?)", [key, appId, text(n), n, n])
  }
  return ids
}

test.skipIf(Boolean(skip))("a removal of one App's reports looks only into that App's index; the removed leave it, the rest stay", async () => {
  const s = await freshStore('pg')
  const pool = s.storage.dialect === 'pg' ? s.storage.pool : undefined
  if (!pool) throw new Error('a PostgreSQL store')
  const [a, b] = [await seed(s, 'aa'), await seed(s, 'bb')]
  const cluster = createPgClusterService((s.store as PgStore).sides, s.clock, DEFAULT_THRESHOLDS)
  expect([await cluster.indexSize('aa'), await cluster.indexSize('bb')]).toEqual([PER_APP, PER_APP])

  // Half of A's reports, and reports no index here holds (another node's Apps, ids older than the index).
  const gone = [...a.slice(0, PER_APP / 2), ...Array.from({ length: 1_000 }, (_, n) => id('cc', n))]
  await sql(s, 'DELETE FROM feedback WHERE id = ANY(?)', [gone])
  const client = await pool.connect()
  try {
    await client.query('BEGIN')
    await logRemoved(client, gone)
    await client.query('COMMIT')
  } finally {
    client.release()
  }

  // Every lookup on an index, per index.
  const lookups = new Map<AppIndex, number>()
  AppIndex.prototype.has = function (this: AppIndex, key: string) {
    lookups.set(this, (lookups.get(this) ?? 0) + 1)
    return has.call(this, key)
  }
  const follower = new RemovalFollower({
    read: (after, limit) => removedSince(pool, after, limit),
    last: () => lastRemovedSeq(pool),
    forget: (ids) => cluster.forgetRemoved(ids),
    forgetAll: () => cluster.forget(),
    log: new Logger('silent'),
  })
  await follower.wake()
  follower.stop()
  AppIndex.prototype.has = has

  // One index looked into (A's), once per report of it that went. Before: both, 1,100 lookups each.
  expect([...lookups.values()]).toEqual([PER_APP / 2])
  expect(await cluster.indexSize('aa')).toBe(PER_APP / 2)
  expect(await cluster.indexSize('bb')).toBe(PER_APP)
  // What /similar serves of A is what is left of A.
  const near = await cluster.similar(a[PER_APP - 1], 50)
  expect(near.length).toBeGreaterThan(0)
  for (const n of near) expect(a.indexOf(n.id)).toBeGreaterThanOrEqual(PER_APP / 2)
  expect((await cluster.similar(b[0], 5)).every((n) => b.includes(n.id))).toBe(true)

  // An index dropped (its partition moved away) takes its reports out of the map; built again, it holds them anew.
  cluster.forget('aa')
  await cluster.forgetRemoved([a[PER_APP - 1]])
  expect(await cluster.indexSize('aa')).toBe(PER_APP / 2) // built from the database, where the report still is
  await sql(s, 'DELETE FROM feedback WHERE id = ?', [a[PER_APP - 1]])
  await cluster.forgetRemoved([a[PER_APP - 1]])
  expect(await cluster.indexSize('aa')).toBe(PER_APP / 2 - 1)
}, 60_000)

test.skipIf(Boolean(skip))('reports held by an index are dropped in slices: the thread turns meanwhile', async () => {
  const s = await freshStore('pg')
  await seedOrgApp(s, 'o1', 'dd')
  // What a node may be told in one call (a removal's own node is told a batch; the follower a page of 5,000).
  const PAGE = 20_000
  // One statement: PAGE sanitized reports of App dd, each its own words.
  await sql(
    s,
    `INSERT INTO feedback (id, org_id, app_id, status, text, submitted_mode, redactions, created_at, updated_at)
     SELECT 'dd' || lpad(to_hex(n), 22, '0'), 'o1', 'dd', 'sanitized', 'report ' || n || ' word' || (n % 97) || ' term' || (n % 89) || ' thing' || (n % 83), 'public', '{}', n, n
     FROM generate_series(0, ?::int - 1) AS n`,
    [PAGE],
  )
  const cluster = createPgClusterService((s.store as PgStore).sides, s.clock, DEFAULT_THRESHOLDS)
  expect(await cluster.indexSize('dd')).toBe(PAGE)
  const ids = Array.from({ length: PAGE }, (_, n) => id('dd', n))
  let done = false
  let turns = 0
  const turning = (async () => {
    while (!done) {
      await new Promise((resolve) => setImmediate(resolve))
      turns++
    }
  })()
  const began = performance.now()
  await cluster.forgetRemoved(ids).finally(() => (done = true))
  const ms = performance.now() - began
  await turning
  console.log(`pg-removal-drop: ${PAGE} held ids dropped in ${Math.round(ms)} ms with ${turns} turns of the event loop meanwhile`)
  // Before: one block (the turn after it only). Each 10 ms of work yields once.
  expect(turns).toBeGreaterThanOrEqual(3)
  expect(await cluster.indexSize('dd')).toBe(0)
}, 60_000)

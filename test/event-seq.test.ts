/**
 * An Org's event seq is read, not counted (lifecycle/outbox.ts): one more than the larger of its newest
 * event and the floor deletes leave in event_counters (the events_seq_floor trigger, migration 0015).
 * Cursors, Last-Event-ID, SSE and webhooks rely on it rising forever: these tests delete events every
 * way they can go (retention, all of an Org's events, the newest only, a raw DELETE) and append from two
 * threads at once, and check that no seq is ever handed out twice or goes back.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { storeOf } from './dialects'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import type { Database } from 'bun:sqlite'
import { openDatabase } from '../src/db/sqlite/client'
import { applyMigrations } from '../src/db/sqlite/migrate'
import { createOutbox } from '../src/db/sqlite/outbox'
import { sqliteStorage } from '../src/db/sqlite/storage'
import { ManualClock, systemClock, type Clock } from '../src/core/clock'
import { idsBefore } from '../src/modules/events/repo'
import { tempDir } from './temp-dirs'

const DAY_MS = 24 * 3600_000
const dirs: string[] = []
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })))

function freshDb(): { sqlite: Database; file: string } {
  const dir = tempDir('fixloop-seq-')
  dirs.push(dir)
  const file = join(dir, 'fixloop.db')
  const { sqlite } = openDatabase(file)
  applyMigrations(sqlite)
  return { sqlite, file }
}

function appender(sqlite: Database, clock: Clock = systemClock) {
  const outbox = createOutbox(sqlite, clock)
  return (orgId: string) => sqlite.transaction(() => outbox.append({ orgId, appId: null, type: 'webhook.test', data: { webhookId: 'w' } })).immediate()
}

const count = (sqlite: Database, sql: string, ...args: string[]) => (sqlite.query(sql).get(...args) as { n: number }).n

describe('event seq without a counter write per event', () => {
  test('retention that removes every event of an Org: the next seq still follows the last one, for the feed too', async () => {
    const { sqlite } = freshDb()
    const old = new ManualClock(Date.now() - 40 * DAY_MS)
    const putOld = appender(sqlite, old)
    const put = appender(sqlite)
    const seqs = [putOld('a'), putOld('a'), putOld('a'), putOld('b')]
    expect(seqs).toEqual([1, 2, 3, 1])
    const repo = storeOf(sqliteStorage(sqlite)).events
    expect(await repo.purgeBefore(Date.now() - 30 * DAY_MS)).toBe(4)
    expect(count(sqlite, 'SELECT COUNT(*) AS n FROM events')).toBe(0)
    expect(await repo.lastSeq('a')).toBe(3)
    expect(await repo.lastSeq('b')).toBe(1)
    // A cursor at the end of the purged events stays at the end; a webhook created now starts there.
    expect(await repo.page('a', { after: 0, limit: 10 })).toEqual({ rows: [], nextAfter: 3 })
    expect([put('a'), put('b'), put('a')]).toEqual([4, 2, 5])
  })

  test('retention keeps recent events and purges by age even when old events are the newest seqs', async () => {
    const { sqlite } = freshDb()
    const clock = new ManualClock(Date.now())
    const put = appender(sqlite, clock)
    expect([put('a'), put('a')]).toEqual([1, 2])
    clock.set(Date.now() - 31 * DAY_MS) // a clock set back: old stamps on the newest seqs
    expect([put('a'), put('a')]).toEqual([3, 4])
    const repo = storeOf(sqliteStorage(sqlite)).events
    expect(await repo.purgeBefore(Date.now() - 30 * DAY_MS)).toBe(2)
    expect((sqlite.query("SELECT seq FROM events WHERE org_id = 'a' ORDER BY seq").all() as { seq: number }[]).map((r) => r.seq)).toEqual([1, 2])
    clock.set(Date.now())
    expect(put('a')).toBe(5)
  })

  test('deleting old events below the newest writes no floor; deleting the newest, in any order, does', () => {
    const { sqlite } = freshDb()
    const put = appender(sqlite)
    for (let i = 0; i < 6; i++) put('a')
    sqlite.run("DELETE FROM events WHERE org_id = 'a' AND seq <= 3")
    expect(count(sqlite, 'SELECT COUNT(*) AS n FROM event_counters')).toBe(0)
    expect(put('a')).toBe(7)
    // Newest first, then the rest in reverse: the floor holds the highest seq ever deleted.
    sqlite.run("DELETE FROM events WHERE org_id = 'a' AND seq = 7")
    expect(count(sqlite, "SELECT last_seq AS n FROM event_counters WHERE org_id = 'a'")).toBe(7)
    sqlite.run("DELETE FROM events WHERE org_id = 'a'")
    expect(count(sqlite, "SELECT last_seq AS n FROM event_counters WHERE org_id = 'a'")).toBe(7)
    expect(put('a')).toBe(8)
  })

  test('a rolled-back delete leaves no floor and the seq where it was', () => {
    const { sqlite } = freshDb()
    const put = appender(sqlite)
    put('a')
    put('a')
    expect(() =>
      sqlite.transaction(() => {
        sqlite.run('DELETE FROM events')
        throw new Error('undo')
      })(),
    ).toThrow('undo')
    expect(count(sqlite, 'SELECT COUNT(*) AS n FROM event_counters')).toBe(0)
    expect(put('a')).toBe(3)
  })

  test('a floor written before migration 0015 (when every append raised the counter) still holds', async () => {
    const { sqlite } = freshDb()
    // A database whose events were all purged under the old scheme: only the counter remembers seq 41.
    sqlite.run("INSERT INTO event_counters (org_id, last_seq) VALUES ('a', 41)")
    expect(appender(sqlite)('a')).toBe(42)
    expect(await storeOf(sqliteStorage(sqlite)).events.lastSeq('a')).toBe(42)
  })

  test('two threads appending to one Org at once, each on its own connection: seqs 1..2n, none twice, no gap', async () => {
    const { sqlite, file } = freshDb()
    const n = 400
    const other = new Worker(new URL('./fixtures/outbox-appender.ts', import.meta.url).href)
    try {
      const theirs = new Promise<number[]>((resolve) => {
        other.onmessage = (e: MessageEvent) => resolve(e.data.seqs)
      })
      other.postMessage({ file, orgId: 'a', n })
      const put = appender(sqlite)
      const mine: number[] = []
      // Interleave with the other thread: a macrotask between appends lets its transactions in.
      for (let i = 0; i < n; i++) {
        mine.push(put('a'))
        if (i % 10 === 0) await Bun.sleep(0)
      }
      const all = [...mine, ...(await theirs)]
      expect(new Set(all).size).toBe(2 * n)
      expect([...all].sort((x, y) => x - y)).toEqual(Array.from({ length: 2 * n }, (_, i) => i + 1))
      // Each thread saw its own seqs rise.
      for (const list of [mine, await theirs]) expect(list).toEqual([...list].sort((x, y) => x - y))
    } finally {
      other.terminate()
    }
  })

  test('idsBefore cuts at the second after the time given, as ids are stamped', () => {
    const at = Date.UTC(2026, 10, 23, 12, 0, 0, 500)
    const seconds = Math.floor(at / 1000)
    expect(idsBefore(at)).toBe((seconds + 1).toString(16).padStart(8, '0'))
    const clock = new ManualClock(at)
    const { sqlite } = freshDb()
    appender(sqlite, clock)('a')
    const id = (sqlite.query('SELECT id FROM events').get() as { id: string }).id
    expect(id < idsBefore(at)).toBe(true)
    expect(id < idsBefore(at - 1000)).toBe(false)
  })
})

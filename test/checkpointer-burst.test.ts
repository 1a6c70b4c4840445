/**
 * The WAL checkpointer thread (src/db/sqlite/checkpointer.ts) and intake bursts: a TRUNCATE holds SQLite's write
 * lock while it resets the file (150-400 ms for a burst-sized WAL on this project's VM), so while intake
 * saturates its core (write-turns.ts records full group commits) the TRUNCATE waits and PASSIVE
 * checkpoints go on; once the burst is over, the WAL is truncated at the next tick.
 */
import { afterAll, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { statSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { Checkpointer } from '../src/db/sqlite/checkpointer'
import { WriteTurns } from '../src/db/sqlite/write-turns'
import { Logger } from '../src/core/logger'
import { tempDir } from './harness'

const dir = tempDir('fixloop-ckpt-')
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const walBytes = (file: string) => {
  try {
    return statSync(`${file}-wal`).size
  } catch {
    return 0
  }
}

/** Polls the WAL's size every 100 ms, at most `tries` times; true once it is empty. */
async function walEmptied(file: string, tries: number): Promise<boolean> {
  for (let i = 0; i < tries; i++) {
    await Bun.sleep(100)
    if (walBytes(file) === 0) return true
  }
  return false
}

test('no TRUNCATE during a saturating burst; the WAL is emptied within a tick or two after it', async () => {
  const file = join(dir, 'burst.db')
  const db = new Database(file, { create: true })
  db.run('PRAGMA journal_mode = WAL')
  db.run('PRAGMA busy_timeout = 5000')
  db.run('CREATE TABLE t (v TEXT)')
  const turns = new WriteTurns()
  // Ticks every 100 ms, a TRUNCATE due every 300 ms.
  const ckpt = new Checkpointer(db, file, new Logger('silent'), 100, 300)
  ckpt.start(turns)
  const insert = db.query('INSERT INTO t (v) VALUES (?)')
  try {
    // A 1.5 s "burst": full group commits all the time.
    const end = performance.now() + 1500
    let maxDuringBurstTail = 0
    while (performance.now() < end) {
      db.transaction(() => {
        for (let i = 0; i < 20; i++) insert.run('x'.repeat(500))
      })()
      turns.noteIntakeCommit(true)
      // After the first TRUNCATE would have been due, the WAL only grows.
      if (performance.now() > end - 1000) maxDuringBurstTail = Math.max(maxDuringBurstTail, walBytes(file))
      await Bun.sleep(5)
    }
    const atBurstEnd = walBytes(file)
    expect(atBurstEnd).toBeGreaterThan(0)
    expect(atBurstEnd).toBeGreaterThanOrEqual(maxDuringBurstTail)
    // The burst is over: 1 s of quiet, then the next tick truncates.
    expect(await walEmptied(file, 60)).toBe(true)
  } finally {
    await ckpt.stop()
    db.close()
  }
})

test('without intake commit times (no turns) the TRUNCATE runs on its schedule, as before', async () => {
  const file = join(dir, 'plain.db')
  const db = new Database(file, { create: true })
  db.run('PRAGMA journal_mode = WAL')
  db.run('CREATE TABLE t (v TEXT)')
  const ckpt = new Checkpointer(db, file, new Logger('silent'), 100, 300)
  ckpt.start()
  try {
    const insert = db.query('INSERT INTO t (v) VALUES (?)')
    db.transaction(() => {
      for (let i = 0; i < 200; i++) insert.run('y'.repeat(500))
    })()
    expect(walBytes(file)).toBeGreaterThan(0)
    expect(await walEmptied(file, 30)).toBe(true)
  } finally {
    await ckpt.stop()
    db.close()
  }
})

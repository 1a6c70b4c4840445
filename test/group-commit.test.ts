/**
 * The group committer (src/db/sqlite/group-commit.ts) on real SQLite files: writes queued in one turn commit
 * together, a failing write is undone alone, nothing resolves before COMMIT, and a BEGIN that finds the
 * database busy (another connection holds the write lock) is tried again instead of failing the batch.
 */
import { afterEach, beforeEach, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { tempDir } from './harness'
import { GroupCommitter } from '../src/db/sqlite/group-commit'

let dir: string
let file: string
let main: Database
let other: Database

function open(busyTimeoutMs: number): Database {
  const db = new Database(file, { create: true })
  db.run(`PRAGMA busy_timeout = ${busyTimeoutMs}`)
  db.run('PRAGMA journal_mode = WAL')
  return db
}

const count = (db: Database): number => (db.query('SELECT count(*) AS n FROM t').get() as { n: number }).n

beforeEach(() => {
  dir = tempDir('fixloop-group-commit-')
  file = join(dir, 'gc.db')
  // No busy wait on the committer's connection: BEGIN meets SQLITE_BUSY at once while `other` writes.
  main = open(0)
  main.run('CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL UNIQUE)')
  other = open(0)
})
afterEach(() => {
  main.close()
  other.close()
  rmSync(dir, { recursive: true, force: true })
})

test('writes of one turn commit in one transaction; a failing write is undone alone and rejects only its caller', async () => {
  const gc = new GroupCommitter(main)
  const insert = main.prepare('INSERT INTO t (v) VALUES (?)')
  const results = await Promise.allSettled([
    gc.run(() => insert.run('a').changes),
    gc.run(() => {
      insert.run('b')
      insert.run('a') // UNIQUE violation: 'b' must be undone with it
    }),
    gc.run(() => insert.run('c').changes),
  ])
  expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled'])
  expect((main.query('SELECT v FROM t ORDER BY v').all() as { v: string }[]).map((r) => r.v)).toEqual(['a', 'c'])
  expect(gc.lastCommitAt).toBeGreaterThan(0)
})

test('a BEGIN that finds the database busy is retried: the writes commit once the other writer is done', async () => {
  const gc = new GroupCommitter(main)
  const insert = main.prepare('INSERT INTO t (v) VALUES (?)')
  other.run('BEGIN IMMEDIATE')
  other.run("INSERT INTO t (v) VALUES ('other')")
  let settled = false
  const first = gc.run(() => insert.run('mine').changes).finally(() => (settled = true))
  await Bun.sleep(30)
  // Still waiting (not rejected with "database is locked"), and nothing of it is visible yet.
  expect(settled).toBe(false)
  // A write queued meanwhile joins the waiting batch.
  const second = gc.run(() => insert.run('mine too').changes)
  other.run('COMMIT')
  expect(await first).toBe(1)
  expect(await second).toBe(1)
  expect(count(other)).toBe(3)
})

test('a database busy for longer than the retry window fails the batch with SQLITE_BUSY, and later writes still commit', async () => {
  const gc = new GroupCommitter(main, undefined, 512, 8, 60)
  const insert = main.prepare('INSERT INTO t (v) VALUES (?)')
  other.run('BEGIN IMMEDIATE')
  const error = await gc.run(() => insert.run('lost').changes).catch((e) => e)
  expect((error as { code?: string }).code).toBe('SQLITE_BUSY')
  other.run('ROLLBACK')
  expect(await gc.run(() => insert.run('later').changes)).toBe(1)
  expect((main.query('SELECT v FROM t').all() as { v: string }[]).map((r) => r.v)).toEqual(['later'])
})

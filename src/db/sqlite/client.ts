/**
 * Opens the SQLite database with its pragmas in a deliberate order, and wraps it with drizzle.
 */
import { Database } from 'bun:sqlite'
import { drizzle, type BunSQLiteDatabase } from 'drizzle-orm/bun-sqlite'
import { createPrivateFile } from '../data-dir'
import { openRefusal } from '../open-refusal'

/**
 * drizzle without the schema: fixloop writes every query with the query builder or SQL, never the
 * relational `db.query` API, whose table map drizzle built from the whole schema at each open (~4 ms CPU
 * of every command, server start and thread).
 */
export type Db = BunSQLiteDatabase & { $client: Database }

/**
 * `autoCheckpoint: false` for a second connection of the server (the processing thread): the checkpointer
 * thread copies the WAL back, and the HTTP thread falls back to auto-checkpoints if it fails.
 * `synchronous`: `full` (default) for the connection whose commits answer clients (intake's group commit,
 * the dashboard, the CLI): the WAL is synced before the answer, so what was acknowledged survives a power
 * loss; one sync per group commit, not per request. `normal` for the background threads: their commits
 * answer nobody, a lost one is redone from its job row, and the next `full` commit syncs them with it.
 */
export function openDatabase(file: string, options: { autoCheckpoint?: boolean; synchronous?: 'full' | 'normal' } = {}): { sqlite: Database; db: Db } {
  // Owner-only from the first byte (reports not yet sanitized, sealed secrets); -wal/-shm inherit it.
  if (file !== ':memory:' && !file.startsWith('file:')) createPrivateFile(file)
  let sqlite: Database | undefined
  try {
    sqlite = new Database(file, { create: true, strict: true })
    setPragmas(sqlite, options)
  } catch (e) {
    sqlite?.close()
    // A read-only or full disk, no inodes for -wal/-shm, a damaged file: the operator's to fix (exit 2).
    throw openRefusal(file, e) ?? e
  }
  const db = drizzle({ client: sqlite }) as Db
  return { sqlite, db }
}

function setPragmas(sqlite: Database, options: { autoCheckpoint?: boolean; synchronous?: 'full' | 'normal' }): void {
  // busy_timeout first: the switch to WAL itself needs a lock and can collide with a CLI process.
  sqlite.run('PRAGMA busy_timeout = 5000')
  // WAL: readers never block the writer, and the admin CLI can write while the server runs.
  sqlite.run('PRAGMA journal_mode = WAL')
  // NORMAL is durable across process crashes in WAL mode; FULL across OS crashes and power loss too.
  sqlite.run(`PRAGMA synchronous = ${options.synchronous === 'normal' ? 'NORMAL' : 'FULL'}`)
  sqlite.run('PRAGMA foreign_keys = ON')
  // The worker overwrites each raw report with its sanitized text in place. Without secure_delete the
  // old cell bytes stay in the page's free space (and freed overflow pages), so secrets would outlive
  // sanitizing in the file; ON (not FAST) also zeroes freelist pages.
  sqlite.run('PRAGMA secure_delete = ON')
  // Keep the WAL from growing without bound between checkpoints under a write burst.
  sqlite.run(`PRAGMA wal_autocheckpoint = ${options.autoCheckpoint === false ? 0 : 1000}`)
  sqlite.run('PRAGMA cache_size = -65536')
  sqlite.run('PRAGMA temp_store = MEMORY')
  sqlite.run('PRAGMA mmap_size = 268435456')
}

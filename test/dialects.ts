/**
 * Runs one set of cases against both storage dialects: a fresh SQLite file (migrated) and a fresh
 * PostgreSQL database (migrated) on the real server test/pg-server.ts starts, one server per test file.
 * No mocks: the same repository code the server runs, on the real engines.
 *
 *   describeEachDialect('tenants repo', (fresh) => {
 *     test('…', async () => { const { storage, clock } = await fresh(); … })
 *   })
 *
 * `fresh()` gives a new, empty, migrated store per call (cheap: a temp file, or CREATE DATABASE); stores
 * are closed and removed after the file. Without the postgresql package the PostgreSQL half fails with a
 * message saying what to install (never skips silently).
 */
import { describe } from 'bun:test'
import { copyFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { openDatabase } from '../src/db/sqlite/client'
import { applyMigrations } from '../src/db/sqlite/migrate'
import { sqliteStorage } from '../src/db/sqlite/storage'
import { pgStorage } from '../src/db/pg/storage'
import { openPool } from '../src/db/pg/client-options'
import { applyPgMigrations } from '../src/db/pg/migrate'
import type { Dialect, Storage } from '../src/db/storage'
import { openSqliteStore, type SqliteStore } from '../src/db/sqlite/store'
import { openPgStore, type PgStore } from '../src/db/pg/store'
import { systemClock } from '../src/core/clock'
import { createSqliteProcessingEngine } from '../src/worker/processing-sqlite'
import { createPgProcessingEngine } from '../src/worker/processing-pg'
import type { Processing } from '../src/worker/processing'
import { startPostgres, type PgServer } from './pg-server'
import type { Clock } from '../src/core/clock'
import { tempDir } from './temp-dirs'
import { onceAtFileEnd } from './file-end'
import { migratedSqlite } from './migrated-sqlite'

/**
 * The store over `storage` (a second pool or connection, another "node"), as the runtime builds it
 * (src/runtime/open.ts): each call a store of its own, with its own lifecycle writer and committer.
 */
export function storeOf(storage: Storage, clock: Clock = systemClock): SqliteStore | PgStore {
  return storage.dialect === 'sqlite' ? openSqliteStore(storage, clock) : openPgStore(storage, clock)
}

export const DIALECTS: readonly Dialect[] = ['sqlite', 'pg']

/** A settable clock for repository cases (epoch ms). */
export function testClock(start = Date.UTC(2026, 0, 1)): Clock & { set(ms: number): void; advance(ms: number): void } {
  let now = start
  return { now: () => now, set: (ms) => void (now = ms), advance: (ms) => void (now += ms) }
}

export interface FreshStore {
  storage: Storage
  /** Every repository over `storage`, on `clock` (src/db/store.ts). */
  store: SqliteStore | PgStore
  dialect: Dialect
  clock: ReturnType<typeof testClock>
  /** For PostgreSQL: the database URL (a second pool, a second "node"); for SQLite: the file path. */
  location: string
}

/** The processing engine of the store's dialect, in this process (as src/runtime/processing.ts builds it). */
export function processingOf(store: SqliteStore | PgStore, clock: Clock): Processing {
  return store.dialect === 'sqlite' ? createSqliteProcessingEngine(store, clock) : createPgProcessingEngine(store, clock)
}

let pg: Promise<PgServer> | undefined
const closers: (() => Promise<void> | void)[] = []
/** The stores and the PostgreSQL this file started, closed after it (test/file-end.ts). */
function closeAfterFile(): void {
  onceAtFileEnd('dialects', async () => {
    const server = pg
    pg = undefined
    try {
      for (const close of closers.splice(0).reverse()) await close()
    } finally {
      if (server) await (await server).stop()
    }
  })
}

/** The file's PostgreSQL server, started on first use. */
export function sharedPostgres(): Promise<PgServer> {
  closeAfterFile()
  pg ??= startPostgres()
  return pg
}

/** A new empty migrated store of `dialect`. */
export async function freshStore(dialect: Dialect): Promise<FreshStore> {
  const clock = testClock()
  if (dialect === 'sqlite') {
    const dir = tempDir('fixloop-repo-')
    const file = join(dir, 'fixloop.db')
    copyFileSync(migratedSqlite(), file) // applyMigrations below then finds nothing to do
    const { sqlite, db } = openDatabase(file)
    applyMigrations(sqlite)
    closeAfterFile()
    closers.push(() => {
      sqlite.close()
      rmSync(dir, { recursive: true, force: true })
    })
    const storage = sqliteStorage(sqlite, db)
    return { storage, store: openSqliteStore(storage, clock), dialect, clock, location: file }
  }
  const server = await sharedPostgres()
  const url = await server.createDatabase('repo', { migrated: true }) // a clone: applyPgMigrations finds nothing to do
  const pool = openPool(url, 8)
  await applyPgMigrations(pool)
  closers.push(() => pool.end())
  // The repository cases drive time by hand (`clock`): the store compares with it, not the database's clock.
  const storage = pgStorage(pool, { callerClock: true })
  return { storage, store: openPgStore(storage, clock), dialect, clock, location: url }
}

/** `body` once per dialect, inside describe(`${name} [sqlite]`) and describe(`${name} [pg]`). */
export function describeEachDialect(name: string, body: (fresh: () => Promise<FreshStore>, dialect: Dialect) => void): void {
  for (const dialect of DIALECTS) {
    describe(`${name} [${dialect}]`, () => body(() => freshStore(dialect), dialect))
  }
}

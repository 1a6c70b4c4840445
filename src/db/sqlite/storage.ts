/**
 * The embedded store: one SQLite connection (WAL) and its drizzle wrapper. Only the SQLite side
 * (src/db/sqlite/, and the SQLite infrastructure beside it in src/db/) holds a `bun:sqlite` handle.
 */
import type { Database } from 'bun:sqlite'
import { drizzle } from 'drizzle-orm/bun-sqlite'
import type { Db } from './client'

export interface SqliteStorage {
  readonly dialect: 'sqlite'
  readonly sqlite: Database
  readonly db: Db
}

/** The storage of an open connection; `db` is made when the caller has none (a thread's own connection). */
export function sqliteStorage(sqlite: Database, db?: Db): SqliteStorage {
  return { dialect: 'sqlite', sqlite, db: db ?? (drizzle({ client: sqlite }) as Db) }
}

/**
 * The embedded store: one SQLite connection (WAL) and its drizzle wrapper. Only the SQLite side
 * (src/db/sqlite/, and the SQLite infrastructure beside it in src/db/) holds a `bun:sqlite` handle.
 */
import type { Database } from 'bun:sqlite'
import type { Db } from '../client'

export interface SqliteStorage {
  readonly dialect: 'sqlite'
  readonly sqlite: Database
  readonly db: Db
}

export function sqliteStorage(sqlite: Database, db: Db): SqliteStorage {
  return { dialect: 'sqlite', sqlite, db }
}

/**
 * Where a process keeps its rows: the embedded SQLite file (default) or a PostgreSQL database
 * (`FIXLOOP_DATABASE_URL`). Modules see repositories, never this union; each repository's factory picks
 * its SQLite (src/db/sqlite/) or PostgreSQL (src/db/pg/) implementation from `dialect`.
 */
import type { SqliteStorage } from './sqlite/storage'
import type { PgStorage } from './pg/storage'

export type Storage = SqliteStorage | PgStorage
export type Dialect = Storage['dialect']
export type { SqliteStorage, PgStorage }

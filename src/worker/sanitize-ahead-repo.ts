/**
 * What the sanitize-ahead thread (sanitize-ahead.ts) reads and writes: where the processing thread's
 * queue starts, the next chunk of `received` reports with a queued `process` job after a job id, and the
 * chunk's sanitized write. SQLite only (src/db/sqlite/sanitize-ahead.ts): on PostgreSQL there is no
 * processing thread to sanitize ahead of.
 */
import type { SqliteStorage } from '../db/storage'
import type { Lifecycle } from '../lifecycle/lifecycle'
import { createSqliteSanitizeAhead } from '../db/sqlite/sanitize-ahead'

export type { QueuedReport } from '../db/sqlite/sanitize-ahead'

export function createSanitizeAheadRepo(storage: SqliteStorage, lifecycle: Lifecycle) {
  if (!lifecycle.sqlite) throw new Error('sanitizing ahead needs the lifecycle of the same SQLite store')
  return createSqliteSanitizeAhead(storage.sqlite, lifecycle.sqlite)
}
export type SanitizeAheadRepo = ReturnType<typeof createSanitizeAheadRepo>

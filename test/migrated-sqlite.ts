/**
 * A SQLite database with every migration applied, for tests that need a migrated store and do not test
 * migrating: a copy (~1 ms) instead of applying every migration to a new file (~0.1-0.2 s).
 */
import { existsSync, mkdtempSync, renameSync, rmSync } from 'node:fs'
import { createHash } from 'node:crypto'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { MIGRATIONS } from '../src/db/migrations'
import { openDatabase } from '../src/db/sqlite/client'
import { applyMigrations } from '../src/db/sqlite/migrate'

/**
 * A SQLite database with every migration applied, kept in the system temp dir across test processes under
 * a name made of the migrations' own text (a changed or added migration makes a new one); built under a
 * temp name and renamed into place, so a file found there is complete. Copy it (copyFileSync), never open it.
 */
export function migratedSqlite(): string {
  const digest = createHash('sha256').update(MIGRATIONS.map((m) => `${m.name}\n${m.sql}`).join('\n')).digest('hex').slice(0, 16)
  const file = join(tmpdir(), `fixloop-sqlite-migrated-${process.getuid?.() ?? 'user'}-${digest}.db`)
  if (existsSync(file)) return file
  const dir = mkdtempSync(join(tmpdir(), 'fixloop-sqlite-migrated-'))
  const { sqlite } = openDatabase(join(dir, 'fixloop.db'))
  applyMigrations(sqlite)
  sqlite.close() // the last connection: the WAL is checkpointed into the file and removed
  renameSync(join(dir, 'fixloop.db'), file)
  rmSync(dir, { recursive: true, force: true })
  return file
}

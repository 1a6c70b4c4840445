/**
 * Applies the embedded migrations in order, each inside a transaction, recorded in `__migrations`.
 * Runs before the port opens and from `fixloop migrate`; safe to run concurrently from two processes
 * because BEGIN IMMEDIATE serialises them and each re-checks what is applied.
 */
import type { Database } from 'bun:sqlite'
import { MIGRATIONS, type Migration } from '../migrations'
import { META, readMeta, writeMeta } from './instance-meta'
import { VERSION } from '../../version'

export function applyMigrations(sqlite: Database, list: readonly Migration[] = MIGRATIONS): string[] {
  sqlite.run('CREATE TABLE IF NOT EXISTS __migrations (name TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)')
  const applied: string[] = []
  for (const m of list) {
    const run = sqlite.transaction(() => {
      const done = sqlite.query('SELECT 1 FROM __migrations WHERE name = ?').get(m.name)
      if (done) return false
      for (const statement of m.sql.split('--> statement-breakpoint')) {
        if (statement.trim()) sqlite.run(statement)
      }
      sqlite.query('INSERT INTO __migrations (name, applied_at) VALUES (?, ?)').run(m.name, Date.now())
      return true
    })
    if (run.immediate()) applied.push(m.name)
  }
  // Recorded so an older binary that refuses this database can say which version migrated it.
  if (applied.length > 0 && list === MIGRATIONS && readMeta(sqlite, META.migratedBy) !== VERSION) writeMeta(sqlite, META.migratedBy, VERSION)
  return applied
}

/** Names of embedded migrations not yet applied; empty means the schema is current. */
export function pendingMigrations(sqlite: Database, list: readonly Migration[] = MIGRATIONS): string[] {
  const has = sqlite.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '__migrations'").get()
  if (!has) return list.map((m) => m.name)
  const done = new Set(
    (sqlite.query('SELECT name FROM __migrations').all() as { name: string }[]).map((r) => r.name),
  )
  return list.filter((m) => !done.has(m.name)).map((m) => m.name)
}

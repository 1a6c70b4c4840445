/**
 * Applies the embedded migrations in order, each inside a transaction (all of them in one on a new
 * database), recorded in `__migrations`.
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
  const apply = (m: Migration): boolean => {
    const done = sqlite.query('SELECT 1 FROM __migrations WHERE name = ?').get(m.name)
    if (done) return false
    for (const statement of m.sql.split('--> statement-breakpoint')) {
      if (statement.trim()) sqlite.run(statement)
    }
    sqlite.query('INSERT INTO __migrations (name, applied_at) VALUES (?, ?)').run(m.name, Date.now())
    return true
  }
  // A new database (nothing applied yet, checked inside the write lock) gets every migration in one
  // transaction: one commit, one sync and one rewrite of the schema pages instead of one per migration
  // (~80 -> ~30 CPU-ms and 40 fewer syncs for each first start or first command on a data dir), and a
  // failure leaves it empty rather than half made. An existing database goes on one migration at a time,
  // so an upgrade stopped by one keeps the ones before it, as it always did.
  const fresh = sqlite.transaction(() => {
    if (sqlite.query('SELECT 1 FROM __migrations LIMIT 1').get()) return false
    for (const m of list) if (apply(m)) applied.push(m.name)
    return true
  })
  if (!fresh.immediate()) {
    for (const m of list) if (sqlite.transaction(() => apply(m)).immediate()) applied.push(m.name)
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

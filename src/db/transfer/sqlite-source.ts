/**
 * The SQLite side of `fixloop migrate-db`: the data dir's database opened read-only (nothing of it can be
 * changed), refused when its schema is not exactly the one this binary knows, and read inside one read
 * transaction so every table comes from the same snapshot (the admin CLI may write while no server runs).
 * Rows stream from a statement iterator in primary-key order: memory stays bounded by one batch.
 */
import { Database } from 'bun:sqlite'
import { StartupError } from '../../core/startup-error'
import { pendingMigrations } from '../sqlite/migrate'
import { refuseNewerSchema } from '../sqlite/schema-guard'
import { sealedColumns } from '../sealed-columns'
import { META, readMeta } from '../sqlite/instance-meta'
import type { CopyTable } from './tables'

const quote = (name: string) => `"${name.replace(/"/g, '""')}"`

export interface SqliteSource {
  file: string
  /** Rows of `table` (its copied rows), in primary-key order, as the driver returns them (integers as bigint). */
  rows(table: CopyTable, where?: string): IterableIterator<Record<string, unknown>>
  /** Rows an arbitrary read returns (the expected value of a derived table), same form. */
  query(sql: string): IterableIterator<Record<string, unknown>>
  count(table: CopyTable, where?: string): number
  /** The AUTOINCREMENT high-water mark of `table` (ids are never reused, even of deleted rows), or 0. */
  sequence(table: string): number
  /** Sealed values per column (`table.column` → count): what only the same master key can open. */
  sealedCounts(): Record<string, number>
  masterKeyCheck(): string | undefined
  close(): void
}

/** Opens `file` read-only; refuses a schema a newer fixloop migrated or one with pending migrations. */
export function openSqliteSource(file: string): SqliteSource {
  const sqlite = new Database(file, { readonly: true, safeIntegers: true })
  try {
    sqlite.run('PRAGMA busy_timeout = 5000')
    refuseNewerSchema(sqlite, file)
    const pending = pendingMigrations(sqlite)
    if (pending.length > 0) {
      throw new StartupError(
        `the database ${file} has migrations this fixloop would apply first (${pending.join(', ')}); run "fixloop migrate" on the data dir, then migrate-db again (nothing was written)`,
      )
    }
    // One snapshot for every table: a deferred read transaction takes it at the first read and keeps it.
    sqlite.run('BEGIN')
  } catch (e) {
    sqlite.close()
    throw e
  }
  const select = (table: CopyTable, where?: string) =>
    `SELECT ${table.columns.map((c) => quote(c.name)).join(', ')} FROM ${quote(table.name)}${where ? ` WHERE ${where}` : ''} ORDER BY ${table.key.map(quote).join(', ')}`
  return {
    file,
    rows: (table, where) => sqlite.query(select(table, where)).iterate() as IterableIterator<Record<string, unknown>>,
    query: (sql) => sqlite.query(sql).iterate() as IterableIterator<Record<string, unknown>>,
    count(table, where) {
      const row = sqlite.query(`SELECT COUNT(*) AS n FROM ${quote(table.name)}${where ? ` WHERE ${where}` : ''}`).get() as { n: bigint }
      return Number(row.n)
    },
    sequence(table) {
      const has = sqlite.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'sqlite_sequence'").get()
      if (!has) return 0
      const row = sqlite.query('SELECT seq FROM sqlite_sequence WHERE name = ?').get(table) as { seq: bigint } | null
      return row ? Number(row.seq) : 0
    },
    sealedCounts() {
      const out: Record<string, number> = {}
      for (const c of sealedColumns()) {
        const row = sqlite.query(`SELECT COUNT(*) AS n FROM ${quote(c.table)} WHERE ${quote(c.column)} IS NOT NULL`).get() as { n: bigint }
        if (row.n > 0n) out[`${c.table}.${c.column}`] = Number(row.n)
      }
      return out
    },
    masterKeyCheck: () => readMeta(sqlite, META.masterKeyCheck),
    close() {
      try {
        sqlite.run('COMMIT')
      } catch {
        // no transaction open
      }
      sqlite.close()
    },
  }
}

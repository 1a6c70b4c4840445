/**
 * Applies the embedded PostgreSQL migrations in order, each in its own transaction, recorded in
 * `__migrations` (the same name and shape as on SQLite). Several nodes may start at once: each migration's
 * transaction first takes a transaction-scoped advisory lock, so they run one after the other and each
 * re-checks what is applied. Only a transaction-scoped lock: session advisory locks break behind a
 * transaction-pooling pgbouncer (DESIGN.md, cluster mode).
 */
import type { Sql } from 'postgres'
import type { Migration } from '../migrations'
import { META } from '../instance-meta'
import { VERSION } from '../../version'
import { PG_MIGRATIONS } from './migrations'

/** Any fixed 64-bit number, private to fixloop's migrations ("fixloop" in ASCII, as a bigint). */
const MIGRATION_LOCK = 0x6669786c6f6f70n

const ENSURE_TABLE = 'CREATE TABLE IF NOT EXISTS __migrations (name text PRIMARY KEY, applied_at bigint NOT NULL)'

/** Applies what is pending; returns the names applied by this call (empty when another node did them). */
export async function applyPgMigrations(sql: Sql, list: readonly Migration[] = PG_MIGRATIONS): Promise<string[]> {
  const applied: string[] = []
  for (const m of list) {
    const ran = await sql.begin(async (tx) => {
      await tx`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK.toString()}::bigint)`
      await tx.unsafe(ENSURE_TABLE)
      const [done] = await tx`SELECT 1 FROM __migrations WHERE name = ${m.name}`
      if (done) return false
      for (const statement of m.sql.split('--> statement-breakpoint')) {
        if (statement.trim()) await tx.unsafe(statement)
      }
      await tx`INSERT INTO __migrations (name, applied_at) VALUES (${m.name}, ${Date.now()})`
      return true
    })
    if (ran) applied.push(m.name)
  }
  if (applied.length > 0 && list === PG_MIGRATIONS) {
    // Recorded so an older binary that refuses this database can say which version migrated it.
    await sql`INSERT INTO instance_meta (key, value, updated_at) VALUES (${META.migratedBy}, ${VERSION}, ${Date.now()})
      ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`
  }
  return applied
}

/** Applied migration names, oldest first (empty for a database fixloop never touched). */
async function appliedNames(sql: Sql): Promise<string[]> {
  const [has] = await sql`SELECT to_regclass('__migrations') IS NOT NULL AS present`
  if (!has?.present) return []
  const rows = await sql<{ name: string }[]>`SELECT name FROM __migrations ORDER BY name`
  return rows.map((r) => r.name)
}

/** Embedded migrations not yet applied; empty means the schema is current. */
export async function pendingPgMigrations(sql: Sql, list: readonly Migration[] = PG_MIGRATIONS): Promise<string[]> {
  const done = new Set(await appliedNames(sql))
  return list.filter((m) => !done.has(m.name)).map((m) => m.name)
}

/** Applied migrations this binary does not know (the database was migrated by a newer fixloop). */
export async function unknownPgMigrations(sql: Sql, list: readonly Migration[] = PG_MIGRATIONS): Promise<string[]> {
  const known = new Set(list.map((m) => m.name))
  return (await appliedNames(sql)).filter((n) => !known.has(n))
}

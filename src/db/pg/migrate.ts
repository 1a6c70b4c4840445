/**
 * Applies the embedded PostgreSQL migrations in order, each in its own transaction, recorded in
 * `__migrations` (the same name and shape as on SQLite). Several nodes may start at once: each migration's
 * transaction first takes a transaction-scoped advisory lock, so they run one after the other and each
 * re-checks what is applied. Only a transaction-scoped lock: session advisory locks break behind a
 * transaction-pooling pgbouncer (DESIGN.md, cluster mode).
 */
import type { Pool } from 'pg'
import type { Migration } from '../migrations'
import { META } from '../meta-keys'
import { VERSION } from '../../version'
import { PG_MIGRATIONS } from './migrations'
import { withTransaction } from './transaction'
import { driverError } from './storage'
import { StartupError } from '../../core/startup-error'

/** Any fixed 64-bit number, private to fixloop's migrations ("fixloop" in ASCII). */
const MIGRATION_LOCK = '28826413560721264'

const ENSURE_TABLE = 'CREATE TABLE IF NOT EXISTS __migrations (name text PRIMARY KEY, applied_at bigint NOT NULL)'

/**
 * A role that may not create tables (PostgreSQL 15 no longer lets every role create in `public`): a
 * sentence saying what to grant, instead of the driver's bare "permission denied for schema public".
 */
function privilegeRefusal(err: unknown): StartupError | null {
  const e = driverError(err) as { code?: string; message?: string } | null
  if (e?.code !== '42501') return null
  return new StartupError(
    `the database role may not create or change fixloop's tables (${e.message}): make it the database's owner (createdb -O ROLE DB, or ALTER DATABASE DB OWNER TO ROLE) or, as the owner, GRANT CREATE ON SCHEMA public TO ROLE; then run fixloop migrate again`,
  )
}

/** Applies what is pending; returns the names applied by this call (empty when another node did them). */
export async function applyPgMigrations(pool: Pool, list: readonly Migration[] = PG_MIGRATIONS): Promise<string[]> {
  const applied: string[] = []
  for (const m of list) {
    const ran = await withTransaction(pool, async (tx) => {
      // Waits as long as another node's migrations, or a table's running transactions, take: the pool's
      // lock_timeout (client-options.ts) is for requests, and a start must not fail behind a slow migration.
      // The same for statement_timeout: a migration rewriting a big table runs as long as it must.
      await tx.query('SET LOCAL lock_timeout = 0')
      await tx.query('SET LOCAL statement_timeout = 0')
      await tx.query('SELECT pg_advisory_xact_lock($1::bigint)', [MIGRATION_LOCK])
      await tx.query(ENSURE_TABLE)
      const done = await tx.query('SELECT 1 FROM __migrations WHERE name = $1', [m.name])
      if (done.rowCount) return false
      for (const statement of m.sql.split('--> statement-breakpoint')) {
        if (statement.trim()) await tx.query(statement)
      }
      await tx.query('INSERT INTO __migrations (name, applied_at) VALUES ($1, $2)', [m.name, Date.now()])
      return true
    }).catch((e) => {
      throw privilegeRefusal(e) ?? e
    })
    if (ran) applied.push(m.name)
  }
  if (applied.length > 0 && list === PG_MIGRATIONS) {
    // Recorded so an older binary that refuses this database can say which version migrated it.
    await pool.query(
      `INSERT INTO instance_meta (key, value, updated_at) VALUES ($1, $2, $3)
       ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
      [META.migratedBy, VERSION, Date.now()],
    )
  }
  return applied
}

/** Applied migration names, oldest first (empty for a database fixloop never touched). */
async function appliedNames(pool: Pool): Promise<string[]> {
  const has = await pool.query<{ present: boolean }>("SELECT to_regclass('__migrations') IS NOT NULL AS present")
  if (!has.rows[0]?.present) return []
  const rows = await pool.query<{ name: string }>('SELECT name FROM __migrations ORDER BY name')
  return rows.rows.map((r) => r.name)
}

/**
 * Tables (and views) of another application in the schema fixloop would migrate into: some of their names
 * when the database has no fixloop migration applied but holds relations (none: empty, or fixloop's).
 * An extension's own relations are no application's: pg_stat_statements, pg_buffercache or PostGIS put
 * views and tables in `public` of a fresh database (an operator's habit, a managed PostgreSQL's default),
 * which was refused as another application's.
 */
export async function foreignPgTables(pool: Pool): Promise<string[]> {
  // Tables first, then the applied migrations: a migration's tables and its __migrations row commit
  // together, so tables seen here are fixloop's whenever the later read finds any applied. In the other
  // order a `migrate` racing another read "none applied" before the other's first commit and its tables
  // after it, and refused the database as foreign (a CI failure of three concurrent migrates).
  const rows = await pool.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_class c
      WHERE c.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema())
        AND c.relkind IN ('r', 'p', 'v', 'm', 'f') AND c.relname <> '__migrations'
        AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'e')
      ORDER BY c.relname LIMIT 6`,
  )
  if (rows.rows.length === 0 || (await appliedNames(pool)).length > 0) return []
  return rows.rows.map((r) => r.name)
}

/** Embedded migrations not yet applied; empty means the schema is current. */
export async function pendingPgMigrations(pool: Pool, list: readonly Migration[] = PG_MIGRATIONS): Promise<string[]> {
  const done = new Set(await appliedNames(pool))
  return list.filter((m) => !done.has(m.name)).map((m) => m.name)
}

/** Applied migrations this binary does not know (the database was migrated by a newer fixloop). */
export async function unknownPgMigrations(pool: Pool, list: readonly Migration[] = PG_MIGRATIONS): Promise<string[]> {
  const known = new Set(list.map((m) => m.name))
  return (await appliedNames(pool)).filter((n) => !known.has(n))
}

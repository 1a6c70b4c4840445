/**
 * The PostgreSQL store: one node-postgres pool and drizzle over it. A repository method is one business
 * transaction: `tx(work)` runs `work` on one pooled connection between BEGIN and COMMIT; plain reads go
 * to the pool (`q`). Helpers below keep the call sites short: `one`, `many`, `exec`.
 */
import { drizzle, type NodePgDatabase } from 'drizzle-orm/node-postgres'
import type { Pool, PoolClient } from 'pg'
import { withTransaction, type OnCommit } from './transaction'

export type { OnCommit }

/**
 * drizzle without the schema: fixloop never calls the relational `db.query` API, whose table map drizzle
 * built from the whole schema for every drizzle() (~1 ms CPU warm, ~4 ms cold): at each start, and in
 * `tx` at every transaction.
 */
export type PgDb = NodePgDatabase
/** Anything a statement can run on: the pool (autocommit) or a transaction's client. */
export type PgQueryable = Pool | PoolClient

export interface PgStorage {
  readonly dialect: 'pg'
  readonly pool: Pool
  readonly db: PgDb
  /**
   * True only for stores whose times a test drives by hand (an injected clock): the leases and due times
   * the repositories compare then follow the `now` the caller passes, as on SQLite. False (every real
   * node): they follow the database's clock (src/db/pg/db-clock.ts) and a node's `now` is ignored there.
   */
  readonly callerClock: boolean
  /**
   * Runs `work` in one transaction on one connection; rolls back on any throw. `onCommit` callbacks run
   * after COMMIT (wake signals, cache invalidation), never after a rollback.
   */
  tx<T>(work: (client: PoolClient, db: PgDb, onCommit: OnCommit) => Promise<T>): Promise<T>
}

/** `callerClock`: see PgStorage (tests that inject a clock; never a real node). */
export function pgStorage(pool: Pool, { callerClock = false }: { callerClock?: boolean } = {}): PgStorage {
  const db = drizzle({ client: pool })
  return {
    dialect: 'pg',
    pool,
    db,
    callerClock,
    tx: (work) => withTransaction(pool, (client, onCommit) => work(client, drizzle({ client }), onCommit)),
  }
}

/**
 * A named (prepared) statement for `text`: node-postgres parses and plans it once per connection, then
 * only binds and executes it. For the hot paths (intake's insert, the list page, event appends): an
 * unnamed statement is parsed and planned again on every call (bench/pg-intake.ts). The name is derived
 * from the text, so one name never stands for two texts on a connection.
 */
export function prepared(text: string, values: unknown[]): { name: string; text: string; values: unknown[] } {
  let name = preparedNames.get(text)
  if (name === undefined) {
    name = `fx_${Bun.hash(text).toString(36)}`
    preparedNames.set(text, name)
  }
  return { name, text, values }
}
const preparedNames = new Map<string, string>()

/** The first row of a query, or undefined. */
export async function one<T>(q: PgQueryable, text: string, params: unknown[] = []): Promise<T | undefined> {
  const r = await q.query(text, params)
  return r.rows[0] as T | undefined
}

/** Every row of a query. */
export async function many<T>(q: PgQueryable, text: string, params: unknown[] = []): Promise<T[]> {
  const r = await q.query(text, params)
  return r.rows as T[]
}

/** Runs a statement; the number of rows it changed. */
export async function exec(q: PgQueryable, text: string, params: unknown[] = []): Promise<number> {
  const r = await q.query(text, params)
  return r.rowCount ?? 0
}

/** True for a unique-constraint violation (SQLSTATE 23505), optionally on one named constraint/index. */
export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  const e = driverError(err) as { code?: string; constraint?: string } | null
  return e?.code === '23505' && (constraint === undefined || e.constraint === constraint)
}

/** The driver's own error: drizzle wraps it (DrizzleQueryError) with the query text, the driver's in `cause`. */
export function driverError(err: unknown): unknown {
  let e = err as { cause?: unknown; code?: unknown } | null
  for (let i = 0; i < 3 && e && e.code === undefined && e.cause; i++) e = e.cause as typeof e
  return e
}

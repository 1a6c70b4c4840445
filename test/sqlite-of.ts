/** For tests that read or write the embedded SQLite file directly (SQLite mode only). */
import type { Database } from 'bun:sqlite'
import type { Runtime } from '../src/runtime/open'
import type { Db } from '../src/db/sqlite/client'

export function sqliteOf(ctx: Pick<Runtime, 'storage'>): Database {
  if (ctx.storage.dialect !== 'sqlite') throw new Error('this test reads the SQLite file directly: it runs in SQLite mode only')
  return ctx.storage.sqlite
}

export function dbOf(ctx: Pick<Runtime, 'storage'>): Db {
  if (ctx.storage.dialect !== 'sqlite') throw new Error('this test uses the SQLite drizzle handle: it runs in SQLite mode only')
  return ctx.storage.db
}

type WithStorage = Pick<Runtime, 'storage'>

/**
 * Runs `?`-placeholder SQL on whichever storage the server uses (the HTTP-level tests run on both
 * dialects: scripts/test-pg.sh). On PostgreSQL each `?` becomes `$n`; keep the SQL to what both accept.
 */
export async function dbRows<T = Record<string, any>>(ctx: WithStorage, text: string, params: unknown[] = []): Promise<T[]> {
  if (ctx.storage.dialect === 'sqlite') return ctx.storage.sqlite.query(text).all(...(params as never[])) as T[]
  let i = 0
  return (await ctx.storage.pool.query(text.replace(/\?/g, () => `$${++i}`), params)).rows as T[]
}

/** The first row of `dbRows` (undefined when none). */
export async function dbRow<T = Record<string, any>>(ctx: WithStorage, text: string, params: unknown[] = []): Promise<T | undefined> {
  return (await dbRows<T>(ctx, text, params))[0]
}

/** A statement without rows (INSERT/UPDATE/DELETE) on either storage. */
export async function dbRun(ctx: WithStorage, text: string, params: unknown[] = []): Promise<void> {
  await dbRows(ctx, text, params)
}

/** For tests that read or write the embedded SQLite file directly (SQLite mode only). */
import type { Database } from 'bun:sqlite'
import type { Context } from '../src/context'
import type { Db } from '../src/db/sqlite/client'

export function sqliteOf(ctx: Pick<Context, 'storage'>): Database {
  if (ctx.storage.dialect !== 'sqlite') throw new Error('this test reads the SQLite file directly: it runs in SQLite mode only')
  return ctx.storage.sqlite
}

export function dbOf(ctx: Pick<Context, 'storage'>): Db {
  if (ctx.storage.dialect !== 'sqlite') throw new Error('this test uses the SQLite drizzle handle: it runs in SQLite mode only')
  return ctx.storage.db
}

/**
 * Opening the database: the one place that picks a dialect (PostgreSQL when FIXLOOP_DATABASE_URL is set,
 * the data dir's SQLite otherwise). Each dialect's side (open-sqlite.ts, open-pg.ts) migrates it, checks
 * the master key and builds that dialect's store. `serve` and each CLI command open one runtime; tests
 * open one per temp data dir. The PostgreSQL side (its driver, engine and cluster mode) is loaded only when
 * a database URL is set: a command on the embedded SQLite starts without it.
 */
import type { Config } from '../config'
import { systemClock, type Clock } from '../core/clock'
import type { Context } from '../context'
import type { ClusterRuntime } from './cluster'
import type { EmbeddedRuntime } from './embedded'
import type { ContextOptions, Runtime } from './runtime'
import { createContext, DB_FILE, requireExistingDataDir } from './open-sqlite'

export { createContext, DB_FILE, requireExistingDataDir }
export type { ClusterRuntime, ContextOptions, EmbeddedRuntime, Runtime }

/** The context for `config`'s storage: PostgreSQL when FIXLOOP_DATABASE_URL is set, the data dir's SQLite otherwise. */
export async function openContext(config: Readonly<Config>, clock: Clock = systemClock, options: ContextOptions = {}): Promise<Runtime> {
  return config.databaseUrl ? (await import('./open-pg')).createPgContext(config, clock, options) : createContext(config, clock, options)
}

/** Closes the context's database connection(s). */
export async function closeContext(ctx: Context): Promise<void> {
  await ctx.store.close()
}

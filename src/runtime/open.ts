/**
 * Opening the database: the one place that picks a dialect (PostgreSQL when FIXLOOP_DATABASE_URL is set,
 * the data dir's SQLite otherwise), migrates it, checks the master key and builds that dialect's store.
 * `serve` and each CLI command open one runtime; tests open one per temp data dir.
 */
import { existsSync } from 'node:fs'
import { createHmac } from 'node:crypto'
import { join } from 'node:path'
import type { Config } from '../config'
import { openDatabase } from '../db/sqlite/client'
import { applyMigrations, pendingMigrations } from '../db/sqlite/migrate'
import { SecretBox } from '../core/crypto'
import { OffsetClock, systemClock, type Clock } from '../core/clock'
import { alignToDatabase } from '../db/pg/db-clock'
import { StartupError } from '../core/startup-error'
import { refuseNewerSchema } from '../db/sqlite/schema-guard'
import { openMasterKey } from '../db/sqlite/master-key-check'
import { DB_FILE, prepareDataDir } from '../db/data-dir'
import { embeddedMode, type EmbeddedRuntime } from './embedded'
import { clusterMode, type ClusterRuntime } from './cluster'
import { createSqliteProcessingEngine } from '../worker/processing-sqlite'
import { createPgProcessingEngine } from '../worker/processing-pg'
import { keepWal } from '../db/sqlite/wal-keeper'
import type { Runtime } from './runtime'
import type { Context } from '../context'
import { sqliteStorage } from '../db/sqlite/storage'
import { pgStorage } from '../db/pg/storage'
import { openSqliteStore } from '../db/sqlite/store'
import { openPgStore } from '../db/pg/store'
import type { Pool } from 'pg'
import { connectPg, describeDatabase } from '../db/pg/connect'
import { applyPgMigrations, pendingPgMigrations, unknownPgMigrations } from '../db/pg/migrate'
import { PG_MIGRATIONS } from '../db/pg/migrations'
import { openMasterKeyPg } from '../db/pg/master-key'
import { VERSION } from '../version'

export interface ContextOptions {
  /**
   * For commands that only read (lists, backup): the data dir and its database must already exist, and
   * nothing is created, migrated or generated. A typo in --data-dir is then an error, not a new instance.
   */
  existingOnly?: boolean
}

export { DB_FILE }
export type { ClusterRuntime, EmbeddedRuntime, Runtime }

/** Refuses (StartupError) a data dir that does not exist or holds no database. */
export function requireExistingDataDir(dataDir: string): void {
  if (!existsSync(dataDir)) throw new StartupError(`the data dir ${dataDir} does not exist (check --data-dir or FIXLOOP_DATA_DIR); nothing was created`)
  if (!existsSync(join(dataDir, DB_FILE))) throw new StartupError(`${dataDir} holds no fixloop database (${DB_FILE}); check --data-dir or FIXLOOP_DATA_DIR; nothing was created`)
}

export function createContext(config: Readonly<Config>, clock: Clock = systemClock, options: ContextOptions = {}): EmbeddedRuntime {
  const file = join(config.dataDir, DB_FILE)
  if (options.existingOnly) requireExistingDataDir(config.dataDir)
  else prepareDataDir(config.dataDir)
  const { sqlite, db } = openDatabase(file)
  try {
    refuseNewerSchema(sqlite, file)
    if (!options.existingOnly) applyMigrations(sqlite)
    else if (pendingMigrations(sqlite).length > 0) throw new StartupError(`the database ${file} needs migrations first: run "fixloop migrate"`)
    const masterKey = openMasterKey(sqlite, config.dataDir, config.masterKey, !options.existingOnly)
    const box = new SecretBox(masterKey)
    const urlSigningKey = urlSigningKeyOf(masterKey)
    const storage = sqliteStorage(sqlite, db)
    const rt: EmbeddedRuntime = {
      config,
      storage,
      store: openSqliteStore(storage, clock),
      box,
      urlSigningKey,
      clock,
      mode: (log, modeOptions) => embeddedMode(rt, log, modeOptions),
      processing: (o = {}) => createSqliteProcessingEngine(rt.store, clock, undefined, o.batchBudgetMs),
      where: `SQLite in ${config.dataDir}`,
      keepWal: (log) => keepWal(rt.store, file, log),
    }
    return rt
  } catch (e) {
    sqlite.close()
    throw e
  }
}

/** A separate key per purpose: a leaked URL signature says nothing about the sealing key. */
const urlSigningKeyOf = (masterKey: Uint8Array) => createHmac('sha256', masterKey).update('fixloop/upload-urls/v1').digest()

/** Connections per process to PostgreSQL: the HTTP path, the worker and the dispatchers share them. */
export const PG_POOL_SIZE = 16

/**
 * The context on PostgreSQL (FIXLOOP_DATABASE_URL): connects (clear errors, never the password), refuses a
 * database a newer fixloop migrated, applies pending migrations (unless `existingOnly`: then they must be
 * applied already), and checks FIXLOOP_MASTER_KEY against the database's check value.
 */
export async function createPgContext(config: Readonly<Config>, clock: Clock = systemClock, options: ContextOptions = {}): Promise<ClusterRuntime> {
  const url = config.databaseUrl
  if (!url) throw new StartupError('FIXLOOP_DATABASE_URL is not set')
  const pool = await connectPg(url, PG_POOL_SIZE)
  try {
    await refuseNewerPgSchema(pool, url)
    if (!options.existingOnly) await applyPgMigrations(pool)
    else if ((await pendingPgMigrations(pool)).length > 0) throw new StartupError(`the database ${describeDatabase(url)} needs migrations first: run "fixloop migrate"`)
    const masterKey = await openMasterKeyPg(pool, config.masterKey)
    // A node's own clock is never trusted across nodes: it is set to the database's (and kept so by the
    // heartbeat), and leases are compared in SQL. A clock a test injects drives every time itself.
    const injected = clock !== systemClock
    let nodeClock = clock
    if (!injected) {
      const aligned = new OffsetClock()
      await alignToDatabase(aligned, pool)
      nodeClock = aligned
    }
    const storage = pgStorage(pool, { callerClock: injected })
    const rt: ClusterRuntime = {
      config,
      storage,
      store: openPgStore(storage, nodeClock),
      box: new SecretBox(masterKey),
      urlSigningKey: urlSigningKeyOf(masterKey),
      clock: nodeClock,
      mode: (log, modeOptions) => clusterMode(rt, log, modeOptions),
      processing: () => createPgProcessingEngine(rt.store, nodeClock),
      where: `PostgreSQL ${describeDatabase(url)}`,
    }
    return rt
  } catch (e) {
    await pool.end().catch(() => {})
    throw e
  }
}

/** Refuses (StartupError) a PostgreSQL database a newer fixloop migrated, naming both versions. */
export async function refuseNewerPgSchema(pool: Pool, url: string): Promise<void> {
  const unknown = await unknownPgMigrations(pool)
  if (unknown.length > 0) {
    throw new StartupError(
      `the database ${describeDatabase(url)} was migrated by a newer fixloop, but this is fixloop ${VERSION} ` +
        `(it does not know migration ${unknown.join(', ')}; the newest it knows is ${PG_MIGRATIONS.at(-1)?.name}). Run the newer fixloop.`,
    )
  }
}

/** The context for `config`'s storage: PostgreSQL when FIXLOOP_DATABASE_URL is set, the data dir's SQLite otherwise. */
export async function openContext(config: Readonly<Config>, clock: Clock = systemClock, options: ContextOptions = {}): Promise<Runtime> {
  return config.databaseUrl ? createPgContext(config, clock, options) : createContext(config, clock, options)
}

/** Closes the context's database connection(s). */
export async function closeContext(ctx: Context): Promise<void> {
  await ctx.store.close()
}

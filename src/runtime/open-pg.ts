/**
 * The context on PostgreSQL (FIXLOOP_DATABASE_URL), apart from open.ts so that its driver, engine and cluster
 * mode are loaded only when a database URL is set.
 */
import type { Pool } from 'pg'
import type { Config } from '../config'
import { SecretBox, urlSigningKeyOf } from '../core/crypto'
import { OffsetClock, systemClock, type Clock } from '../core/clock'
import { StartupError } from '../core/startup-error'
import { alignToDatabase } from '../db/pg/db-clock'
import { pgStorage } from '../db/pg/storage'
import { openPgStore } from '../db/pg/store'
import { connectPg, describeDatabase } from '../db/pg/connect'
import { applyPgMigrations, foreignPgTables, pendingPgMigrations, unknownPgMigrations } from '../db/pg/migrate'
import { PG_MIGRATIONS } from '../db/pg/migrations'
import { announceUpgrade } from '../db/data-dir'
import { META } from '../db/meta-keys'
import { openMasterKeyPg } from '../db/pg/master-key'
import { holdKeySharedPg, type PgKeyLock } from '../db/pg/key-lock'
import { processRole } from '../core/process-role'
import { createPgProcessingEngine } from '../worker/processing-pg'
import { VERSION } from '../version'
import { clusterMode, type ClusterRuntime } from './cluster'
import type { ContextOptions } from './runtime'

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
  // A node's transaction left idle for a lease (the node stalled) is ended by PostgreSQL (client-options.ts).
  const pool = await connectPg(url, PG_POOL_SIZE, config.pgStatementTimeoutMs, processRole() === 'serve' ? config.nodeLeaseMs : 0)
  let keyLock: PgKeyLock | undefined
  try {
    await refuseNewerPgSchema(pool, url)
    await refuseForeignPgDatabase(pool, url)
    if (!options.existingOnly) announceUpgrade(describeDatabase(url), await applyPgMigrations(pool), PG_MIGRATIONS.length)
    else if ((await pendingPgMigrations(pool)).length > 0) throw new StartupError(`the database ${describeDatabase(url)} needs migrations first: run "fixloop migrate"`)
    // A CLI command keeps the key it checks now until it closes: no rekey may change it meanwhile.
    if (processRole() === 'command') keyLock = await holdKeySharedPg(pool)
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
    const store = openPgStore(storage, nodeClock)
    if (keyLock) {
      const lock = keyLock
      const close = store.close
      // Before the pool ends: it waits for the connection the lock holds.
      store.close = () => {
        lock.release()
        return close()
      }
    }
    const rt: ClusterRuntime = {
      config,
      storage,
      store,
      box: new SecretBox(masterKey),
      urlSigningKey: urlSigningKeyOf(masterKey),
      clock: nodeClock,
      mode: async (log, modeOptions) => clusterMode(rt, log, modeOptions),
      processing: async () => createPgProcessingEngine(rt.store, nodeClock),
      where: `PostgreSQL ${describeDatabase(url)}`,
    }
    return rt
  } catch (e) {
    keyLock?.release()
    await pool.end().catch(() => {})
    throw e
  }
}

/**
 * Refuses (StartupError) a database that already holds another application's tables and no fixloop
 * schema: FIXLOOP_DATABASE_URL pointed at the wrong database. Without it fixloop created its forty-odd
 * tables among the other application's and started, or (a table named like one of fixloop's, `events`,
 * `jobs`) stopped on the driver's "relation already exists" with exit 1 and a stack trace.
 */
export async function refuseForeignPgDatabase(pool: Pool, url: string): Promise<void> {
  const foreign = await foreignPgTables(pool)
  if (foreign.length === 0) return
  const named = foreign.length > 5 ? `${foreign.slice(0, 5).join(', ')}, …` : foreign.join(', ')
  throw new StartupError(
    `the database ${describeDatabase(url)} holds tables that are not fixloop's (${named}) and no fixloop schema: ` +
      'FIXLOOP_DATABASE_URL must name an empty database for fixloop (createdb -O fixloop fixloop) or one fixloop already migrated',
  )
}

/** Refuses (StartupError) a PostgreSQL database a newer fixloop migrated, naming both versions. */
export async function refuseNewerPgSchema(pool: Pool, url: string): Promise<void> {
  const unknown = await unknownPgMigrations(pool)
  if (unknown.length > 0) {
    const by = (await pool.query<{ value: string }>('SELECT value FROM instance_meta WHERE key = $1', [META.migratedBy]).catch(() => ({ rows: [] as { value: string }[] }))).rows[0]?.value
    throw new StartupError(
      `the database ${describeDatabase(url)} was migrated by a newer fixloop${by && by !== VERSION ? ` (${by})` : ''}, but this is fixloop ${VERSION} ` +
        `(it does not know migration ${unknown.join(', ')}; the newest it knows is ${PG_MIGRATIONS.at(-1)?.name}). Run the newer fixloop.`,
    )
  }
}


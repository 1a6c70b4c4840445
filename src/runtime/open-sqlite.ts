/**
 * The context on the data dir's embedded SQLite (the default; open.ts picks it when no
 * FIXLOOP_DATABASE_URL is set): creates or checks the data dir, migrates, checks the master key and
 * builds the SQLite store.
 */
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import type { Config } from '../config'
import { openDatabase } from '../db/sqlite/client'
import { openRefusal } from '../db/open-refusal'
import { applyMigrations, pendingMigrations } from '../db/sqlite/migrate'
import { SecretBox, urlSigningKeyOf } from '../core/crypto'
import { systemClock, type Clock } from '../core/clock'
import { StartupError } from '../core/startup-error'
import { refuseNewerSchema } from '../db/sqlite/schema-guard'
import { openMasterKey } from '../db/sqlite/master-key-check'
import { announceUpgrade, DB_FILE, prepareDataDir, refuseForeign } from '../db/data-dir'
import { MIGRATIONS } from '../db/migrations'
import { holdKeyShared } from '../db/key-lock'
import { processRole } from '../core/process-role'
import type { EmbeddedRuntime } from './embedded'
import { keepWal } from '../db/sqlite/wal-keeper'
import type { ContextOptions } from './runtime'
import { sqliteStorage } from '../db/sqlite/storage'
import { openSqliteStore } from '../db/sqlite/store'

export { DB_FILE }

/** Refuses (StartupError) a data dir that does not exist or holds no database. */
export function requireExistingDataDir(dataDir: string): void {
  if (!existsSync(dataDir)) throw new StartupError(`the data dir ${dataDir} does not exist (check --data-dir or FIXLOOP_DATA_DIR); nothing was created`)
  if (!existsSync(join(dataDir, DB_FILE))) throw new StartupError(`${dataDir} holds no fixloop database (${DB_FILE}); check --data-dir or FIXLOOP_DATA_DIR; nothing was created`)
  refuseForeign(dataDir)
}

export function createContext(config: Readonly<Config>, clock: Clock = systemClock, options: ContextOptions = {}): EmbeddedRuntime {
  const file = join(config.dataDir, DB_FILE)
  if (options.existingOnly) requireExistingDataDir(config.dataDir)
  else prepareDataDir(config.dataDir)
  // A CLI command keeps the key it reads now until it exits: no rekey may change it meanwhile (key-lock.ts).
  // A server is kept from a rekey by serve.lock.
  if (processRole() === 'command') holdKeyShared(config.dataDir)
  const { sqlite, db } = openDatabase(file, { synchronous: config.sqliteSynchronous })
  try {
    refuseNewerSchema(sqlite, file)
    if (!options.existingOnly) announceUpgrade(file, applyMigrations(sqlite), MIGRATIONS.length)
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
      // Imported when called: a CLI command loads neither (the server's wiring, the clustering modules).
      mode: async (log, modeOptions) => (await import('./embedded')).embeddedMode(rt, log, modeOptions),
      processing: async (o = {}) => (await import('../worker/processing-sqlite')).createSqliteProcessingEngine(rt.store, clock, undefined, o.batchBudgetMs),
      where: `SQLite in ${config.dataDir}`,
      keepWal: (log) => keepWal(rt.store, file, log),
    }
    return rt
  } catch (e) {
    sqlite.close()
    // Migrating or recording the key check on a full or read-only disk, a page found damaged: exit 2 with the path.
    throw openRefusal(file, e) ?? e
  }
}



/**
 * The process-wide dependencies every module takes: database, secret box, clock, config.
 * Built once by `serve` and by each CLI command; tests build one per temp data dir.
 */
import { mkdirSync } from 'node:fs'
import { createHmac } from 'node:crypto'
import { join } from 'node:path'
import type { Database } from 'bun:sqlite'
import type { Config } from './config'
import { openDatabase, type Db } from './db/client'
import { applyMigrations } from './db/migrate'
import { SecretBox } from './core/crypto'
import { loadMasterKey } from './core/master-key'
import { systemClock, type Clock } from './core/clock'

export interface Context {
  config: Readonly<Config>
  sqlite: Database
  db: Db
  box: SecretBox
  /** Key for the embedded store's signed upload/download URLs, derived from the master key. */
  urlSigningKey: Uint8Array
  clock: Clock
}

export function createContext(config: Readonly<Config>, clock: Clock = systemClock): Context {
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 })
  const { sqlite, db } = openDatabase(join(config.dataDir, 'fixloop.db'))
  applyMigrations(sqlite)
  const masterKey = loadMasterKey(config.dataDir, config.masterKey)
  const box = new SecretBox(masterKey)
  // A separate key per purpose: a leaked URL signature says nothing about the sealing key.
  const urlSigningKey = createHmac('sha256', masterKey).update('fixloop/upload-urls/v1').digest()
  return { config, sqlite, db, box, urlSigningKey, clock }
}

/**
 * The start-up check that makes a wrong or missing master key a clear refusal instead of a server that
 * reports ready and then answers 500 to every submission: the database stores an HMAC of a constant under
 * the key (instance_meta.master_key_check), written at first start and compared at every start.
 */
import type { Database } from 'bun:sqlite'
import { SecretBox } from '../../core/crypto'
import { existsSync, readFileSync, renameSync } from 'node:fs'
import { createMasterKeyFile, keyCheckValue, keyMatchesCheck, masterKeyFile, parseMasterKey, readMasterKey } from '../../core/master-key'
import { StartupError } from '../../core/startup-error'
import { META, readMeta, writeMeta } from './instance-meta'
import { sealedColumns } from '../sealed-columns'

const tableExists = (sqlite: Database, table: string) =>
  !!sqlite.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(table)

/** One sealed value from any registered column, or undefined when the database holds none. */
export function firstSealedValue(sqlite: Database): string | undefined {
  for (const c of sealedColumns()) {
    if (!tableExists(sqlite, c.table)) continue
    const row = sqlite.query(`SELECT "${c.column}" AS v FROM "${c.table}" WHERE "${c.column}" IS NOT NULL LIMIT 1`).get() as { v: string } | null
    if (row) return row.v
  }
  return undefined
}

/**
 * The key `fixloop rekey` staged as master.key.new, when it opens this database: the re-key committed
 * and was stopped (killed, power lost) before renaming it over master.key, which still holds the old key.
 */
function stagedRekeyKey(dataDir: string, check: string): { file: string; key: Uint8Array } | undefined {
  const file = `${masterKeyFile(dataDir)}.new`
  if (!existsSync(file)) return undefined
  try {
    const key = parseMasterKey(readFileSync(file, 'utf8'), file)
    return keyMatchesCheck(key, check) ? { file, key } : undefined
  } catch {
    return undefined
  }
}

function mismatch(where: string): StartupError {
  return new StartupError(
    `the master key in ${where} is not the key this database's secrets were sealed with. ` +
      'Use the master.key that belongs to this database (from its original data dir or a backup made with --include-master-key), ' +
      'or, if you changed keys on purpose, run "fixloop rekey --old-key-file OLD --new-key-file NEW".',
  )
}

/**
 * Returns the master key for this database. Creates one only when `mayCreate` and nothing in the database
 * was ever sealed; records the check value on first use; refuses a key that does not match.
 */
export function openMasterKey(sqlite: Database, dataDir: string, fromEnv: string | undefined, mayCreate: boolean): Uint8Array {
  const where = fromEnv ? 'FIXLOOP_MASTER_KEY' : masterKeyFile(dataDir)
  const check = readMeta(sqlite, META.masterKeyCheck)
  let key = readMasterKey(dataDir, fromEnv)
  if (!key) {
    if (check !== undefined || firstSealedValue(sqlite) !== undefined) {
      throw new StartupError(
        `${where} is missing, but this database holds secrets sealed with a master key; a new key could not open them, so none is generated. ` +
          'Copy master.key from the original data dir (or the backup) into the data dir, or set FIXLOOP_MASTER_KEY.',
      )
    }
    if (!mayCreate) throw new StartupError(`${where} is missing; start "fixloop serve" once to create it`)
    key = createMasterKeyFile(dataDir)
  }
  if (check !== undefined) {
    if (keyMatchesCheck(key, check)) return key
    const staged = stagedRekeyKey(dataDir, check)
    if (!staged) throw mismatch(where)
    if (fromEnv) throw new StartupError(`FIXLOOP_MASTER_KEY is the key from before a re-key: ${staged.file} holds the new key, which opens this database; set FIXLOOP_MASTER_KEY to it`)
    // A rekey killed between its commit and the rename of master.key.new: finish it.
    renameSync(staged.file, masterKeyFile(dataDir))
    process.stderr.write(`fixloop: a re-key was interrupted after its commit; ${masterKeyFile(dataDir)} now holds the new key from ${staged.file}\n`)
    return staged.key
  }
  // A database from before the check value existed: prove the key on a sealed value, then record it.
  const sample = firstSealedValue(sqlite)
  if (sample !== undefined) {
    try {
      new SecretBox(key).open(sample)
    } catch {
      throw mismatch(where)
    }
  }
  if (mayCreate) writeMeta(sqlite, META.masterKeyCheck, keyCheckValue(key))
  return key
}

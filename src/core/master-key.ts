/**
 * The master key that seals signing secrets at rest: FIXLOOP_MASTER_KEY when set, otherwise
 * <dataDir>/master.key. Reading never creates; createMasterKeyFile does, and only the start-up check in
 * db/sqlite/master-key-check.ts decides when that is allowed (never while sealed secrets exist).
 */
import { existsSync, readFileSync, writeFileSync, chmodSync } from 'node:fs'
import { join } from 'node:path'
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
import { decodeSecret } from './secrets'
import { ConfigError } from '../config'

export function masterKeyFile(dataDir: string): string {
  return join(dataDir, 'master.key')
}

/** Decodes a master key (hex or base64 of 32 bytes) read from `where`; a wrong length is an error. */
export function parseMasterKey(text: string, where: string): Uint8Array {
  let key: Uint8Array
  try {
    key = decodeSecret(text)
  } catch {
    throw new ConfigError(`${where} must hold 32 bytes as hex (64 characters) or base64 (44), e.g. from "openssl rand -hex 32"`)
  }
  if (key.length !== 32) throw new ConfigError(`${where} must hold 32 bytes as hex (64 characters) or base64 (44), e.g. from "openssl rand -hex 32"`)
  return key
}

/** The configured key, or undefined when neither FIXLOOP_MASTER_KEY nor master.key exists. */
export function readMasterKey(dataDir: string, fromEnv: string | undefined): Uint8Array | undefined {
  if (fromEnv) return parseMasterKey(fromEnv, 'FIXLOOP_MASTER_KEY')
  const file = masterKeyFile(dataDir)
  if (!existsSync(file)) return undefined
  chmodSync(file, 0o600)
  return parseMasterKey(readFileSync(file, 'utf8'), file)
}

/** Creates <dataDir>/master.key (0600) with a new random key; if another process won the race, reads theirs. */
export function createMasterKeyFile(dataDir: string): Uint8Array {
  const file = masterKeyFile(dataDir)
  try {
    writeFileSync(file, randomBytes(32).toString('hex') + '\n', { mode: 0o600, flag: 'wx' })
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e
  }
  return parseMasterKey(readFileSync(file, 'utf8'), file)
}

/** The value stored in the database to recognise the key later: HMAC-SHA256 of a constant, hex. */
export function keyCheckValue(key: Uint8Array): string {
  return createHmac('sha256', key).update('fixloop/master-key-check/v1').digest('hex')
}

/** Constant-time comparison of a key against a stored check value. */
export function keyMatchesCheck(key: Uint8Array, check: string): boolean {
  const a = Buffer.from(keyCheckValue(key), 'hex')
  const b = Buffer.from(check, 'hex')
  return a.length === b.length && timingSafeEqual(a, b)
}

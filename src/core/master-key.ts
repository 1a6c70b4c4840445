/**
 * The master key that seals signing secrets at rest: FIXLOOP_MASTER_KEY when set, otherwise
 * <dataDir>/master.key, created with mode 0600 on first start.
 */
import { existsSync, readFileSync, writeFileSync, chmodSync } from 'node:fs'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { decodeSecret } from './secrets'

export function loadMasterKey(dataDir: string, fromEnv: string | undefined): Uint8Array {
  if (fromEnv) {
    const key = decodeSecret(fromEnv)
    if (key.length !== 32) throw new Error('FIXLOOP_MASTER_KEY must decode to 32 bytes (64 hex characters)')
    return key
  }
  const file = join(dataDir, 'master.key')
  if (!existsSync(file)) {
    // 'wx' fails if another process created it first; then we read theirs.
    try {
      writeFileSync(file, randomBytes(32).toString('hex') + '\n', { mode: 0o600, flag: 'wx' })
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e
    }
  }
  chmodSync(file, 0o600)
  const key = decodeSecret(readFileSync(file, 'utf8'))
  if (key.length !== 32) throw new Error(`${file} must hold 32 bytes as hex`)
  return key
}

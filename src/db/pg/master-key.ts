/**
 * The master key on PostgreSQL: it comes from FIXLOOP_MASTER_KEY only (every node must hold the same key;
 * there is no data dir to keep a key file in), and the database keeps an HMAC of a constant under it
 * (instance_meta.master_key_check), as on SQLite (src/db/sqlite/master-key-check.ts): a wrong key is refused at
 * start instead of answering 500 to every request that opens a secret. Nodes starting at once agree: the
 * first check value written wins, and every node compares its key to that one.
 */
import { SecretBox } from '../../core/crypto'
import { keyCheckValue, keyMatchesCheck, parseMasterKey } from '../../core/master-key'
import { StartupError } from '../../core/startup-error'
import { META } from '../meta-keys'
import { sealedColumns } from '../sealed-columns'
import type { PgQueryable } from './storage'
import { readMetaPg } from './instance-meta'

async function firstSealedValuePg(q: PgQueryable): Promise<string | undefined> {
  for (const c of sealedColumns()) {
    const { rows } = await q.query<{ v: string }>(`SELECT "${c.column}" AS v FROM "${c.table}" WHERE "${c.column}" IS NOT NULL LIMIT 1`)
    if (rows[0]) return rows[0].v
  }
  return undefined
}

const mismatch = () =>
  new StartupError(
    'FIXLOOP_MASTER_KEY is not the key this database\'s secrets were sealed with: every node must use the key the database was set up with ' +
      '(after "fixloop migrate-db", the master.key of the old data dir).',
  )

export async function openMasterKeyPg(q: PgQueryable, fromEnv: string | undefined): Promise<Uint8Array> {
  if (!fromEnv) throw new StartupError('FIXLOOP_MASTER_KEY is required with FIXLOOP_DATABASE_URL (the same key on every node)')
  const key = parseMasterKey(fromEnv, 'FIXLOOP_MASTER_KEY')
  let check = await readMetaPg(q, META.masterKeyCheck)
  if (check === undefined) {
    // A database migrated from SQLite without its check value: prove the key on a sealed value first.
    const sample = await firstSealedValuePg(q)
    if (sample !== undefined) {
      try {
        new SecretBox(key).open(sample)
      } catch {
        throw mismatch()
      }
    }
    await q.query('INSERT INTO instance_meta (key, value, updated_at) VALUES ($1, $2, $3) ON CONFLICT (key) DO NOTHING', [META.masterKeyCheck, keyCheckValue(key), Date.now()])
    check = await readMetaPg(q, META.masterKeyCheck)
  }
  if (check === undefined || !keyMatchesCheck(key, check)) throw mismatch()
  return key
}

/**
 * `fixloop rekey` on PostgreSQL: every sealed value (sealed-columns.ts) re-sealed from the old master key to
 * the new one, and the new check value recorded, in one transaction: every value moves or none does. Rows
 * are locked as they are read, so a node still running cannot write a value sealed with the old key in
 * between (stop every node first: a node keeps its key in memory).
 */
import type { Pool } from 'pg'
import { SecretBox } from '../../core/crypto'
import { keyCheckValue, keyMatchesCheck } from '../../core/master-key'
import { StartupError } from '../../core/startup-error'
import { META } from '../meta-keys'
import { resealValue, sealedColumns } from '../sealed-columns'
import { readMetaPg, writeMetaPg } from './instance-meta'
import { withTransaction } from './transaction'
import { lockKeyExclusivePg } from './key-lock'

/** Returns how many values were re-sealed, per "table.column". */
export async function rekeyPg(pool: Pool, oldKey: Uint8Array, newKey: Uint8Array): Promise<Record<string, number>> {
  const oldBox = new SecretBox(oldKey)
  const newBox = new SecretBox(newKey)
  return withTransaction(pool, async (tx) => {
    // First, so that no CLI command is between its key check and its writes (pg/key-lock.ts).
    await lockKeyExclusivePg(tx)
    const check = await readMetaPg(tx, META.masterKeyCheck)
    if (check !== undefined && !keyMatchesCheck(oldKey, check)) {
      throw new StartupError('--old-key-file is not the key this database was sealed with (its check value does not match); nothing was changed')
    }
    const counts: Record<string, number> = {}
    for (const c of sealedColumns()) {
      const { rows } = await tx.query<{ k: string; v: string }>(`SELECT "${c.key}" AS k, "${c.column}" AS v FROM "${c.table}" WHERE "${c.column}" IS NOT NULL FOR UPDATE`)
      for (const r of rows) await tx.query(`UPDATE "${c.table}" SET "${c.column}" = $1 WHERE "${c.key}" = $2`, [resealValue(c, r.k, r.v, oldBox, newBox), r.k])
      counts[`${c.table}.${c.column}`] = rows.length
    }
    await writeMetaPg(tx, META.masterKeyCheck, keyCheckValue(newKey))
    return counts
  })
}

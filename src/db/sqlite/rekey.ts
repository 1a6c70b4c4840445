/**
 * Re-seals every sealed secret (every column in sealed-columns.ts) from the old master key to the new one
 * in one transaction, and records the new key's check value. Either every value moves or none does.
 */
import type { Database } from 'bun:sqlite'
import { SecretBox } from '../../core/crypto'
import { keyCheckValue, keyMatchesCheck } from '../../core/master-key'
import { StartupError } from '../../core/startup-error'
import { META, readMeta, writeMeta } from './instance-meta'
import { resealValue, sealedColumns } from '../sealed-columns'

const tableExists = (sqlite: Database, table: string) =>
  !!sqlite.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(table)

/** Returns how many values were re-sealed, per "table.column". */
export function rekey(sqlite: Database, oldKey: Uint8Array, newKey: Uint8Array): Record<string, number> {
  const check = readMeta(sqlite, META.masterKeyCheck)
  if (check !== undefined && !keyMatchesCheck(oldKey, check)) {
    throw new StartupError('--old-key-file is not the key this database was sealed with (its check value does not match); nothing was changed')
  }
  const oldBox = new SecretBox(oldKey)
  const newBox = new SecretBox(newKey)
  const counts: Record<string, number> = {}
  sqlite
    .transaction(() => {
      for (const c of sealedColumns()) {
        if (!tableExists(sqlite, c.table)) continue
        const rows = sqlite.query(`SELECT "${c.key}" AS k, "${c.column}" AS v FROM "${c.table}" WHERE "${c.column}" IS NOT NULL`).all() as { k: string; v: string }[]
        const update = sqlite.query(`UPDATE "${c.table}" SET "${c.column}" = ? WHERE "${c.key}" = ?`)
        for (const r of rows) update.run(resealValue(c, r.k, r.v, oldBox, newBox), r.k)
        counts[`${c.table}.${c.column}`] = rows.length
      }
      writeMeta(sqlite, META.masterKeyCheck, keyCheckValue(newKey))
    })
    .immediate()
  return counts
}

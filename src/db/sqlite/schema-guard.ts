/**
 * Refuses a database migrated by a newer fixloop (it has migrations this binary does not know): running
 * older code over a newer schema corrupts data quietly. Names both versions, as Gitea does.
 */
import type { Database } from 'bun:sqlite'
import { MIGRATIONS, type Migration } from '../migrations'
import { META, readMeta } from './instance-meta'
import { StartupError } from '../../core/startup-error'
import { VERSION } from '../../version'

/** Applied migrations this binary does not know, oldest first. */
export function unknownMigrations(sqlite: Database, list: readonly Migration[] = MIGRATIONS): string[] {
  const has = sqlite.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '__migrations'").get()
  if (!has) return []
  const known = new Set(list.map((m) => m.name))
  const rows = sqlite.query('SELECT name FROM __migrations ORDER BY name').all() as { name: string }[]
  return rows.map((r) => r.name).filter((n) => !known.has(n))
}

export function refuseNewerSchema(sqlite: Database, file: string, list: readonly Migration[] = MIGRATIONS): void {
  const unknown = unknownMigrations(sqlite, list)
  if (unknown.length === 0) return
  const by = readMeta(sqlite, META.migratedBy)
  throw new StartupError(
    // Two builds of one version (no release between them) are told apart by their migrations, not the number.
    `the database ${file} was migrated by ${by && by !== VERSION ? `fixloop ${by}` : 'a newer build of fixloop'}, but this is fixloop ${VERSION} ` +
      `(it does not know migration ${unknown.join(', ')}; the newest it knows is ${list.at(-1)?.name}). ` +
      'Run the newer fixloop, or restore a backup taken before the upgrade (docs/operations.md, "Upgrade and downgrade").',
  )
}

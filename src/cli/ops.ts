/** `fixloop migrate` and `fixloop backup`: operations on the data dir. */
import { existsSync, mkdirSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { loadConfig } from '../config'
import { createContext } from '../context'
import { openDatabase } from '../db/client'
import { applyMigrations } from '../db/migrate'
import { output, parseFlags, UsageError } from './args'

export const MIGRATE_HELP = `Usage: fixloop migrate [--data-dir DIR] [--json]
Applies the embedded database migrations (serve also does this before the port opens).`
export const BACKUP_HELP = `Usage: fixloop backup --out FILE [--data-dir DIR] [--json]
Writes a consistent copy of the database while the server runs (SQLite VACUUM INTO).
Back up master.key too, separately: without it the signing secrets in the copy cannot be read.`

export function runMigrate(argv: string[]): void {
  const { values } = parseFlags(argv, {})
  if (values.help) return void process.stdout.write(MIGRATE_HELP + '\n')
  const config = loadConfig({ dataDir: values['data-dir'] })
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 })
  const { sqlite } = openDatabase(join(config.dataDir, 'fixloop.db'))
  try {
    output({ applied: applyMigrations(sqlite) }, values.json)
  } finally {
    sqlite.close()
  }
}

export function runBackup(argv: string[]): void {
  const { values } = parseFlags(argv, { out: { type: 'string' } })
  if (values.help) return void process.stdout.write(BACKUP_HELP + '\n')
  if (!values.out) throw new UsageError('missing --out FILE')
  const out = resolve(values.out)
  if (existsSync(out)) throw new UsageError(`${out} already exists; choose a new file`)
  const ctx = createContext(loadConfig({ dataDir: values['data-dir'] }))
  try {
    ctx.sqlite.query('VACUUM INTO ?').run(out)
    output({ backup: out }, values.json)
  } finally {
    ctx.sqlite.close()
  }
}
